package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hotpair/hotpair/internal/childproc"
	"github.com/hotpair/hotpair/internal/kafka"
)

// pipelineProc is one `hotpair pipeline` process that verify runs.
type pipelineProc struct {
	*childproc.Proc
	name     string // "baseline" or "candidate"
	brokers  []string
	httpAddr string
	logPath  string
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
	addr, err := childproc.FreeLoopbackAddr()
	if err != nil {
		return nil, fmt.Errorf("replay: verify: %w", err)
	}
	logPath := filepath.Join(workDir, name+".log")
	_ = os.Remove(logPath)
	proc, err := childproc.Start(name+" pipeline", bin, logPath, pipelineArgs(o, brokers, name, addr, filepath.Join(workDir, name+"-state"), hosted)...)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: %w", err)
	}
	return &pipelineProc{Proc: proc, name: name, brokers: brokers, httpAddr: addr, logPath: logPath}, nil
}

// alive returns nil while the process runs, else how it ended and the end of its log.
func (p *pipelineProc) alive() error { return p.Alive() }

// stop sends SIGTERM and waits up to grace before killing the process.
func (p *pipelineProc) stop(grace time.Duration) {
	if p != nil {
		p.Stop(grace)
	}
}

// peakRSS returns the process's peak resident memory (VmHWM).
func (p *pipelineProc) peakRSS() (int64, bool) { return p.PeakRSS() }
