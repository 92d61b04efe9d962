package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Candidate builds the hotpair binary from a copy of this module's packages
// that cmd/hotpair needs, with each patch applied to the copy: a candidate
// build with a deliberate change, for the tests of replay verify and the dark
// canary.
func Candidate(t testing.TB, patches ...Patch) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..")
	list := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}} {{.Dir}}{{end}}", "./cmd/hotpair")
	list.Dir = src
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	src, err = filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	copyDir := func(from, to string) {
		entries, err := os.ReadDir(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				copyFile(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, dir, _ := strings.Cut(line, " ")
		if mod == "github.com/hotpair/hotpair" {
			rel, err := filepath.Rel(src, dir)
			if err != nil {
				t.Fatal(err)
			}
			copyDir(dir, filepath.Join(dst, rel))
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(dst, f))
	}
	for _, p := range patches {
		p.apply(t, dst)
	}
	bin := filepath.Join(dst, "hotpair-candidate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/hotpair")
	cmd.Dir, cmd.Env = dst, append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the candidate: %v\n%s", err, b)
	}
	return bin
}

// Patch replaces Old by New, once, in File (relative to the module root).
// The build fails the test when File no longer holds Old: the patch must be
// updated with the code it changes.
type Patch struct {
	File, Old, New string
}

func (p Patch) apply(t testing.TB, root string) {
	t.Helper()
	path := filepath.Join(root, p.File)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), p.Old) {
		t.Fatalf("%s no longer holds %q: update the candidate's patch", p.File, p.Old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), p.Old, p.New, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// BudgetRuleHalved is the patch of a candidate that caps a campaign at half
// its daily budget: campaigns between 50% and 100% of their budget get
// another budget status, and only those.
var BudgetRuleHalved = Patch{File: "pipeline/enforce.go", Old: "l.SpentToday >= b.DailyMicros", New: "2*l.SpentToday >= b.DailyMicros"}

// PacingRuleHalved is the patch of a candidate whose pacer spreads what is
// left of a daily budget over twice the rest of the day: every campaign
// the pacer throttles gets a lower pacing rate (those at rate 1 with room
// to spare keep it), and nothing else changes — spend, budget status and
// bid multipliers stay equal.
var PacingRuleHalved = Patch{File: "pipeline/pacing.go",
	Old: "required := float64(left) / math.Max(in.RemainingSec, 1)",
	New: "required := float64(left) / 2 / math.Max(in.RemainingSec, 1)"}

// OutputsSkipTwoCampaigns is the patch of a candidate whose services write
// nothing for camp-003 and camp-007 (as if they crashed on them): every
// other campaign's outputs are those of the live build, so only the
// campaigns it was sent and never wrote tell it apart.
var OutputsSkipTwoCampaigns = Patch{File: "pipeline/services.go",
	Old: "\tctx.Emit(goka.Stream(s.output), ctx.Key(), b)\n",
	New: "\tif k := ctx.Key(); k == \"camp-003\" || k == \"camp-007\" {\n\t\treturn // the candidate's deliberate fault\n\t}\n" +
		"\tctx.Emit(goka.Stream(s.output), ctx.Key(), b)\n"}

// AggregatorMemoryPerEvent is the patch of a candidate whose aggregator
// keeps 16 KiB of memory for every ad event it processes (written, so that
// it is resident; never released) and whose outputs are unchanged: a build
// that passes every output comparison and must fail on resident memory. A
// memory cost shows without burning the test machine's CPU, and its size
// does not depend on how busy the machine is.
var AggregatorMemoryPerEvent = Patch{File: "pipeline/aggregator.go",
	Old: "func (a aggregator) onAdEvent(ctx goka.Context, msg any) {\n",
	New: "// retained is the candidate's deliberate cost: what it keeps per event.\n" +
		"var retained = make(chan []byte, 1<<20)\n\n" +
		"func (a aggregator) onAdEvent(ctx goka.Context, msg any) {\n" +
		"\tkept := make([]byte, 16<<10)\n" +
		"\tfor i := range kept {\n" +
		"\t\tkept[i] = byte(i)\n" +
		"\t}\n" +
		"\tselect {\n" +
		"\tcase retained <- kept:\n" +
		"\tdefault:\n" +
		"\t}\n"}
