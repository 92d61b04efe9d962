// Package decisions is the contract of hotpair's decision record: the
// retained topic hotpair-decisions, written by the leading monitor to both
// Kafka clusters, with one entry for every decision that changed something
// (a switch, degraded on or off, an override applied or ended, the stagger
// flag) and one per evaluation window with both sides' verdicts. The
// monitor writes it; the on-call page, GET /api/v1/history, `hotpair
// history` and `hotpair monitor simulate --source record` read it. Like
// package contract for records and znodes, every writer and reader goes through these
// types. docs/monitor.md documents the format.
package decisions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Topic is the record's topic name (prefixed like every topic).
const Topic = "hotpair-decisions"

// Version is the "v" of every entry this package writes and reads.
const Version = 1

// Kind says what an entry records.
type Kind string

// Kinds of entries.
const (
	// KindSwitch: the active side changed (or was first decided).
	KindSwitch Kind = "switch"
	// KindDegraded: both sides became unhealthy (On) or one recovered.
	KindDegraded Kind = "degraded"
	// KindOverride: an operator override was applied (On) or ended.
	KindOverride Kind = "override"
	// KindStagger: both sides took a new build within the stagger period
	// (On), or no longer do.
	KindStagger Kind = "stagger"
	// KindWindow: one evaluation window's verdicts and the decision made.
	KindWindow Kind = "window"
)

// Kinds lists every kind, in the order entries of the same instant sort.
func Kinds() []Kind {
	return []Kind{KindWindow, KindSwitch, KindDegraded, KindOverride, KindStagger}
}

// Entry is one value of the topic (JSON, "v": 1). Every entry carries the
// selection as the leader persisted it in ZooKeeper with the decision: the
// evidence (both sides' verdicts with their numbers, the reason, the
// override, the hysteresis state).
type Entry struct {
	V int `json:"v"`
	// ID is deterministic: the same decision always gets the same id, so a
	// retry, the copy on the other cluster or a rewrite after a leader
	// change is recognised as a duplicate. See the ID functions.
	ID      string           `json:"id"`
	Kind    Kind             `json:"kind"`
	Service contract.Service `json:"service"`
	At      time.Time        `json:"at"`
	Epoch   int64            `json:"epoch"`
	// From and To are the sides of a switch (From "" for the first decision).
	From contract.Side `json:"from,omitempty"`
	To   contract.Side `json:"to,omitempty"`
	// Cause is the rule behind a switch: failover, return, override or initial.
	Cause string `json:"cause,omitempty"`
	// On is set on degraded, override and stagger entries: began (true) or ended.
	On *bool `json:"on,omitempty"`
	// Detail says what happened in one line, for people.
	Detail    string             `json:"detail"`
	Selection contract.Selection `json:"selection"`
	// Window is set on window entries.
	Window *Window `json:"window,omitempty"`
	// RecordedBy is the monitor replica that appended the entry, RecordedAt
	// when (also the Kafka record's timestamp).
	RecordedBy string    `json:"recorded_by"`
	RecordedAt time.Time `json:"recorded_at"`
}

// Window is one evaluation window of one service.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Verdicts are both sides' verdicts over the window, by side.
	Verdicts map[contract.Side]Verdict `json:"verdicts"`
	// Decision are the thresholds the decision was made with.
	Decision Thresholds `json:"decision"`
}

// Verdict is one side's verdict over a window, with the numbers the rules
// looked at.
type Verdict struct {
	Healthy bool `json:"healthy"`
	// Reasons are the failing rules as "rule: numbers", in order of severity.
	Reasons []string `json:"reasons"`
	// CatchingUp says by how much the side is behind ("" while it keeps up).
	CatchingUp string  `json:"catching_up,omitempty"`
	QPS        float64 `json:"qps"`
	// LagP99Ms and LagMaxMs are the service's end-to-end event lag;
	// AggregatorLagP99Ms is how far behind the side's aggregator is.
	LagP99Ms           int64  `json:"lag_p99_ms"`
	LagMaxMs           int64  `json:"lag_max_ms"`
	AggregatorLagP99Ms int64  `json:"aggregator_lag_p99_ms"`
	Samples            int    `json:"samples"`
	Instances          int    `json:"instances"`
	TopicPartitions    int32  `json:"topic_partitions"`
	Unassigned         int    `json:"unassigned_partitions"`
	Build              string `json:"build,omitempty"`
}

