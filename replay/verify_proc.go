package replay

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hotpair/hotpair/internal/kafka"
)

// pipelineProc is one `hotpair pipeline` process that verify runs.
type pipelineProc struct {
	name     string // "baseline" or "candidate"
	bin      string
	brokers  []string
	httpAddr string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
}

// pipelineArgs are the arguments verify gives each pipeline: one side of
// all stages on its own cluster, with state, logs and /metrics of its own.
func pipelineArgs(o *VerifyOptions, brokers []string, name, httpAddr, stateDir string, hosted bool) []string {
	args := []string{"pipeline"}
	if o.PipelineConfig != "" {
		args = append(args, "--config", o.PipelineConfig)
	}
	args = append(args, "--side", "primary", "--brokers", strings.Join(brokers, ","),
		"--instance", name, "--http", httpAddr, "--storage", "leveldb", "--state-dir", stateDir,
		"--partitions", strconv.Itoa(int(o.Partitions)))
	if o.TopicPrefix != "" {
		args = append(args, "--topic-prefix", o.TopicPrefix)
	}
	if hosted {
		args = append(args, "--replication", "1") // verify's own kfake clusters have one broker
	} else {
		args = append(args, kafka.FlagArgs(o.Kafka)...)
	}
	return args
}

func startPipeline(o *VerifyOptions, name, bin string, brokers []string, workDir string, hosted bool) (*pipelineProc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	p := &pipelineProc{name: name, bin: bin, brokers: brokers, httpAddr: addr,
		logPath: filepath.Join(workDir, name+".log"), exited: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: %w", err)
	}
	p.cmd = exec.Command(bin, pipelineArgs(o, brokers, name, addr, filepath.Join(workDir, name+"-state"), hosted)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("replay: verify: starting the %s pipeline %s: %w", name, bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago (the pipeline listens on it; a clash fails its start loudly).
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("replay: verify: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// alive returns nil while the process runs, else how it ended and the end of its log.
func (p *pipelineProc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the %s pipeline exited (%v); last log lines:\n%s", p.name, p.waitErr, p.logTail(15))
	default:
		return nil
	}
}

// stop sends SIGTERM and waits up to grace before killing the process.
func (p *pipelineProc) stop(grace time.Duration) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// peakRSS returns the process's peak resident memory (VmHWM) from /proc;
// false where /proc is not there (not Linux) or the process is gone.
func (p *pipelineProc) peakRSS() (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

func (p *pipelineProc) logTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
