package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The binary links no test code of hotpair: test helpers live in packages
// that only tests import (internal/zktest, internal/yamlconftest,
// internal/kafkatest, internal/changestest, internal/testbin). Package
// testing itself is still linked, because goka's non-test files import it
// for their mocks; those are the only importers allowed, so a new one fails
// here.
func TestBinaryLinksNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 50 {
		t.Fatalf("go list -deps listed only %d packages:\n%s", len(lines), out)
	}
	goka := []string{"github.com/lovoo/goka", "github.com/lovoo/goka/storage"}
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, ":")
		if strings.HasPrefix(pkg, "github.com/hotpair/hotpair/") && strings.HasSuffix(pkg, "test") {
			t.Errorf("the binary links the test helper package %s", pkg)
		}
		for _, imp := range strings.Fields(imports) {
			if (imp == "testing" || strings.HasPrefix(imp, "testing/")) && !slices.Contains(goka, pkg) {
				t.Errorf("%s imports %s in non-test code: move that code to a package only tests import", pkg, imp)
			}
		}
	}
}
