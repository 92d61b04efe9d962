// Package testbin gives tests the path of a hotpair binary, for tests that
// must kill a real process: $HOTPAIR_BIN when the test command built one,
// else a binary built once per test process from this module.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Env names the variable with a prebuilt binary.
const Env = "HOTPAIR_BIN"

var (
	once     sync.Once
	built    string
	buildErr error
)

// Hotpair returns the path of a hotpair binary.
func Hotpair(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(Env); p != "" {
		return p
	}
	once.Do(func() {
		dir, err := os.MkdirTemp("", "hotpair-bin-")
		if err != nil {
			buildErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		built = filepath.Join(dir, "hotpair")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/hotpair")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("building hotpair: %v", buildErr)
	}
	return built
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }
