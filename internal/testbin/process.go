package testbin

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Process is a hotpair child process of a test: killed at the end of the
// test, its output logged when the test failed.
type Process struct {
	Out  Buffer
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs the hotpair binary with args.
func Start(t testing.TB, args ...string) *Process {
	t.Helper()
	p := &Process{done: make(chan struct{})}
	p.cmd = exec.Command(Hotpair(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.Out, &p.Out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("hotpair %s:\n%s", strings.Join(args, " "), tail(p.Out.String(), 4000))
		}
	})
	return p
}

// Kill sends SIGKILL — no shutdown, no group leave, no offset commit, no
// flush — and waits for the process to end.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
