package core

import (
	"fmt"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// StaggerVerdict is the staggered-deploy check of one service.
type StaggerVerdict struct {
	Service contract.Service
	// Violated is set when both sides run a new build: a build first seen on
	// each side less than the stagger period ago.
	Violated bool
	// Newest is, per side ([0] primary, [1] standby), the most recently
	// first-seen build its live instances run.
	Newest [2]BuildSeen
	// Detail explains a violation with the builds and their ages; "" otherwise.
	Detail string
}

// CheckStagger flags a service whose two sides both took a new build within
// the stagger period. running holds, per side, the builds the side's live
// instances run with when each was first seen. A build is new at now when
// it was first seen less than period ago; a zero FirstSeen (already running
// when the monitor started) is never new. period 0 turns the check off.
func CheckStagger(service contract.Service, period time.Duration, running map[contract.Side][]BuildSeen, now time.Time) StaggerVerdict {
	v := StaggerVerdict{Service: service}
	var fresh [2]bool
	for i, side := range contract.Sides() {
		for _, b := range running[side] {
			if b.FirstSeen.After(v.Newest[i].FirstSeen) || v.Newest[i].Build == "" {
				v.Newest[i] = b
			}
		}
		fresh[i] = isNewBuild(v.Newest[i], period, now)
	}
	if period <= 0 || !fresh[0] || !fresh[1] {
		return v
	}
	v.Violated = true
	p, s := v.Newest[0], v.Newest[1]
	v.Detail = fmt.Sprintf("both sides took a new build within the stagger period %s: primary runs %q (first seen %s ago), standby runs %q (first seen %s ago)",
		period, p.Build, now.Sub(p.FirstSeen).Round(time.Second), s.Build, now.Sub(s.FirstSeen).Round(time.Second))
	return v
}

// isNewBuild: first seen (after the monitor started) less than period ago.
func isNewBuild(b BuildSeen, period time.Duration, now time.Time) bool {
	return b.Build != "" && !b.FirstSeen.IsZero() && now.Sub(b.FirstSeen) < period
}
