package core

import (
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Rule names a verdict rule. The order is the order of severity in which a
// verdict lists its reasons.
type Rule int

// Rules of DESIGN §4.
const (
	// RuleNoHeartbeat: no sample arrived for HeartbeatMissed × SampleInterval.
	RuleNoHeartbeat Rule = 1 + iota
	// RulePartitionsUncovered: live instances leave input partitions
	// unassigned for longer than PartitionGrace.
	RulePartitionsUncovered
	// RuleInputRateLow: QPS below RateRatio × the other side's QPS.
	RuleInputRateLow
	// RuleLagHigh: merged p99 event lag above LagLimit.
	RuleLagHigh
)

var ruleNames = [...]string{"", "no_heartbeat", "partitions_uncovered", "input_rate_low", "lag_high"}

// String returns the rule's snake_case name, used in reasons and metric labels.
func (r Rule) String() string {
	if r <= 0 || int(r) >= len(ruleNames) {
		return "unknown"
	}
	return ruleNames[r]
}

// AllRules returns every rule in order of severity.
func AllRules() []Rule {
	return []Rule{RuleNoHeartbeat, RulePartitionsUncovered, RuleInputRateLow, RuleLagHigh}
}

// Reason is one failing rule with the numbers behind it.
type Reason struct {
	Rule   Rule
	Detail string // e.g. "p99 75000 ms > limit 60000 ms"
}

// String renders the reason as "rule: detail".
func (r Reason) String() string { return r.Rule.String() + ": " + r.Detail }

// Key identifies one pipeline stage on one side.
type Key struct {
	Service contract.Stage // a stage: aggregator, budget, pacer or bidder
	Side    contract.Side
}

func (k Key) String() string { return k.Service.String() + "/" + k.Side.String() }

// Verdict is the judgement of one (service, side) over one window.
type Verdict struct {
	Key
	WindowStart, WindowEnd time.Time
	Healthy                bool
	// Reasons are every failing rule, in order of severity; empty when healthy.
	Reasons []Reason
	// CatchingUp says why the side is behind — its end-to-end p99 lag, or
	// its aggregator's, above rules.catch_up_lag — and is "" while it keeps
	// up. A side catching up may be healthy, but its grace clock does not
	// run (see Step).
	CatchingUp string
	// The numbers the rules looked at.
	Stats WindowStats
}

// Failing reports whether rule is among the reasons.
func (v Verdict) Failing(rule Rule) bool {
	for _, r := range v.Reasons {
		if r.Rule == rule {
			return true
		}
	}
	return false
}

// ReasonStrings returns the reasons as "rule: detail" strings.
func (v Verdict) ReasonStrings() []string {
	out := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		out[i] = r.String()
	}
	return out
}

// Summary is "healthy" or the reasons joined with "; ".
func (v Verdict) Summary() string {
	if v.Healthy {
		return "healthy"
	}
	return strings.Join(v.ReasonStrings(), "; ")
}
