// Package childproc runs a hotpair binary as a child process with its
// output in a log file: what `replay verify` does with a baseline and a
// candidate build, and the sandbox with a dark pipeline. A child process is
// a real process (its own memory, CPU, Kafka clients), the way a candidate
// build runs in production.
package childproc

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is one running child process.
type Proc struct {
	// Name says which process it is in errors ("the candidate pipeline").
	Name string
	// LogPath is the file that holds its stdout and stderr.
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Start runs bin with args, its output appended to logPath.
func Start(name, bin, logPath string, args ...string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the %s (%s): %w", name, bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed when the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Alive returns nil while the process runs, else how it ended and the end
// of its log.
func (p *Proc) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the %s exited (%v); last log lines:\n%s", p.Name, p.waitErr, p.LogTail(15))
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits up to grace before killing the process.
func (p *Proc) Stop(grace time.Duration) {
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

// PeakRSS returns the process's peak resident memory (VmHWM) from /proc;
// false where /proc is not there (not Linux) or the process is gone.
func (p *Proc) PeakRSS() (int64, bool) {
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

// LogTail returns the last n lines of the process's log.
func (p *Proc) LogTail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FreeLoopbackAddr returns a loopback address with a port that was free a
// moment ago (a child listens on it; a clash fails its start loudly).
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
