// Package yamlconftest checks strict configs in tests. It is imported by
// tests only, so the binary never links package testing.
package yamlconftest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckBadConfigs is the test of a strict config: every file matching glob
// (one testdata/bad-*.yml per rejected case, at least min of them) must be
// rejected by load with an error containing the text of the file's first
// line, "# want: <text>".
func CheckBadConfigs(t *testing.T, glob string, min int, load func(path string) error) {
	t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) < min {
		t.Fatalf("only %d files match %s, want at least %d", len(files), glob, min)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s does not start with '# want: <error text>'", f)
			}
			err = load(f)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want an error containing %q", err, want)
			}
		})
	}
}
