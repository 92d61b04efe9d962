package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/contract"
)

// TestStories runs the verdict stories of testdata/stories/*.txt: what the
// three pipelines write, rounds as time passes, and what the report says.
// One target, "cand", copies the primary. Commands, one a line (# starts a
// comment):
//
//	config KEY=VALUE…          min_points, min_campaigns, relative, absolute, stale, hold
//	write PIPELINES K=V…       PIPELINES: primary,standby,dark; campaigns=N [from=I]
//	                           [status=S] [day=D] [spent=N] [lifetime=N]
//	                           [rate=F] [mult=F] [written=D] [window=D]
//	                           written: values written D before now (a
//	                           reader replaying a topic); window: their
//	                           last_window_start is now + D (D < 0)
//	                           [outputs=O,O] only those outputs
//	sample campaigns=N [from=I] [daily=N] [reason=R] the dispatcher sends
//	                           the campaigns to the target (their rows on its
//	                           budgets topic, daily budget N), now, with the
//	                           header reason R (sample, update, gap; none: an
//	                           older dispatcher's row, the same row again is
//	                           then a copy resumed, a dispatcher restart)
//	unsample campaigns=N [from=I] the dispatcher takes them back (a tombstone)
//	advance D                  time passes by D (the writes settle), then a round
//	expect K=V…                verdict=, campaigns=, sampled=, points= (each output's),
//	                           held=, withdrawn= (points with differences)
//	expect-field OUT/FIELD K=V… verdict=, raw=DIFFS/POINTS, noise=DIFFS/POINTS,
//	                           missing=RAW/NOISE (of the diffs, values missing),
//	                           withdrawn=N (held differences a gap explained)
//	expect-reason TEXT         a reason of the target contains TEXT
func TestStories(t *testing.T) {
	files, _ := filepath.Glob("testdata/stories/*.txt")
	if len(files) < 5 {
		t.Fatalf("only %d stories", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := &story{t: t, rules: DefaultRules(), now: t0}
			for i, line := range strings.Split(string(b), "\n") {
				line, _, _ = strings.Cut(line, "#")
				if line = strings.TrimSpace(line); line != "" {
					s.line = i + 1
					s.do(line)
				}
			}
		})
	}
}

type story struct {
	t     *testing.T
	line  int
	rules Rules
	eng   *Engine
	now   time.Time
}

func (s *story) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("line %d: "+format, append([]any{s.line}, args...)...)
}

func (s *story) engine() *Engine {
	if s.eng == nil {
		s.eng = NewEngine(s.rules)
		s.eng.SetTargets([]Target{{Name: "cand", Source: contract.Primary}})
	}
	return s.eng
}

func (s *story) do(line string) {
	s.t.Helper()
	cmd, rest, _ := strings.Cut(line, " ")
	args := strings.Fields(rest)
	switch cmd {
	case "config":
		s.config(kvs(args))
	case "write":
		if len(args) == 0 {
			s.fatalf("write PIPELINES K=V…")
		}
		s.write(strings.Split(args[0], ","), kvs(args[1:]))
	case "sample":
		kv := kvs(args)
		from, n := int(s.num(kv, "from", 0)), int(s.num(kv, "campaigns", 1))
		for i := from; i < from+n; i++ {
			c := fmt.Sprintf("c-%03d", i)
			row := fmt.Sprintf(`{"v":1,"campaign":%q,"advertiser":"adv","daily_micros":%d,"timezone":"UTC"}`, c, int64(s.num(kv, "daily", 1e9)))
			s.engine().ObserveSampled("cand", c, []byte(row), contract.DarkRowReason(kv["reason"]), s.now)
		}
	case "unsample": // the dispatcher takes the campaigns back (a tombstone each), now
		kv := kvs(args)
		from, n := int(s.num(kv, "from", 0)), int(s.num(kv, "campaigns", 1))
		for i := from; i < from+n; i++ {
			s.engine().ObserveSampled("cand", fmt.Sprintf("c-%03d", i), nil, contract.DarkRowUpdate, s.now)
		}
	case "targets": // the judged targets now, by name (none: every one removed)
		var ts []Target
		for _, name := range args {
			ts = append(ts, Target{Name: name, Source: contract.Primary})
		}
		s.engine().SetTargets(ts)
	case "advance":
		d, err := time.ParseDuration(rest)
		if err != nil {
			s.fatalf("advance: %v", err)
		}
		s.now = s.now.Add(d)
		s.engine().Round(s.now)
	case "expect":
		s.expect(kvs(args))
	case "expect-field":
		s.expectField(args)
	case "expect-reason":
		if r := strings.Join(s.report().Reasons, "\n"); !strings.Contains(r, rest) {
			s.fatalf("no reason contains %q:\n%s", rest, r)
		}
	default:
		s.fatalf("unknown command %q", cmd)
	}
}

