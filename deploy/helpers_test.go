package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// repo is the repository root, relative to this package.
const repo = ".."

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// hotpairBin builds the hotpair binary once per test run, as `go build`
// does (HOTPAIR_BIN, set by scripts/test.sh, is used when present).
func hotpairBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("HOTPAIR_BIN"); b != "" {
		return b
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hotpair-deploy-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "hotpair")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/hotpair")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build ./cmd/hotpair: %v\n%s", binErr, binPath)
	}
	return binPath
}

// configCheck runs `hotpair config check ARGS...` and fails the test with
// its output unless it accepts everything.
func configCheck(t *testing.T, what string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(hotpairBin(t), append([]string{"config", "check"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("%s: hotpair config check %s: %v\n%s", what, strings.Join(args, " "), err, out.String())
	}
}

// mountedTree lays out files at their container paths under a temporary
// root and rewrites those paths in command lines and in the files
// themselves, so the binary checks exactly what a container would see.
type mountedTree struct {
	root  string
	paths []string // container paths, longest first
}

func newMountedTree(t *testing.T) *mountedTree { return &mountedTree{root: t.TempDir()} }

// add puts content at the container path p.
func (m *mountedTree) add(t *testing.T, p string, content []byte) {
	t.Helper()
	dst := filepath.Join(m.root, p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, content, 0o644); err != nil {
		t.Fatal(err)
	}
	m.paths = append(m.paths, p)
}

// rewrite maps every mounted container path in s to its place in the tree.
func (m *mountedTree) rewrite(s string) string {
	for _, p := range m.paths {
		s = strings.ReplaceAll(s, p, filepath.Join(m.root, p))
	}
	return s
}

// finish rewrites the mounted files' own references to mounted paths (a
// config naming a mounted secret file).
func (m *mountedTree) finish(t *testing.T) {
	t.Helper()
	for _, p := range m.paths {
		f := filepath.Join(m.root, p)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(m.rewrite(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
