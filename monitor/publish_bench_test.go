package monitor

import (
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// BenchmarkPublicationLatency measures, on loopback, how long a selection
// takes from the writer's call to a watcher on another session seeing it:
// the fenced multi the monitor uses, a plain versioned set for comparison,
// and, as the baseline, one GetW round trip of the watcher's session.
// Reported as p50/p99 in microseconds.
func BenchmarkPublicationLatency(b *testing.B) {
	addr := zktest.Addr(b)
	paths := testRoot(b)
	writer := testSession(b, addr, nil)
	watcher := testConn(b, addr, nil)
	if err := ensureLayout(writer.conn, paths, ACLPolicy{}, nil); err != nil {
		b.Fatal(err)
	}
	node, err := writer.conn.CreateProtectedEphemeralSequential(paths.LeaderDir()+"/n_", nil, zkutil.OpenACL())
	if err != nil {
		b.Fatal(err)
	}
	sel := contract.Selection{V: 1, Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1,
		Reason: "benchmark", Sides: map[contract.Side]contract.SideState{contract.Primary: {Healthy: true, QPS: 800}, contract.Standby: {Healthy: true, QPS: 800}}}
	version, err := writeSelection(writer.conn, paths, node, sel, absent, zkutil.OpenACL())
	if err != nil {
		b.Fatal(err)
	}
	p := paths.Selection(contract.ServiceBudget)

	// seen times one write: write, then wait for the watch to fire.
	seen := func(b *testing.B, write func() error) time.Duration {
		_, _, ch, err := watcher.GetW(p)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := write(); err != nil {
			b.Fatal(err)
		}
		if ev := <-ch; ev.Type != zk.EventNodeDataChanged {
			b.Fatalf("watch event %v", ev)
		}
		return time.Since(start)
	}
	var baseP50 float64
	report := func(b *testing.B, lat []time.Duration) float64 {
		slices.Sort(lat)
		q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
		b.ReportMetric(q(0.50), "p50-µs")
		b.ReportMetric(q(0.99), "p99-µs")
		if baseP50 > 0 {
			b.ReportMetric(q(0.50)/baseP50, "p50-x-baseline")
		}
		return q(0.50)
	}

	b.Run("baseline=GetW-round-trip", func(b *testing.B) {
		baseP50 = 0
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if _, _, _, err := watcher.GetW(p); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		baseP50 = report(b, lat)
	})
	b.Run("plain-set-to-watcher", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			sel.Epoch++
			data, _ := contract.Encode(sel)
			lat = append(lat, seen(b, func() error {
				st, err := writer.conn.Set(p, data, version)
				if err == nil {
					version = st.Version
				}
				return err
			}))
		}
		report(b, lat)
	})
	b.Run("fenced-multi-to-watcher", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			sel.Epoch++
			lat = append(lat, seen(b, func() error {
				v, err := writeSelection(writer.conn, paths, node, sel, version, nil)
				version = v
				return err
			}))
		}
		report(b, lat)
	})
}
