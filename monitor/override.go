package monitor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
)

// MaxOverride is the longest an override may last: a pin beats every health
// rule, so it must not be forgotten for months.
const MaxOverride = 7 * 24 * time.Hour

// OverrideRequest is what an operator asks for with `hotpair override set`.
type OverrideRequest struct {
	Service string
	Side    string
	Until   time.Time
	Reason  string
	By      string
}

// Validate checks the request at now.
func (r OverrideRequest) Validate(now time.Time) error {
	switch {
	case contract.ServiceByName(r.Service) == 0:
		return fmt.Errorf("service %q is not one of %s", r.Service, strings.Join(contract.ServiceNames(), ", "))
	case !isSide(r.Side):
		return fmt.Errorf("side %q is not one of %s", r.Side, strings.Join(contract.SideNames(), ", "))
	case strings.TrimSpace(r.Reason) == "":
		return errors.New("a reason is required")
	case !r.Until.After(now):
		return fmt.Errorf("the expiry %s is not in the future", r.Until.Format(time.RFC3339))
	case r.Until.Sub(now) > MaxOverride:
		return fmt.Errorf("the expiry %s is more than %s away", r.Until.Format(time.RFC3339), MaxOverride)
	}
	return nil
}

// SetOverride writes the override of a service, replacing any current one.
// The override znode (and its directory, when missing) is protected by the
// policy: with an operator identity only that identity may change it.
func SetOverride(conn *zk.Conn, paths contract.Paths, p ACLPolicy, r OverrideRequest, now time.Time) (contract.Override, error) {
	if err := r.Validate(now); err != nil {
		return contract.Override{}, err
	}
	side, _ := contract.ParseSide(r.Side)
	o := contract.Override{V: contract.ZNodeVersion, Side: side, Until: r.Until.UTC(), Reason: r.Reason, By: r.By}
	b, err := contract.Encode(o)
	if err != nil {
		return contract.Override{}, err
	}
	if err := ensureNode(conn, paths.Root, p.Root(), createOnly, false); err != nil {
		return contract.Override{}, err
	}
	if err := ensureNode(conn, paths.OverrideDir(), p.Override(), createOnly, false); err != nil {
		return contract.Override{}, err
	}
	at := paths.Override(contract.ServiceByName(r.Service))
	_, err = conn.Create(at, b, 0, p.Override())
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.Set(at, b, -1)
	}
	if err != nil {
		return contract.Override{}, operatorHint(zkErr("write", at, err))
	}
	return o, nil
}

// ClearOverride ends the override of a service now. It keeps the document,
// rewritten with until = now and the reason prefixed with "cleared", so
// `hotpair status` shows who ended which override and why. It returns
// ErrNoOverride when no override is in force.
func ClearOverride(conn *zk.Conn, paths contract.Paths, service contract.Service, by, reason string, now time.Time) (contract.Override, error) {
	at := paths.Override(service)
	o, version, err := ReadOverride(conn, paths, service)
	if err != nil {
		return contract.Override{}, err
	}
	if o == nil || !o.ActiveAt(now) {
		return contract.Override{}, fmt.Errorf("%w for %s", ErrNoOverride, service)
	}
	cleared := *o
	cleared.Until = now.UTC()
	cleared.By = by
	cleared.Reason = "cleared"
	if strings.TrimSpace(reason) != "" {
		cleared.Reason += ": " + reason
	}
	cleared.Reason += fmt.Sprintf(" (was: %s, by %s)", o.Reason, o.By)
	b, err := contract.Encode(cleared)
	if err != nil {
		return contract.Override{}, err
	}
	if _, err := conn.Set(at, b, version); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return contract.Override{}, fmt.Errorf("monitor: the override of %s changed while clearing it; look at it again", service)
		}
		return contract.Override{}, operatorHint(zkErr("write", at, err))
	}
	return cleared, nil
}

// ReadOverride returns the override document of a service (possibly expired)
// and its version, or nil when there is none. A document that does not
// decode is an error.
func ReadOverride(conn *zk.Conn, paths contract.Paths, service contract.Service) (*contract.Override, int32, error) {
	at := paths.Override(service)
	b, stat, err := conn.Get(at)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, absent, nil
	}
	if err != nil {
		return nil, 0, zkErr("read", at, err)
	}
	if len(b) == 0 {
		return nil, stat.Version, nil
	}
	o, err := contract.DecodeOverride(b)
	if err != nil {
		return nil, stat.Version, fmt.Errorf("monitor: %s: %w", at, err)
	}
	return &o, stat.Version, nil
}

func operatorHint(err error) error {
	if errors.Is(err, ErrACL) {
		return fmt.Errorf("%w (overrides are writable only by the operator identity: pass --auth user:password)", err)
	}
	return err
}

func isSide(name string) bool {
	_, err := contract.ParseSide(name)
	return err == nil
}
