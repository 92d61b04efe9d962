package selector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/changestest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/internal/zkutil"
)

// testRoot returns a root path of the test's own on a shared server.
func testRoot(t testing.TB) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("/selector-test/%s-%d", name, rand.Uint64())
}

// zkWriter is a plain session that writes selections as the monitor does.
type zkWriter struct {
	t     testing.TB
	conn  *zk.Conn
	paths contract.Paths
}

func newZKWriter(t testing.TB, addr, root string) *zkWriter {
	t.Helper()
	conn := zktest.Conn(t, addr, nil)
	w := &zkWriter{t: t, conn: conn, paths: contract.NewPaths(root)}
	if err := zkutil.EnsurePath(conn, w.paths.SelectionDir(), zkutil.OpenACL()); err != nil {
		t.Fatal(err)
	}
	return w
}

// selection is the document the monitor would write.
func selection(svc contract.Service, side contract.Side, epoch int64) contract.Selection {
	now := time.Now().UTC()
	return contract.Selection{
		V: contract.ZNodeVersion, Service: svc, Active: side, Preferred: contract.Primary,
		Epoch: epoch, DecidedAt: now, Reason: fmt.Sprintf("test sets %s", side),
		Sides: map[contract.Side]contract.SideState{
			contract.Primary: {Healthy: side == contract.Primary, HealthySince: &now},
			contract.Standby: {Healthy: true, HealthySince: &now},
		},
	}
}

// set writes a selection of svc.
func (w *zkWriter) set(svc contract.Service, side contract.Side, epoch int64) {
	w.t.Helper()
	b, err := contract.Encode(selection(svc, side, epoch))
	if err != nil {
		w.t.Fatal(err)
	}
	w.setRaw(svc, b)
}

// setRaw writes data to svc's selection znode, creating it when missing.
func (w *zkWriter) setRaw(svc contract.Service, data []byte) {
	w.t.Helper()
	p := w.paths.Selection(svc)
	_, err := w.conn.Set(p, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = w.conn.Create(p, data, 0, zkutil.OpenACL())
	}
	if err != nil {
		w.t.Fatalf("writing %s: %v", p, err)
	}
}

func (w *zkWriter) remove(svc contract.Service) {
	w.t.Helper()
	if err := w.conn.Delete(w.paths.Selection(svc), -1); err != nil {
		w.t.Fatal(err)
	}
}

// runSelector starts sel.Run and stops it at cleanup.
func runSelector(t testing.TB, sel *Selector) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sel.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// newTestSelector returns a running selector of addr under root with a
// registry of its own.
func newTestSelector(t testing.TB, addr, root string, opts ...Option) (*Selector, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	sel, err := New([]string{addr}, append([]Option{WithRoot(root), WithRegisterer(reg), WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	runSelector(t, sel)
	return sel, reg
}

// waitUntil waits until cond holds, checking it again at every change the
// component reports (a Selector's or Views' changes), or fails after timeout.
func waitUntil(t testing.TB, changes *changes.Feed, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	changestest.WaitFor(t, changes, timeout, what, cond)
}

// manualClock is a clock that moves only when the test says.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// metricValue returns the value of the series name{labels} in reg (NaN-free:
// fails the test when there is no such series).
func metricValue(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, ok := metricvalue.Get(reg, name, labels...)
	if !ok {
		t.Fatalf("no series %s%v", name, labels)
	}
	return v
}

// tcpProxy forwards loopback connections to a target; Cut drops every
// connection and refuses new ones until Restore, as a network partition
// between one client and the server would.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, u); u.Close(); c.Close() }()
	}
}

// Cut closes every forwarded connection and refuses new ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func itoa(i int) string { return fmt.Sprint(i) }
