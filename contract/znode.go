package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// DefaultRoot is the root path of hotpair's znodes.
const DefaultRoot = "/hotpair"

// ZNodeVersion is the "v" of every znode document.
const ZNodeVersion = 1

// Paths is the layout under one root.
type Paths struct{ Root string }

// NewPaths returns the layout under root ("" means DefaultRoot).
func NewPaths(root string) Paths {
	if root == "" {
		root = DefaultRoot
	}
	return Paths{Root: path.Clean("/" + strings.Trim(root, "/"))}
}

// SelectionDir is the parent of every service's selection.
func (p Paths) SelectionDir() string { return p.Root + "/selection" }

// Selection is the znode with the active side of one service.
func (p Paths) Selection(service Service) string { return p.SelectionDir() + "/" + service.String() }

// OverrideDir is the parent of every service's override.
func (p Paths) OverrideDir() string { return p.Root + "/override" }

// Override is the znode with an operator override of one service.
func (p Paths) Override(service Service) string { return p.OverrideDir() + "/" + service.String() }

// LeaderDir holds the ephemeral sequential candidates of the monitor election.
func (p Paths) LeaderDir() string { return p.Root + "/monitor/leader" }

// Instances is the parent of the ephemeral registrations of one stage on one cluster.
func (p Paths) Instances(cluster string, stage Stage) string {
	return p.InstancesDir(cluster) + "/" + stage.String()
}

// InstancesDir is the parent of the registrations of every stage on one
// cluster ("" for the parent of every cluster's).
func (p Paths) InstancesDir(cluster string) string {
	if cluster == "" {
		return p.Root + "/instances"
	}
	return p.Root + "/instances/" + cluster
}

// DarkDir is the parent of every dark target's configuration.
func (p Paths) DarkDir() string { return p.Root + "/dark" }

// Dark is the configuration document (DarkTarget) of the dark target name.
func (p Paths) Dark(name string) string { return p.DarkDir() + "/" + name }

// DarkInstances is the parent of the ephemeral registrations of one stage of
// the dark pipelines of target name (/instances/dark/<name>/<stage>).
func (p Paths) DarkInstances(name string, stage Stage) string {
	return p.InstancesDir("dark/"+name) + "/" + stage.String()
}

// Registration is the JSON document of a pipeline instance's ephemeral znode
// (Paths.Instances): what runs where, on which build, since when.
type Registration struct {
	V         int       `json:"v"`
	Side      Side      `json:"side"`
	Role      Role      `json:"role"`
	Stage     Stage     `json:"stage"`
	Instance  string    `json:"instance"`
	Build     string    `json:"build"`
	StartedAt time.Time `json:"started_at"`
}

// SideState is one side's view in a Selection: its latest verdict and the
// hysteresis state the monitor persists with it.
type SideState struct {
	Healthy bool `json:"healthy"`
	// Reasons are every failing rule with its numbers, e.g.
	// "lag_high: p99 75000 ms > limit 60000 ms". Empty when healthy.
	Reasons []string `json:"reasons"`
	// HealthySince is when the side became continuously healthy; nil while
	// unhealthy. The grace period for a return to the preferred side counts from it.
	HealthySince *time.Time `json:"healthy_since"`
	// QPS is the service's input rate on the side (events/s).
	QPS float64 `json:"qps"`
	// LagP99Ms is the service's end-to-end p99 event lag: how late its input
	// reached it against the moment it could first have been right.
	LagP99Ms int64 `json:"lag_p99_ms"`
	// AggregatorLagP99Ms is the p99 lag of the side's aggregator: how far
	// behind the side's input is (0 when unknown).
	AggregatorLagP99Ms int64 `json:"aggregator_lag_p99_ms,omitempty"`
	// CatchingUp, while the side is behind (its lag or its aggregator's above
	// the monitor's catch_up_lag), says by how much; its grace clock then
	// does not run. Empty while it keeps up.
	CatchingUp string `json:"catching_up,omitempty"`
	// Build is the newest build the side's instances of this service report
	// (the last one known while none reports).
	Build string `json:"build,omitempty"`
	// BuildSince is when the monitor first saw Build on this side: the hold
	// of a staggered deploy counts from it (and from HealthySince). Absent
	// when Build was already running as the monitor started: an established
	// build whose age is unknown.
	BuildSince *time.Time `json:"build_since,omitempty"`
	// RollingFrom is the oldest other build some of the side's live
	// instances still run: set while a deploy rolls out, empty otherwise.
	RollingFrom string `json:"rolling_from,omitempty"`
	// UnhealthyWindows counts the side's consecutive unhealthy evaluation
	// windows (for failover_after), so a new leader continues the count.
	UnhealthyWindows int `json:"unhealthy_windows,omitempty"`
}

