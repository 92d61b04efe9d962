package contract

import (
	"errors"
	"fmt"
)

// Errors of the Parse functions (and of the enums' UnmarshalText).
var (
	// ErrUnknownSide is returned for a name that is not a side.
	ErrUnknownSide = errors.New("unknown side")
	// ErrUnknownService is returned for a name that is not a service the
	// read side selects for.
	ErrUnknownService = errors.New("unknown service")
	// ErrUnknownStage is returned for a name that is not a stage.
	ErrUnknownStage = errors.New("unknown stage")
	// ErrUnknownRole is returned for a name that is not a role.
	ErrUnknownRole = errors.New("unknown role")
)

// The enums below are small integers (the zero value is unset) that read
// and write as their names: String, and MarshalText/UnmarshalText for JSON,
// YAML and map keys, so records, znodes, configs, CLI flags and metric
// labels carry "primary", "budget", "live"... exactly as before they were
// typed. The text of an unset value is "" (an absent optional field).

// Side is one of the two pipelines, each on its own Kafka cluster.
type Side uint8

// Sides. Primary is the preferred side.
const (
	Primary Side = 1 + iota
	Standby
)

var sideNames = [...]string{"", "primary", "standby"}

// Sides returns both sides, preferred first.
func Sides() []Side { return []Side{Primary, Standby} }

// SideNames returns the names of both sides, preferred first.
func SideNames() []string { return names(Sides()) }

// ParseSide parses "primary" or "standby".
func ParseSide(s string) (Side, error) {
	if v := lookup[Side](sideNames[:], s); v != 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %q (want primary or standby)", ErrUnknownSide, s)
}

// String returns the side's name ("" when unset).
func (s Side) String() string { return name(sideNames[:], s) }

// Valid reports whether s is Primary or Standby.
func (s Side) Valid() bool { return s == Primary || s == Standby }

// Other returns the other side (Primary for an unset side).
func (s Side) Other() Side {
	if s == Primary {
		return Standby
	}
	return Primary
}

// MarshalText writes the side's name.
func (s Side) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a side's name ("" is unset).
func (s *Side) UnmarshalText(b []byte) error { return unmarshal(s, b, ParseSide) }

// Stage is one stage of a pipeline.
type Stage uint8

// Stages, in topological order.
const (
	StageAggregator Stage = 1 + iota
	StageBudget
	StagePacer
	StageBidder
)

var stageNames = [...]string{"", "aggregator", "budget", "pacer", "bidder"}

// Stages returns every stage in topological order.
func Stages() []Stage { return []Stage{StageAggregator, StageBudget, StagePacer, StageBidder} }

// StageNames returns the names of every stage in topological order.
func StageNames() []string { return names(Stages()) }

// ParseStage parses a stage name.
func ParseStage(s string) (Stage, error) {
	if v := lookup[Stage](stageNames[:], s); v != 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %q (want aggregator, budget, pacer or bidder)", ErrUnknownStage, s)
}

// String returns the stage's name ("" when unset).
func (s Stage) String() string { return name(stageNames[:], s) }

// Valid reports whether s is one of the stages.
func (s Stage) Valid() bool { return s >= StageAggregator && s <= StageBidder }

// Service returns the service of a service stage; ok is false for the
// aggregator (and an unset stage).
func (s Stage) Service() (svc Service, ok bool) {
	if s < StageBudget || s > StageBidder {
		return 0, false
	}
	return Service(s - StageBudget + 1), true
}

// MarshalText writes the stage's name.
func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a stage's name ("" is unset).
func (s *Stage) UnmarshalText(b []byte) error { return unmarshal(s, b, ParseStage) }

// Service is a stage the read side selects a side for. The valid values
// are 1 to NumServices, so they index small fixed arrays on the hot path.
type Service uint8

// Services, in the order a request tag lists them.
const (
	ServiceBudget Service = 1 + iota
	ServicePacer
	ServiceBidder
)

// NumServices is the number of services.
const NumServices = 3

var serviceNames = [...]string{"", "budget", "pacer", "bidder"}

// Services returns every service, in tag order.
func Services() []Service { return []Service{ServiceBudget, ServicePacer, ServiceBidder} }

// ServiceNames returns the names of every service, in tag order.
func ServiceNames() []string { return names(Services()) }

// ParseService parses "budget", "pacer" or "bidder".
func ParseService(s string) (Service, error) {
	if v := ServiceByName(s); v != 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %q (want budget, pacer or bidder)", ErrUnknownService, s)
}

// ServiceByName is ParseService without the error (0 for anything else),
// for the hot path.
func ServiceByName(s string) Service {
	switch s {
	case "budget":
		return ServiceBudget
	case "pacer":
		return ServicePacer
	case "bidder":
		return ServiceBidder
	}
	return 0
}

// String returns the service's name ("" when unset).
func (s Service) String() string { return name(serviceNames[:], s) }

// Valid reports whether s is one of the services.
func (s Service) Valid() bool { return s >= ServiceBudget && s <= ServiceBidder }

// Stage returns the stage of the service (unset for an unset service).
func (s Service) Stage() Stage {
	if !s.Valid() {
		return 0
	}
	return StageBudget + Stage(s-ServiceBudget)
}

// MarshalText writes the service's name.
func (s Service) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a service's name ("" is unset).
func (s *Service) UnmarshalText(b []byte) error { return unmarshal(s, b, ParseService) }

// Role is what a pipeline is for: live pipelines serve, dark (canary)
// pipelines only compare.
type Role uint8

// Roles.
const (
	RoleLive Role = 1 + iota
	RoleDark
)

var roleNames = [...]string{"", "live", "dark"}

// Roles returns both roles.
func Roles() []Role { return []Role{RoleLive, RoleDark} }

// ParseRole parses "live" or "dark".
func ParseRole(s string) (Role, error) {
	if v := lookup[Role](roleNames[:], s); v != 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %q (want live or dark)", ErrUnknownRole, s)
}

// String returns the role's name ("" when unset).
func (r Role) String() string { return name(roleNames[:], r) }

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return r == RoleLive || r == RoleDark }

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name ("" is unset).
func (r *Role) UnmarshalText(b []byte) error { return unmarshal(r, b, ParseRole) }

type enum interface {
	~uint8
	String() string
}

func name[E ~uint8](names []string, v E) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%T(%d)", v, uint8(v))
}

func lookup[E ~uint8](names []string, s string) E {
	for i, n := range names[1:] {
		if n == s {
			return E(i + 1)
		}
	}
	return 0
}

func names[E enum](vs []E) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func unmarshal[E ~uint8](v *E, b []byte, parse func(string) (E, error)) error {
	if len(b) == 0 {
		*v = 0
		return nil
	}
	p, err := parse(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

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
func (t Topics) Output(stage Stage) string {
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
