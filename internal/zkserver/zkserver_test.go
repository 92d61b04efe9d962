package zkserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/internal/zkserver"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

func TestStartKillRestartKeepsData(t *testing.T) {
	s := zktest.Start(t)
	states := make(chan zk.State, 64)
	sess := zktest.Session(t, zkutil.Options{Servers: []string{s.Addr()}, SessionTimeout: 10 * time.Second,
		OnState: func(ev zk.Event) { states <- ev.State }})
	c := sess.Conn()
	if _, err := c.Create("/kept", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if s.Running() {
		t.Fatal("server still running after Kill")
	}
	if ok, _ := zkserver.FourLetter(s.Addr(), "ruok", 200*time.Millisecond); ok == "imok" {
		t.Fatal("server answers after Kill")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	awaitState(ctx, t, states, zk.StateDisconnected)
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	awaitState(ctx, t, states, zk.StateHasSession)
	b, _, err := c.Get("/kept")
	if err != nil || string(b) != "x" {
		t.Fatalf("got %q, %v after restart, want the znode kept", b, err)
	}
}

// awaitState waits for the session to report want.
func awaitState(ctx context.Context, t *testing.T, states <-chan zk.State, want zk.State) {
	t.Helper()
	for {
		select {
		case st := <-states:
			if st == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("the session did not reach %s", want)
		}
	}
}
