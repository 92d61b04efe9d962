package monitor

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

var (
	// ErrConfig is wrapped by every configuration error (LoadConfig,
	// Config.Validate, New).
	ErrConfig = errors.New("monitor: bad configuration")

	// ErrFenced is returned by a publication that ZooKeeper refused because
	// the writer's leader node is gone: the writer is no longer the leader.
	ErrFenced = errors.New("monitor: not the leader any more (fenced off)")

	// ErrVersionConflict is returned by a publication that ZooKeeper refused
	// because the selection changed since the writer read it: another writer
	// published in between.
	ErrVersionConflict = errors.New("monitor: selection changed since it was read")

	// ErrNotLeader is returned when a replica that is not the leader is asked
	// to publish.
	ErrNotLeader = errors.New("monitor: this replica is not the leader")

	// ErrACL is returned when ZooKeeper refuses an operation for lack of
	// permission: a missing or wrong digest identity, or znodes whose ACL
	// does not grant it.
	ErrACL = errors.New("monitor: ZooKeeper refused the operation (ACL)")

	// ErrNoOverride is returned by ClearOverride when the service has no
	// override in force.
	ErrNoOverride = errors.New("monitor: no override in force")

	// ErrBadGateRequest is returned by ParseGateQuery for a rollout-gate
	// question without a side or hold, or with a malformed one.
	ErrBadGateRequest = errors.New("monitor: bad gate request")

	// ErrKilled is returned by Run after Kill.
	ErrKilled = errors.New("monitor: killed")
)

// zkErr maps ZooKeeper's permission errors to ErrACL so callers can tell a
// configuration problem from an outage.
func zkErr(op, path string, err error) error {
	if errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) {
		return fmt.Errorf("%w: %s %s: %v", ErrACL, op, path, err)
	}
	return fmt.Errorf("monitor: %s %s: %w", op, path, err)
}
