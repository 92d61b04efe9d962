package monitor

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
)

// absent is the version of a selection znode that does not exist yet.
const absent int32 = -1

// writeSelection writes sel to its znode in ONE ZooKeeper multi: a check
// that the writer's candidate node (leaderNode, never modified, so version 0)
// still exists, plus a set of the selection at version (or a create when
// version is absent). ZooKeeper applies both or neither, so a writer whose
// leadership ended, or that read an older selection, changes nothing.
//
// It returns the selection's new version, or ErrFenced (the candidate node
// is gone: this writer no longer leads), ErrVersionConflict (the selection
// changed or appeared since it was read), ErrACL, or a connection error
// (after which the write may or may not have happened: re-read before
// trying again).
func writeSelection(conn *zk.Conn, paths contract.Paths, leaderNode string, sel contract.Selection, version int32, acl []zk.ACL) (int32, error) {
	p := paths.Selection(sel.Service)
	data, err := contract.Encode(sel)
	if err != nil {
		return 0, fmt.Errorf("monitor: encoding the selection of %s: %w", sel.Service, err)
	}
	check := &zk.CheckVersionRequest{Path: leaderNode, Version: 0}
	var write any = &zk.SetDataRequest{Path: p, Data: data, Version: version}
	if version == absent {
		write = &zk.CreateRequest{Path: p, Data: data, Acl: acl}
	}
	res, err := conn.Multi(check, write)
	if err == nil {
		if version == absent {
			return 0, nil
		}
		return res[1].Stat.Version, nil
	}
	if len(res) == 2 {
		// ZooKeeper reports the op that failed with its own code and the
		// others as rolled back.
		if e := res[0].Error; errors.Is(e, zk.ErrNoNode) || errors.Is(e, zk.ErrBadVersion) {
			return 0, fmt.Errorf("%w: check of %s: %v", ErrFenced, leaderNode, e)
		}
		if e := res[1].Error; errors.Is(e, zk.ErrBadVersion) || errors.Is(e, zk.ErrNodeExists) || errors.Is(e, zk.ErrNoNode) {
			return 0, fmt.Errorf("%w: %s: %v", ErrVersionConflict, p, e)
		}
	}
	return 0, zkErr("write", p, err)
}

// readSelection returns the selection of service and its version, or absent
// and a nil selection when there is none. A document that does not decode is
// returned as an error with its version, so a leader can still overwrite it.
func readSelection(conn *zk.Conn, paths contract.Paths, service contract.Service) (*contract.Selection, int32, error) {
	p := paths.Selection(service)
	b, stat, err := conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, absent, nil
	}
	if err != nil {
		return nil, 0, zkErr("read", p, err)
	}
	if len(b) == 0 {
		return nil, stat.Version, nil
	}
	sel, err := contract.DecodeSelection(b)
	if err != nil {
		return nil, stat.Version, fmt.Errorf("monitor: %s: %w", p, err)
	}
	return &sel, stat.Version, nil
}