// Thresholds are the decision's thresholds (decision.* of the monitor config).
type Thresholds struct {
	Preferred     string `json:"preferred"`
	FailoverAfter int    `json:"failover_after"`
	Grace         string `json:"grace"`
}

// Errors of Decode.
var (
	// ErrInvalid is wrapped by Decode for a value that is not a valid entry.
	ErrInvalid = errors.New("decisions: invalid entry")
	// ErrUnknownVersion is wrapped by Decode for an entry of a version this
	// reader does not know (written by a newer monitor).
	ErrUnknownVersion = errors.New("decisions: unknown entry version")
)

// IDs: "<service>/<epoch>/<what>", plus the time of the decision where one
// epoch can hold several (the flags change without a switch; one window per
// window end).

// SwitchID is the id of the switch that started epoch.
func SwitchID(service contract.Service, epoch int64) string {
	return service.String() + "/" + strconv.FormatInt(epoch, 10) + "/switch"
}

// FlagID is the id of a degraded, override or stagger change decided at at.
func FlagID(service contract.Service, epoch int64, kind Kind, on bool, at time.Time) string {
	return fmt.Sprintf("%s/%d/%s-%s/%d", service, epoch, kind, onOff(on), at.UnixMilli())
}

// WindowID is the id of the window of service that ended at end.
func WindowID(service contract.Service, epoch int64, end time.Time) string {
	return fmt.Sprintf("%s/%d/window/%d", service, epoch, end.UnixMilli())
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Label is the entry's value of the metrics' reason label: the cause of a
// switch (failover, return, override, initial), "window", or the kind with
// _on or _off (degraded_on, override_off, stagger_on…).
func (e *Entry) Label() string {
	switch {
	case e.Kind == KindSwitch:
		return e.Cause
	case e.On != nil:
		return string(e.Kind) + "_" + onOff(*e.On)
	}
	return string(e.Kind)
}

// Encode returns the entry as the topic's value: one line of JSON, with
// "<", ">" and "&" as they are (the reasons compare numbers), so kcat
// prints it readably.
func Encode(e Entry) ([]byte, error) {
	e.V = Version
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Decode reads one value of the topic. A value that is not an entry of a
// known kind with its required fields wraps ErrInvalid; one of another
// version wraps ErrUnknownVersion. Unknown fields are ignored.
func Decode(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if e.V != Version {
		if e.V == 0 {
			return Entry{}, fmt.Errorf("%w: no \"v\"", ErrInvalid)
		}
		return Entry{}, fmt.Errorf("%w: v %d (this reader knows v %d)", ErrUnknownVersion, e.V, Version)
	}
	if err := e.check(); err != nil {
		return Entry{}, fmt.Errorf("%w: %s", ErrInvalid, err)
	}
	return e, nil
}

func (e *Entry) check() error {
	switch {
	case e.ID == "":
		return errors.New(`no "id"`)
	case !slices.Contains(Kinds(), e.Kind):
		return fmt.Errorf("kind %q is none of %v", e.Kind, Kinds())
	case !e.Service.Valid():
		return fmt.Errorf("service %q is not a service", e.Service)
	case e.At.IsZero():
		return errors.New(`no "at"`)
	case !e.Selection.Active.Valid():
		return fmt.Errorf("selection.active %q is not a side", e.Selection.Active)
	case e.Kind == KindSwitch && !e.To.Valid():
		return fmt.Errorf("switch to %q, not a side", e.To)
	case (e.Kind == KindDegraded || e.Kind == KindOverride || e.Kind == KindStagger) && e.On == nil:
		return fmt.Errorf(`%s entry without "on"`, e.Kind)
	case e.Kind == KindWindow && (e.Window == nil || e.Window.End.IsZero() || len(e.Window.Verdicts) == 0):
		return errors.New(`window entry without "window" (end and verdicts)`)
	}
	return nil
}

// Summary is one line for a window's verdicts: each side healthy or its
// failing rules, and the active side.
func (w *Window) Summary(active contract.Side) string {
	var parts []string
	for _, side := range contract.Sides() {
		v, ok := w.Verdicts[side]
		switch {
		case !ok:
			parts = append(parts, side.String()+" no verdict")
		case v.Healthy:
			parts = append(parts, fmt.Sprintf("%s healthy (qps %.1f, lag p99 %d ms)", side, v.QPS, v.LagP99Ms))
		default:
			parts = append(parts, side.String()+" UNHEALTHY: "+strings.Join(v.Reasons, "; "))
		}
	}
	return strings.Join(parts, ", ") + "; active " + active.String()
}
