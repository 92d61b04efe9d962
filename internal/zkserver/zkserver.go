// Package zkserver starts and stops the real Apache ZooKeeper server from the
// OS packages (Debian: apt-get install zookeeper) as a child process on a free
// loopback port. The sandbox and the integration tests use it; production
// points at the operator's ensemble instead.
package zkserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// InstallHint is the command that installs what Start needs on Debian.
const InstallHint = "apt-get install -y zookeeper default-jre-headless"

// ErrNotInstalled is returned by Start when java or the ZooKeeper jar is missing.
var ErrNotInstalled = errors.New("zkserver: Apache ZooKeeper is not installed (run: " + InstallHint + ")")

// DefaultClasspath is where Debian's zookeeper package puts the server; its
// manifest names every jar it needs. HOTPAIR_ZK_CLASSPATH overrides it.
const DefaultClasspath = "/usr/share/java/zookeeper.jar"

// Options configure a server. The zero value is a server in a new temporary
// directory on a free loopback port.
type Options struct {
	// Dir holds the data and the config; a temporary directory, removed by
	// Stop, when empty.
	Dir string
	// Port to listen on, 127.0.0.1 only; a free port when 0.
	Port int
	// TickTime is ZooKeeper's basic time unit; sessions time out after 2 to 20
	// ticks unless the client asks for more (maxSessionTimeout is 60 s).
	// Default 500ms.
	TickTime time.Duration
	// StartTimeout bounds how long Start waits for the server to answer. Default 30s.
	StartTimeout time.Duration
}

// Server is one running ZooKeeper server process.
type Server struct {
	opts    Options
	tempDir bool
	addr    string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
}

// Installed returns nil when the server can be started, or ErrNotInstalled.
func Installed() error {
	if _, err := exec.LookPath("java"); err != nil {
		return ErrNotInstalled
	}
	for _, p := range strings.Split(classpath(), ":") {
		if _, err := os.Stat(p); err != nil && strings.HasSuffix(p, ".jar") {
			return ErrNotInstalled
		}
	}
	return nil
}

func classpath() string {
	if cp := os.Getenv("HOTPAIR_ZK_CLASSPATH"); cp != "" {
		return cp
	}
	return DefaultClasspath
}

// Start writes a config and starts the server, returning once it answers.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := Installed(); err != nil {
		return nil, err
	}
	if opts.TickTime == 0 {
		opts.TickTime = 500 * time.Millisecond
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	s := &Server{opts: opts}
	if s.opts.Dir == "" {
		d, err := os.MkdirTemp("", "hotpair-zk-")
		if err != nil {
			return nil, fmt.Errorf("zkserver: %w", err)
		}
		s.opts.Dir, s.tempDir = d, true
	}
	if s.opts.Port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		s.opts.Port = p
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.opts.Port))
	if err := s.writeConfig(); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Addr is the client address, host:port on 127.0.0.1.
func (s *Server) Addr() string { return s.addr }

// Dir is the server's data directory.
func (s *Server) Dir() string { return s.opts.Dir }

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) writeConfig() error {
	tick := s.opts.TickTime.Milliseconds()
	cfg := fmt.Sprintf(`tickTime=%d
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr,cons,stat
`, tick, filepath.Join(s.opts.Dir, "data"), s.opts.Port)
	if err := os.MkdirAll(filepath.Join(s.opts.Dir, "data"), 0o755); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	return os.WriteFile(filepath.Join(s.opts.Dir, "zoo.cfg"), []byte(cfg), 0o644)
}

func (s *Server) start(ctx context.Context) error {
	s.logPath = filepath.Join(s.opts.Dir, "server.log")
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command("java",
		"-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-cp", classpath(),
		"org.apache.zookeeper.server.ZooKeeperServerMain",
		filepath.Join(s.opts.Dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("zkserver: starting java: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	for {
		// ruok answers before the server serves; srvr names a Mode only then.
		if out, _ := FourLetter(s.addr, "srvr", time.Second); strings.Contains(out, "Mode:") {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("zkserver: server exited during start; log %s: %s", s.logPath, tail(s.logPath))
		case <-ctx.Done():
			return fmt.Errorf("zkserver: server did not answer on %s within %s; log %s", s.addr, s.opts.StartTimeout, s.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop kills the server (SIGTERM, then SIGKILL after 5 s) and, if Start made
// the directory, removes it. Stop is idempotent.
func (s *Server) Stop() error {
	s.kill()
	if s.tempDir {
		return os.RemoveAll(s.opts.Dir)
	}
	return nil
}

// Kill stops the process but keeps the data, so Restart brings the same
// server back on the same port with the same znodes (sessions that outlive
// the outage survive, as with a real ensemble).
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// Restart starts a killed server again on the same port and data directory.
func (s *Server) Restart(ctx context.Context) error {
	if s.Running() {
		return nil
	}
	return s.start(ctx)
}

// RestartEmpty starts a killed server again on the same port with no data,
// as an ensemble rebuilt after losing its disks: every znode and session is
// gone, and its transaction ids start again from the beginning.
func (s *Server) RestartEmpty(ctx context.Context) error {
	if s.Running() {
		return errors.New("zkserver: RestartEmpty needs a killed server")
	}
	data := filepath.Join(s.opts.Dir, "data")
	if err := os.RemoveAll(data); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	return s.start(ctx)
}

// FourLetter sends a ZooKeeper four-letter command and returns the answer.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String()), nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("zkserver: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
