package monitor

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/zktest"
)

// On clusters with TLS and SASL, the monitor configured with the CA and
// password files reads both sides' health samples and decides; a wrong
// password stops it at start, naming the cluster, the broker and the
// mechanism, and the error shows no password.
func TestMonitorOnSecuredClusters(t *testing.T) {
	addr := zktest.Addr(t)
	p, s := startSecureClusters(t)
	newFleet(t, p)
	newFleet(t, s)
	t.Run("right credentials", func(t *testing.T) {
		paths := testRoot(t)
		startReplica(t, testConfig("m1", addr, paths, p, s))
		w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)
		sel := w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)
		if !sel.Sides[contract.Primary].Healthy || !sel.Sides[contract.Standby].Healthy {
			t.Fatalf("a side read as unhealthy through TLS and SASL: %+v", sel.Sides)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		bad := s
		bad.sec.SASL.PasswordFile = t.TempDir() + "/wrong"
		if err := os.WriteFile(bad.sec.SASL.PasswordFile, []byte("not-the-password\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := New(Options{Config: testConfig("m2", addr, testRoot(t), p, bad), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = m.Run(ctx)
		if !errors.Is(err, kafka.ErrAuth) || ctx.Err() != nil {
			t.Fatalf("Run: %v, want ErrAuth at start", err)
		}
		for _, want := range []string{"standby", s.brokers[0], "SCRAM-SHA-256"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v lacks %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "not-the-password") {
			t.Errorf("the error shows the password: %v", err)
		}
	})
}
