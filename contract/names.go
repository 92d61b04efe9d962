package contract

import "slices"

// Sides. Primary is the preferred side.
const (
	SidePrimary = "primary"
	SideStandby = "standby"
)

// Stages of a pipeline. The read side selects per service: budget, pacer, bidder.
const (
	StageAggregator = "aggregator"
	StageBudget     = "budget"
	StagePacer      = "pacer"
	StageBidder     = "bidder"
)

// Roles of a pipeline: live pipelines serve, dark (canary) pipelines only compare.
const (
	RoleLive = "live"
	RoleDark = "dark"
)

// Sides returns both sides, preferred first.
func Sides() []string { return []string{SidePrimary, SideStandby} }

// Stages returns every stage in topological order.
func Stages() []string { return []string{StageAggregator, StageBudget, StagePacer, StageBidder} }

// Services returns the stages the read side selects a side for.
func Services() []string { return []string{StageBudget, StagePacer, StageBidder} }

// OtherSide returns the side that is not side.
func OtherSide(side string) string {
	if side == SidePrimary {
		return SideStandby
	}
	return SidePrimary
}

// IsSide reports whether s names a side.
func IsSide(s string) bool { return slices.Contains(Sides(), s) }

// IsStage reports whether s names a stage.
func IsStage(s string) bool { return slices.Contains(Stages(), s) }

// IsService reports whether s names a service the read side selects for.
func IsService(s string) bool { return slices.Contains(Services(), s) }

// Topics are the topic names of one cluster. Both clusters use the same names.
type Topics struct {
	AdEvents       string
	Spend          string
	Budgets        string
	BudgetStatus   string
	Pacing         string
	BidMultipliers string
	Health         string
	DLQ            string
}

// TopicsWithPrefix returns the DESIGN §3 topic names, each prefixed.
func TopicsWithPrefix(prefix string) Topics {
	return Topics{
		AdEvents:       prefix + "ad-events",
		Spend:          prefix + "spend",
		Budgets:        prefix + "budgets",
		BudgetStatus:   prefix + "budget-status",
		Pacing:         prefix + "pacing",
		BidMultipliers: prefix + "bid-multipliers",
		Health:         prefix + "hotpair-health",
		DLQ:            prefix + "hotpair-dlq",
	}
}

// Output returns the output topic of a service stage ("" for the aggregator,
// whose output is Spend).
func (t Topics) Output(stage string) string {
	switch stage {
	case StageAggregator:
		return t.Spend
	case StageBudget:
		return t.BudgetStatus
	case StagePacer:
		return t.Pacing
	case StageBidder:
		return t.BidMultipliers
	}
	return ""
}

// Compacted reports whether topic holds a table (compacted) rather than a stream.
func (t Topics) Compacted(topic string) bool {
	switch topic {
	case t.Budgets, t.BudgetStatus, t.Pacing, t.BidMultipliers:
		return true
	}
	return false
}

// All returns every topic of the cluster.
func (t Topics) All() []string {
	return []string{t.AdEvents, t.Spend, t.Budgets, t.BudgetStatus, t.Pacing, t.BidMultipliers, t.Health, t.DLQ}
}

// HeaderWindowClosedAt is the header of every SpendEvent that carries the
// moment it could first have been right (unix milliseconds): its window's
// close on the aggregator's partition clock, or a late event's arrival. The
// services measure their output latency from it
// (hotpair_window_output_latency_seconds). Values stay byte-identical on
// both sides; headers may differ.
const HeaderWindowClosedAt = "hotpair-window-closed-at"
