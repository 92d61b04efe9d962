// Package goldentest holds wire formats to golden files in tests. It is
// imported by tests only, so the binary never links package testing.
package goldentest

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Check compares got with the golden file (a trailing newline there is
// ignored); go test -args -update rewrites the file.
func Check(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
		t.Errorf("%s:\n got %s\nwant %s", file, got, want)
	}
}
