package monitor

import (
	"errors"
	"net"
	"sync"
	"time"
)

// cutDialer dials ZooKeeper over TCP and remembers its connections so that
// cut can drop them all and refuse new ones: Kill, a crash, leaves the
// session to expire on the server.
type cutDialer struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

var errCut = errors.New("monitor: connection cut (replica killed)")

func (d *cutDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errCut
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	// Keep only live connections: the library opens one at a time.
	d.conns = append(d.conns[:0], c)
	return c, nil
}

func (d *cutDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		_ = c.Close()
	}
	d.conns = nil
}
