package main

import (
	"os/exec"
	"regexp"
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

// The read side and the decision core link no streams stack: the selector
// (embedded in every ads server and retriever) and monitor/core (the pure
// decision core) import the contract, never the pipeline, so they link no
// goka, sarama, goleveldb or statestore; the core links no Kafka or
// ZooKeeper client either; the contract itself only the standard library.
func TestReadSideAndCoreLinkNoStreamsStack(t *testing.T) {
	const mod = "github.com/hotpair/hotpair/"
	streams := []string{"github.com/lovoo/goka", "github.com/IBM/sarama", "github.com/syndtr/goleveldb", mod + "statestore", mod + "pipeline"}
	clients := []string{"github.com/twmb/franz-go", "github.com/go-zookeeper/zk"}
	for _, tc := range []struct {
		pkg       string
		forbidden []string
	}{
		{"selector", streams},
		{"monitor/core", append(streams, clients...)},
		{"contract", append(append(streams, clients...), "github.com/", "gopkg.in/", mod+"internal")},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", mod+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, mod+tc.pkg) {
			t.Fatalf("go list -deps %s does not list the package itself:\n%s", tc.pkg, out)
		}
		for _, dep := range deps {
			for _, f := range tc.forbidden {
				if dep != mod+tc.pkg && strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s", tc.pkg, dep)
				}
			}
		}
	}
}

// Every exported API of the public packages takes and returns only types a
// program outside this module can name: no internal package's type appears
// in their documentation (go doc -all lists every exported declaration).
func TestPublicAPIsNameNoInternalTypes(t *testing.T) {
	const mod = "github.com/hotpair/hotpair/"
	out, err := exec.Command("go", "list", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var public, internal []string
	for _, p := range strings.Fields(string(out)) {
		switch rel := strings.TrimPrefix(p, mod); {
		case strings.HasPrefix(rel, "internal/"):
			internal = append(internal, rel[strings.LastIndex(rel, "/")+1:])
		case strings.HasPrefix(rel, "cmd/") || rel == "integration":
		default:
			public = append(public, p)
		}
	}
	if len(public) < 10 || len(internal) < 10 {
		t.Fatalf("go list found %d public and %d internal packages", len(public), len(internal))
	}
	uses := regexp.MustCompile(`\b(` + strings.Join(internal, "|") + `)\.[A-Z]\w*`)
	for _, p := range public {
		doc, err := exec.Command("go", "doc", "-all", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc %s: %v\n%s", p, err, doc)
		}
		for _, line := range strings.Split(string(doc), "\n") {
			if code := strings.TrimSpace(line); !strings.HasPrefix(code, "//") && uses.MatchString(code) {
				t.Errorf("%s exports an internal type: %s", p, code)
			}
		}
	}
}
