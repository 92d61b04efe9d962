package zkserver

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestStartKillRestartKeepsData(t *testing.T) {
	s := StartForTest(t)
	c, _, err := zk.Connect([]string{s.Addr()}, 10*time.Second, zk.WithLogger(zk.DefaultLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/kept", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if s.Running() {
		t.Fatal("server still running after Kill")
	}
	if ok, _ := FourLetter(s.Addr(), "ruok", 200*time.Millisecond); ok == "imok" {
		t.Fatal("server answers after Kill")
	}
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _, err := c.Get("/kept")
		if err == nil {
			if string(b) != "x" {
				t.Fatalf("got %q after restart", b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("znode not readable after restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
