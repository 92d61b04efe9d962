package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// SetTarget validates d and writes it at /dark/<name>, replacing any
// document there. The document and its directory are protected by the
// policy as overrides are: with an operator identity, only it may change
// or delete them; everyone may read them.
func SetTarget(conn *zk.Conn, paths contract.Paths, p monitor.ACLPolicy, d contract.DarkTarget) error {
	if err := d.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := zkutil.EnsurePath(conn, paths.Root, p.Root()); err != nil {
		return aclErr(paths.Root, err)
	}
	if _, err := conn.Create(paths.DarkDir(), nil, 0, p.Dark()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return aclErr(paths.DarkDir(), err)
	}
	at := paths.Dark(d.Name)
	_, err = conn.Create(at, b, 0, p.Dark())
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.Set(at, b, -1)
	}
	return aclErr(at, err)
}

// ClearTarget deletes the document of target name: the dispatchers stop
// sending to it within a second. ErrNoTarget when there is none.
func ClearTarget(conn *zk.Conn, paths contract.Paths, name string) error {
	at := paths.Dark(name)
	err := conn.Delete(at, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrNoTarget, name)
	}
	return aclErr(at, err)
}

// ReadTarget returns the document of target name (nil when none).
func ReadTarget(conn *zk.Conn, paths contract.Paths, name string) (*contract.DarkTarget, error) {
	b, _, err := conn.Get(paths.Dark(name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dispatch: reading %s: %w", paths.Dark(name), err)
	}
	d, err := contract.DecodeDarkTarget(b)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %s: %w", paths.Dark(name), err)
	}
	return &d, nil
}

// TargetStatus is one target as `hotpair dark status` shows it: its
// document (or why it does not decode) and what a dispatcher of its source
// side makes of it now.
type TargetStatus struct {
	Name     string               `json:"name"`
	Doc      *contract.DarkTarget `json:"document,omitempty"`
	Error    string               `json:"error,omitempty"`
	Active   bool                 `json:"active"`
	Sending  bool                 `json:"sending"`
	Fraction float64              `json:"fraction"`
	Paused   Reason               `json:"paused,omitempty"`
	Detail   string               `json:"detail,omitempty"`
	// LiveInstances and DarkInstances are the registry's aggregator counts
	// (relative targets).
	LiveInstances int `json:"live_instances,omitempty"`
	DarkInstances int `json:"dark_instances,omitempty"`
}

// ReadStatus reads every target once (no watches) and plans it at now.
func ReadStatus(conn *zk.Conn, paths contract.Paths, now time.Time) ([]TargetStatus, error) {
	f := newFollower(func() *zk.Conn { return conn }, paths, "")
	f.watch = false
	obs, err := f.readAll()
	if err != nil {
		return nil, err
	}
	out := make([]TargetStatus, 0, len(obs))
	for _, o := range obs {
		p := PlanTarget(o, Plan{}, now)
		st := TargetStatus{Name: o.Name, Doc: o.Doc, Active: p.Active, Sending: p.Sending(), Fraction: p.Fraction,
			Paused: p.Paused, Detail: p.Detail, LiveInstances: p.Live, DarkInstances: p.Dark}
		if o.DocErr != nil {
			st.Error = o.DocErr.Error()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b TargetStatus) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func aclErr(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoAuth):
		return fmt.Errorf("%w: %s: %v", ErrACL, p, err)
	}
	return fmt.Errorf("dispatch: %s: %w", p, err)
}
