package childproc

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child that ends by itself: Alive says how, with its log's end.
func TestAliveReportsTheEndWithTheLog(t *testing.T) {
	p, err := Start("test child", "/bin/sh", filepath.Join(t.TempDir(), "child.log"), "-c", "echo started; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not end")
	}
	err = p.Alive()
	if err == nil || !strings.Contains(err.Error(), "the test child exited (exit status 3)") || !strings.Contains(err.Error(), "started") {
		t.Fatalf("an ended child: %v", err)
	}
}

// A running child is alive until Stop, which returns once it has ended.
func TestStopEndsARunningChild(t *testing.T) {
	p, err := Start("test child", "/bin/sh", filepath.Join(t.TempDir(), "child.log"), "-c", "exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Alive(); err != nil {
		t.Fatalf("a running child: %v", err)
	}
	p.Stop(5 * time.Second)
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the child ended")
	}
	if _, err := Start("missing", filepath.Join(t.TempDir(), "nothing"), filepath.Join(t.TempDir(), "log")); err == nil {
		t.Fatal("a missing binary started")
	}
}
