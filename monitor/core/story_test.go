package core

// Scenario tests written as stories in testdata/*.txt. Each story drives a
// real Engine with synthetic samples of every service on both sides, so a
// story exercises the windows, the rules and the state machine together.
//
// Commands (one per line; '#' starts a comment; times are offsets from the
// story's start, written as Go durations):
//
//	config window=1m grace=10m failover_after=1 ...   (first, optional)
//	observe SIDE healthy [qps=N] [lag=DUR] [service=S]   (lag: end to end, every event)
//	observe SIDE unhealthy RULE... [qps=N] [lag=DUR] [service=S]
//	    from now on the side's instances behave so that exactly these rules
//	    fire (lag_high, input_rate_low, no_heartbeat, partitions_uncovered);
//	    every window the condition held for whole is checked against it
//	advance DUR                       samples every sample interval, windows close
//	override SIDE for DUR [by=X] [reason="..."] [service=S]
//	clear-override [service=S]
//	new-leader                        persist every selection as JSON, start a
//	                                  fresh Engine from it (a new monitor leader)
//	deploy SIDE build=B [instances=N] [service=S]
//	                                  the side's instances run build B from now
//	                                  on (instances=N: only the first N, a
//	                                  rolling deploy under way)
//	gate SIDE held=DUR ok=BOOL [rules=a,b] [other_held=DUR] ["substring"]
//	                                  ask the rollout gate, from the selections
//	                                  as persisted (JSON) and the overrides,
//	                                  whether SIDE may be deployed; rules are
//	                                  the failing rules, in order
//	expect [service=S] active=SIDE switches=N degraded=BOOL epoch=N kind=K
//	       override=BOOL last_switch=DUR|never
//	expect-reason [service=S] "substring of the last decision's reason"
//	repeat N ... end
//	print

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

func TestStories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no stories: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cmds, err := parseStory(string(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			s := newStory(t, f)
			s.run(cmds)
		})
	}
}

// storyCmd is one parsed line; body holds the lines of a repeat block.
type storyCmd struct {
	line  int
	name  string
	args  []string          // positional arguments
	kv    map[string]string // key=value arguments
	count int               // repeat count
	body  []storyCmd
}

