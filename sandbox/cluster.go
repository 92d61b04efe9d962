package sandbox

import (
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// cluster is one side's (or the dark target's) embedded Kafka cluster (kfake, the franz-go Kafka
// protocol implementation). It keeps its data in a directory, so that a
// stop-cluster fault can take it away and bring it back on the same port
// with every topic, record and committed offset.
type cluster struct {
	side string
	dir  string
	port int
	opts []kfake.Opt // TLS and SASL, unless insecure

	mu sync.Mutex
	c  *kfake.Cluster
}

func startCluster(side, dir string, opts ...kfake.Opt) (*cluster, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cl := &cluster{side: side, dir: dir, port: port, opts: opts}
	if err := cl.start(); err != nil {
		return nil, err
	}
	return cl, nil
}

func (cl *cluster) start() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.c != nil {
		return nil
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(cl.port), kfake.DataDir(cl.dir),
		kfake.ClusterID("hotpair-sandbox-" + cl.side)}, cl.opts...)...)
	if err != nil {
		return fmt.Errorf("sandbox: starting the %s cluster: %w", cl.side, err)
	}
	cl.c = c
	return nil
}

// stop closes the cluster: its port refuses connections until start.
func (cl *cluster) stop() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.c != nil {
		cl.c.Close()
		cl.c = nil
	}
}

func (cl *cluster) running() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.c != nil
}

// brokers is the cluster's address, the same across restarts.
func (cl *cluster) brokers() []string {
	return []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(cl.port))}
}