func kvs(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		out[k] = v
	}
	return out
}

func (s *story) num(kv map[string]string, key string, def float64) float64 {
	v, ok := kv[key]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		s.fatalf("%s=%q: %v", key, v, err)
	}
	return f
}

func (s *story) config(kv map[string]string) {
	if s.eng != nil {
		s.fatalf("config after the first write")
	}
	r := &s.rules
	r.MinPoints = int(s.num(kv, "min_points", float64(r.MinPoints)))
	r.MinCampaigns = int(s.num(kv, "min_campaigns", float64(r.MinCampaigns)))
	r.Relative = s.num(kv, "relative", r.Relative)
	r.Absolute = s.num(kv, "absolute", r.Absolute)
	for key, d := range map[string]*time.Duration{"stale": &r.Stale, "hold": &r.Hold} {
		if v, ok := kv[key]; ok {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				s.fatalf("%s: %v", key, err)
			}
		}
	}
	if err := r.Validate(); err != nil {
		s.fatalf("%v", err)
	}
}

func (s *story) write(pipelines []string, kv map[string]string) {
	row := comparetest.Good()
	if v, ok := kv["status"]; ok {
		row.Status = v
	}
	row.Day = kv["day"]
	row.Spent = int64(s.num(kv, "spent", float64(row.Spent)))
	row.Lifetime = int64(s.num(kv, "lifetime", 0))
	row.Rate, row.Mult = s.num(kv, "rate", row.Rate), s.num(kv, "mult", row.Mult)
	from, n := int(s.num(kv, "from", 0)), int(s.num(kv, "campaigns", 1))
	written := s.now // written=-40s: values written that long before they are read (a reader replaying a topic)
	if v, ok := kv["written"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			s.fatalf("written=%q: %v", v, err)
		}
		written = s.now.Add(d)
	}
	if v, ok := kv["window"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			s.fatalf("window=%q: %v", v, err)
		}
		row.Window = s.now.Add(d).UTC()
	}
	for _, p := range pipelines {
		src := map[string]Source{"primary": Live(contract.Primary), "standby": Live(contract.Standby), "dark": Dark("cand")}[p]
		if src == (Source{}) {
			s.fatalf("pipeline %q: want primary, standby or dark", p)
		}
		only := kv["outputs"]
		for i := from; i < from+n; i++ {
			c := fmt.Sprintf("c-%03d", i)
			for _, o := range row.Outputs(s.t, c, written) {
				if only != "" && !slices.Contains(strings.Split(only, ","), o.Output) {
					continue
				}
				if err := s.engine().ObserveOutput(src, o.Output, c, o.Value, s.now); err != nil {
					s.fatalf("%v", err)
				}
			}
		}
	}
}

func (s *story) report() TargetReport {
	s.t.Helper()
	rep := s.engine().Report(s.now)
	if len(rep.Targets) != 1 {
		s.fatalf("report has %d targets", len(rep.Targets))
	}
	return rep.Targets[0]
}

func (s *story) expect(kv map[string]string) {
	s.t.Helper()
	tr := s.report()
	got := map[string]string{"verdict": strings.ReplaceAll(tr.Verdict.String(), " ", "-"), "campaigns": strconv.Itoa(tr.Campaigns),
		"sampled": strconv.Itoa(tr.Sampled), "held": strconv.Itoa(tr.Held), "withdrawn": strconv.Itoa(tr.Withdrawn)}
	if p, ok := kv["points"]; ok {
		for o, n := range tr.Points {
			if strconv.Itoa(n) != p {
				s.fatalf("points of %s: %d, want %s", o, n, p)
			}
		}
		delete(kv, "points")
	}
	for k, want := range kv {
		if got[k] != want {
			s.fatalf("%s=%s, want %s (reasons: %v)", k, got[k], want, tr.Reasons)
		}
	}
}

func (s *story) expectField(args []string) {
	s.t.Helper()
	if len(args) == 0 {
		s.fatalf("expect-field OUTPUT/FIELD K=V…")
	}
	output, field, _ := strings.Cut(args[0], "/")
	for _, f := range s.report().Fields {
		if f.Output != output || f.Field != field {
			continue
		}
		got := map[string]string{"verdict": strings.ReplaceAll(f.Verdict.String(), " ", "-"),
			"raw": fmt.Sprintf("%d/%d", f.RawDiffs, f.RawPoints), "noise": fmt.Sprintf("%d/%d", f.NoiseDiffs, f.NoisePoints),
			"missing": fmt.Sprintf("%d/%d", f.RawMissing, f.NoiseMissing), "withdrawn": strconv.Itoa(f.Withdrawn)}
		for k, want := range kvs(args[1:]) {
			if got[k] != want {
				s.fatalf("%s %s=%s, want %s", args[0], k, got[k], want)
			}
		}
		return
	}
	s.fatalf("no field %s", args[0])
}