// Override is an operator's pin of a service to a side until a time.
type Override struct {
	V      int       `json:"v"`
	Side   Side      `json:"side"`
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
}

// ActiveAt reports whether the override is in force at now.
func (o *Override) ActiveAt(now time.Time) bool { return o != nil && now.Before(o.Until) }

// Selection is the document at /selection/<service>: which side the read side
// should use for the service, and why.
type Selection struct {
	V       int     `json:"v"`
	Service Service `json:"service"`
	// Active is the side to read from: "primary" or "standby".
	Active    Side `json:"active"`
	Preferred Side `json:"preferred"`
	// Epoch counts the changes of Active since the service was first decided;
	// it only grows, so a reader can order two selections.
	Epoch     int64     `json:"epoch"`
	DecidedAt time.Time `json:"decided_at"`
	// Reason says why Active is what it is, in a sentence for people.
	Reason string `json:"reason"`
	// Degraded is set when both sides are unhealthy.
	Degraded bool `json:"degraded"`
	// LastSwitch is when Active last changed (zero if never).
	LastSwitch time.Time          `json:"last_switch"`
	Sides      map[Side]SideState `json:"sides"`
	// Override is the operator override in force when decided, if any.
	Override *Override `json:"override,omitempty"`
	// StaggerViolation is set, with the builds and their ages, while both
	// sides run a build newer than the stagger period: the two sides must
	// never take a new build at the same time. Empty otherwise.
	StaggerViolation string `json:"stagger_violation,omitempty"`
}

// ErrInvalidDocument is wrapped by every decode error of a znode document.
var ErrInvalidDocument = errors.New("znode: invalid document")

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidDocument, err)
	}
	if d.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidDocument)
	}
	return nil
}

// DecodeSelection parses and validates a selection document. Unknown fields
// are ignored, so newer monitors can add some.
func DecodeSelection(b []byte) (Selection, error) {
	var s Selection
	if err := strictUnmarshal(b, &s); err != nil {
		return Selection{}, err
	}
	switch {
	case s.V != ZNodeVersion:
		return Selection{}, fmt.Errorf("%w: v=%d, want %d", ErrInvalidDocument, s.V, ZNodeVersion)
	case !s.Active.Valid():
		return Selection{}, fmt.Errorf("%w: active=%q is not a side", ErrInvalidDocument, s.Active)
	case s.Epoch < 0:
		return Selection{}, fmt.Errorf("%w: negative epoch", ErrInvalidDocument)
	case s.Override != nil && !s.Override.Side.Valid():
		return Selection{}, fmt.Errorf("%w: override.side=%q is not a side", ErrInvalidDocument, s.Override.Side)
	}
	for side := range s.Sides {
		if !side.Valid() {
			return Selection{}, fmt.Errorf("%w: sides has key %q", ErrInvalidDocument, side)
		}
	}
	return s, nil
}

// DecodeOverride parses and validates an override document.
func DecodeOverride(b []byte) (Override, error) {
	var o Override
	if err := strictUnmarshal(b, &o); err != nil {
		return Override{}, err
	}
	switch {
	case o.V != ZNodeVersion:
		return Override{}, fmt.Errorf("%w: v=%d, want %d", ErrInvalidDocument, o.V, ZNodeVersion)
	case !o.Side.Valid():
		return Override{}, fmt.Errorf("%w: side=%q is not a side", ErrInvalidDocument, o.Side)
	case o.Until.IsZero():
		return Override{}, fmt.Errorf("%w: until is required", ErrInvalidDocument)
	case strings.TrimSpace(o.Reason) == "":
		return Override{}, fmt.Errorf("%w: reason is required", ErrInvalidDocument)
	}
	return o, nil
}
