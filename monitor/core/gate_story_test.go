package core

import (
	"slices"
	"strconv"
	"strings"

	"github.com/hotpair/hotpair/contract"
)

// deploy moves a side's instances to a new build (story command).
func (s *story) deploy(c storyCmd) {
	if len(c.args) != 1 || !isSide(c.args[0]) || c.kv["build"] == "" {
		s.fatalf("deploy SIDE build=B [instances=N] [service=S]")
	}
	rolled := 0
	if n, ok := c.kv["instances"]; ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			s.fatalf("bad instances %q", n)
		}
		rolled = v
	}
	for _, svc := range s.services(c) {
		f := &s.conds[Key{svc.Stage(), s.side(c.args[0])}].fleet
		if rolled > 0 {
			f.prevBuild = f.build
		}
		f.build, f.rolled = c.kv["build"], rolled
	}
}

// gate asks the rollout gate from the selections as a reader of ZooKeeper
// sees them (story command).
func (s *story) gate(c storyCmd) {
	if len(c.args) < 1 || !isSide(c.args[0]) || c.kv["held"] == "" || c.kv["ok"] == "" {
		s.fatalf(`gate SIDE held=DUR ok=BOOL [rules=a,b] [other_held=DUR] ["substring"]`)
	}
	req := GateRequest{Side: s.side(c.args[0]), Hold: s.duration([]string{c.kv["held"]}, 0)}
	if err := req.Validate(); err != nil {
		s.fatalf("%v", err)
	}
	in := GateInput{Services: contract.Services(), Selections: map[contract.Service]*contract.Selection{}, Overrides: s.overrides}
	for _, svc := range contract.Services() {
		b, err := contract.Encode(s.engine().State(svc).Selection())
		if err != nil {
			s.fatalf("encode: %v", err)
		}
		sel, err := contract.DecodeSelection(b)
		if err != nil {
			s.fatalf("decode: %v", err)
		}
		in.Selections[svc] = &sel
	}
	v := Gate(req, in, s.now)
	var rules, reasons []string
	for _, r := range v.Reasons {
		if !slices.Contains(rules, r.Rule.String()) {
			rules = append(rules, r.Rule.String())
		}
		reasons = append(reasons, r.String())
	}
	all := strings.Join(reasons, "\n  ")
	if got := strconv.FormatBool(v.OK); got != c.kv["ok"] {
		s.fatalf("+%s gate %s held=%s: ok=%s, want %s; reasons:\n  %s", s.now.Sub(t0), req.Side, req.Hold, got, c.kv["ok"], all)
	}
	if want, ok := c.kv["rules"]; ok && strings.Join(rules, ",") != want {
		s.fatalf("+%s gate %s: rules %s, want %s; reasons:\n  %s", s.now.Sub(t0), req.Side, strings.Join(rules, ","), want, all)
	}
	if want, ok := c.kv["other_held"]; ok && v.OtherHeld != s.duration([]string{want}, 0) {
		s.fatalf("+%s gate %s: other side held %s, want %s", s.now.Sub(t0), req.Side, v.OtherHeld, want)
	}
	for _, sub := range c.args[1:] {
		if !strings.Contains(all, sub) {
			s.fatalf("+%s gate %s: no reason contains %q; reasons:\n  %s", s.now.Sub(t0), req.Side, sub, all)
		}
	}
	s.t.Logf("+%s gate %s held=%s: ok=%v other held %s %s", s.now.Sub(t0), req.Side, req.Hold, v.OK, v.OtherHeld, all)
}