// parseStory parses a story into commands, expanding nothing yet.
func parseStory(text string) ([]storyCmd, error) {
	stack := []*storyCmd{{}}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if c, _, ok := strings.Cut(line, "#"); ok && !strings.Contains(c, `"`) {
			line = strings.TrimSpace(c)
		}
		if line == "" {
			continue
		}
		toks, err := tokenize(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		c := storyCmd{line: i + 1, name: toks[0], kv: map[string]string{}}
		for _, tok := range toks[1:] {
			if k, v, ok := strings.Cut(tok, "="); ok && !strings.HasPrefix(tok, `"`) {
				c.kv[k] = strings.Trim(v, `"`)
			} else {
				c.args = append(c.args, strings.Trim(tok, `"`))
			}
		}
		top := stack[len(stack)-1]
		switch c.name {
		case "repeat":
			if len(c.args) != 1 {
				return nil, fmt.Errorf("line %d: repeat N", i+1)
			}
			if c.count, err = strconv.Atoi(c.args[0]); err != nil || c.count < 1 {
				return nil, fmt.Errorf("line %d: bad repeat count %q", i+1, c.args[0])
			}
			top.body = append(top.body, c)
			stack = append(stack, &top.body[len(top.body)-1])
		case "end":
			if len(stack) == 1 {
				return nil, fmt.Errorf("line %d: end without repeat", i+1)
			}
			stack = stack[:len(stack)-1]
		default:
			top.body = append(top.body, c)
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("repeat without end")
	}
	return stack[0].body, nil
}

// tokenize splits on spaces, keeping "quoted strings" (also in key="v w") whole.
func tokenize(line string) ([]string, error) {
	var toks []string
	var cur strings.Builder
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				toks = append(toks, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	if cur.Len() > 0 {
		toks = append(toks, cur.String())
	}
	return toks, nil
}

// condition is what a story said about one (service, side).
type condition struct {
	fleet     fleet
	healthy   bool
	rules     []Rule
	changedAt time.Time
}

type story struct {
	t         *testing.T
	file      string
	line      int
	cfg       Config
	eng       *Engine
	now       time.Time
	conds     map[Key]*condition
	overrides map[contract.Service]*contract.Override
	switches  map[contract.Service]int
	last      map[contract.Service]Decision
}

func newStory(t *testing.T, file string) *story {
	s := &story{t: t, file: file, cfg: DefaultConfig(), now: t0, conds: map[Key]*condition{},
		overrides: map[contract.Service]*contract.Override{}, switches: map[contract.Service]int{}, last: map[contract.Service]Decision{}}
	for _, svc := range contract.Services() {
		for _, side := range contract.Sides() {
			s.conds[Key{svc.Stage(), side}] = &condition{fleet: healthyFleet(svc.Stage(), side), healthy: true}
		}
	}
	return s
}

func (s *story) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s:%d: %s", s.file, s.line, fmt.Sprintf(format, args...))
}

func (s *story) engine() *Engine {
	if s.eng == nil {
		e, err := NewEngine(s.cfg, s.now)
		if err != nil {
			s.fatalf("config: %v", err)
		}
		s.eng = e
	}
	return s.eng
}

func (s *story) run(cmds []storyCmd) {
	for _, c := range cmds {
		s.line = c.line
		switch c.name {
		case "repeat":
			for range c.count {
				s.run(c.body)
			}
		case "config":
			s.config(c)
		case "observe":
			s.observe(c)
		case "advance":
			s.advance(s.duration(c.args, 0))
		case "override":
			s.override(c)
		case "clear-override":
			for _, svc := range s.services(c) {
				delete(s.overrides, svc)
			}
			s.redecide()
		case "new-leader":
			s.newLeader()
		case "deploy":
			s.deploy(c)
		case "gate":
			s.gate(c)
		case "expect":
			s.expect(c)
		case "expect-reason":
			s.expectReason(c)
		case "print":
			for _, svc := range contract.Services() {
				st := s.engine().State(svc)
				s.t.Logf("%s +%s %s: active=%s epoch=%d degraded=%v reason=%q", s.file, s.now.Sub(t0), svc, st.Active, st.Epoch, st.Degraded, st.Reason)
			}
		default:
			s.fatalf("unknown command %q", c.name)
		}
	}
}

func (s *story) duration(args []string, i int) time.Duration {
	if len(args) <= i {
		s.fatalf("missing duration")
	}
	d, err := time.ParseDuration(args[i])
	if err != nil {
		s.fatalf("bad duration %q", args[i])
	}
	return d
}

func (s *story) services(c storyCmd) []contract.Service {
	if name, ok := c.kv["service"]; ok {
		svc, err := contract.ParseService(name)
		if err != nil {
			s.fatalf("%v", err)
		}
		return []contract.Service{svc}
	}
	return contract.Services()
}

func (s *story) config(c storyCmd) {
	if s.eng != nil {
		s.fatalf("config must come first")
	}
	for k, v := range c.kv {
		d, derr := time.ParseDuration(v)
		n, nerr := strconv.Atoi(v)
		f, ferr := strconv.ParseFloat(v, 64)
		var err error
		switch k {
		case "window":
			s.cfg.Window, err = d, derr
		case "grace":
			s.cfg.Decision.Grace, err = d, derr
		case "failover_after":
			s.cfg.Decision.FailoverAfter, err = n, nerr
		case "partition_grace":
			s.cfg.Rules.PartitionGrace, err = d, derr
		case "lag_limit":
			s.cfg.Rules.LagLimit, err = d, derr
		case "catch_up_lag":
			s.cfg.Rules.CatchUpLag, err = d, derr
		case "rate_ratio":
			s.cfg.Rules.RateRatio, err = f, ferr
		default:
			s.fatalf("unknown config key %q", k)
		}
		if err != nil {
			s.fatalf("config %s=%s: %v", k, v, err)
		}
	}
	s.engine()
}

func (s *story) observe(c storyCmd) {
	side, err := contract.ParseSide(c.args[0])
	if len(c.args) < 2 || err != nil {
		s.fatalf("observe SIDE healthy|unhealthy RULE...")
	}
	for _, svc := range s.services(c) {
		cond := &condition{fleet: healthyFleet(svc.Stage(), side), changedAt: s.now}
		switch c.args[1] {
		case "healthy":
			cond.healthy = true
			if len(c.args) > 2 {
				s.fatalf("healthy takes no rules")
			}
		case "unhealthy":
			if len(c.args) < 3 {
				s.fatalf("unhealthy needs the rules that fire")
			}
			for _, name := range c.args[2:] {
				s.breakFleet(cond, name)
			}
		default:
			s.fatalf("want healthy or unhealthy, got %q", c.args[1])
		}
		if q, ok := c.kv["qps"]; ok {
			v, err := strconv.ParseFloat(q, 64)
			if err != nil {
				s.fatalf("bad qps %q", q)
			}
			cond.fleet.qps = v
		}
		if l, ok := c.kv["lag"]; ok {
			cond.fleet.lagMs = s.duration([]string{l}, 0).Milliseconds()
		}
		prev := s.conds[Key{svc.Stage(), side}].fleet
		cond.fleet.build, cond.fleet.rolled, cond.fleet.prevBuild = prev.build, prev.rolled, prev.prevBuild
		s.conds[Key{svc.Stage(), side}] = cond
	}
}

// breakFleet makes the fleet fail one rule.
func (s *story) breakFleet(cond *condition, name string) {
	switch name {
	case "lag_high":
		cond.fleet.lagMs = 75_000
		cond.rules = append(cond.rules, RuleLagHigh)
	case "input_rate_low":
		cond.fleet.qps = 10
		cond.rules = append(cond.rules, RuleInputRateLow)
	case "no_heartbeat":
		cond.fleet.silent = true
		cond.rules = append(cond.rules, RuleNoHeartbeat)
	case "partitions_uncovered":
		cond.fleet.dropInstance0 = true
		cond.rules = append(cond.rules, RulePartitionsUncovered)
	default:
		s.fatalf("unknown rule %q", name)
	}
}

// advance moves time by d: every sample interval every fleet reports, and
// every window boundary closes a window. An override reaching its expiry
// between windows is applied at once, as the daemon does.
func (s *story) advance(d time.Duration) {
	e := s.engine()
	step := s.cfg.Rules.SampleInterval
	if d%step != 0 {
		s.fatalf("advance %s is not a multiple of the sample interval %s", d, step)
	}
	for end := s.now.Add(d); s.now.Before(end); {
		ws, we := s.now, s.now.Add(step)
		for _, k := range s.keys() {
			for _, smp := range s.conds[k].fleet.samples(ws, we) {
				e.Observe(&smp, we)
			}
		}
		s.now = we
		for _, o := range s.overrides {
			if s.now.Equal(o.Until) && !s.now.Equal(e.WindowStart().Add(s.cfg.Window)) {
				s.redecide()
			}
		}
		if s.now.Equal(e.WindowStart().Add(s.cfg.Window)) {
			s.tick()
		}
	}
}

func (s *story) keys() []Key {
	var ks []Key
	for _, svc := range contract.Services() {
		for _, side := range contract.Sides() {
			ks = append(ks, Key{svc.Stage(), side})
		}
	}
	return ks
}

func (s *story) tick() {
	ev, err := s.eng.Tick(s.now, s.overrides)
	if err != nil {
		s.fatalf("tick: %v", err)
	}
	for _, k := range s.keys() {
		cond := s.conds[k]
		if cond.changedAt.After(ev.WindowStart) {
			continue // the condition changed within this window
		}
		v, _ := ev.Verdict(k.Service, k.Side)
		if v.Healthy != cond.healthy {
			s.fatalf("+%s %s: verdict %s, the story says healthy=%v", s.now.Sub(t0), k, v.Summary(), cond.healthy)
		}
		for _, r := range cond.rules {
			if !v.Failing(r) {
				s.fatalf("+%s %s: verdict %s lacks %s", s.now.Sub(t0), k, v.Summary(), r)
			}
		}
	}
	s.note(ev.Decisions)
}

func (s *story) note(ds []Decision) {
	for _, d := range ds {
		s.last[d.Service] = d
		if d.Switched {
			s.switches[d.Service]++
			s.t.Logf("+%s %s switch: %s", s.now.Sub(t0), d.Service, d.Reason)
		}
	}
}

func (s *story) redecide() { s.note(s.engine().Redecide(s.now, s.overrides)) }

func (s *story) override(c storyCmd) {
	side, err := contract.ParseSide(c.args[0])
	if len(c.args) != 3 || err != nil || c.args[1] != "for" {
		s.fatalf("override SIDE for DUR")
	}
	for _, svc := range s.services(c) {
		s.overrides[svc] = &contract.Override{V: contract.ZNodeVersion, Side: side, Until: s.now.Add(s.duration(c.args, 2)),
			Reason: cmpOr(c.kv["reason"], "story"), By: cmpOr(c.kv["by"], "oncall")}
	}
	s.redecide()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// newLeader hands every service's state to a fresh Engine through the
// selection JSON, as a monitor that wins the election does.
func (s *story) newLeader() {
	old := s.engine()
	e, err := NewEngine(s.cfg, s.now)
	if err != nil {
		s.fatalf("%v", err)
	}
	for _, svc := range contract.Services() {
		b, err := contract.Encode(old.State(svc).Selection())
		if err != nil {
			s.fatalf("encode: %v", err)
		}
		sel, err := contract.DecodeSelection(b)
		if err != nil {
			s.fatalf("decode: %v", err)
		}
		if err := e.Restore(sel); err != nil {
			s.fatalf("restore: %v", err)
		}
	}
	s.eng = e
}

func (s *story) expect(c storyCmd) {
	for _, svc := range s.services(c) {
		st := s.engine().State(svc)
		for k, want := range c.kv {
			var got string
			switch k {
			case "service":
				continue
			case "active":
				got = st.Active.String()
			case "switches":
				got = strconv.Itoa(s.switches[svc])
			case "degraded":
				got = strconv.FormatBool(st.Degraded)
			case "epoch":
				got = strconv.FormatInt(st.Epoch, 10)
			case "kind":
				got = s.last[svc].Kind.String()
			case "override":
				got = strconv.FormatBool(st.Override != nil)
			case "last_switch":
				got = "never"
				if !st.LastSwitch.IsZero() {
					got = st.LastSwitch.Sub(t0).String()
					if d, err := time.ParseDuration(want); err == nil {
						want = d.String()
					}
				}
			default:
				s.fatalf("unknown expectation %q", k)
			}
			if got != want {
				s.fatalf("+%s %s: %s=%s, want %s (reason: %s)", s.now.Sub(t0), svc, k, got, want, st.Reason)
			}
		}
	}
}

func (s *story) expectReason(c storyCmd) {
	if len(c.args) != 1 {
		s.fatalf(`expect-reason "substring"`)
	}
	for _, svc := range s.services(c) {
		if r := s.engine().State(svc).Reason; !strings.Contains(r, c.args[0]) {
			s.fatalf("+%s %s: reason %q lacks %q", s.now.Sub(t0), svc, r, c.args[0])
		}
	}
}

// side parses a side named in a story.
func (s *story) side(name string) contract.Side {
	side, err := contract.ParseSide(name)
	if err != nil {
		s.fatalf("%v", err)
	}
	return side
}

func isSide(name string) bool {
	_, err := contract.ParseSide(name)
	return err == nil
}
