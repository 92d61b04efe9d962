package childproc

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the child when this process dies,
// however it dies: a sandbox killed hard leaves no dark pipeline behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
