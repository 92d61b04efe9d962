//go:build !linux

package childproc

import "os/exec"

// dieWithParent is Linux-only (Pdeathsig); elsewhere a child outlives a
// parent killed hard.
func dieWithParent(*exec.Cmd) {}
