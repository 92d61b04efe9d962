package selector

import (
	"fmt"

	"github.com/hotpair/hotpair/contract"
)

// This file is the pure core of the watcher: what one read of a selection
// znode means for the snapshot. No I/O, no clock; the shell in selector.go
// reads, calls judge, and carries out the verdict.

// read is one read of a selection znode.
type read struct {
	exists bool
	mzxid  int64 // zxid of the write that produced data
	data   []byte
}

// znodeState is what the watcher remembers of one service's znode.
type znodeState struct {
	applied  write // the selection the snapshot holds; zero while default
	rejected write // the last content rejected
	missing  bool  // the znode was missing at the last read
}

// write is one write of a znode, as read: its mzxid and its content. The
// content is part of it because an ensemble rebuilt empty counts zxids
// from the start again, and may give a new write the mzxid of one read
// before it.
type write struct {
	mzxid int64
	data  string
}

func (w write) zero() bool { return w == write{} }

// verdict is what a read means.
type verdict uint8

const (
	// verdictApply: a new valid selection; it replaces the service's entry.
	verdictApply verdict = 1 + iota
	// verdictSame: the selection the snapshot already holds (a re-read
	// after a reconnect).
	verdictSame
	// verdictRejected: new content that is not a valid selection of this
	// service: keep the snapshot, count and log it.
	verdictRejected
	// verdictRejectedAgain: the same bad content read again: keep, no recount.
	verdictRejectedAgain
	// verdictDeleted: the znode went away: keep the snapshot, count and log it.
	verdictDeleted
	// verdictMissing: no znode, and its absence is already known (or nothing
	// was ever read): keep the snapshot quietly.
	verdictMissing
)

func (v verdict) String() string {
	return [...]string{"unset", "apply", "same", "rejected", "rejected_again", "deleted", "missing"}[v]
}

// fresh reports whether after this verdict the snapshot matches the znode.
func (v verdict) fresh() bool { return v == verdictApply || v == verdictSame }

// judge decides what read r of svc's znode means, given what was known
// before. On verdictApply it returns the decoded selection and its side; on
// verdictRejected the reason it is not valid.
func judge(st znodeState, svc contract.Service, r read) (znodeState, verdict, *contract.Selection, contract.Side, error) {
	if !r.exists {
		wasThere := !st.missing && (!st.applied.zero() || !st.rejected.zero())
		st.missing = true
		if wasThere {
			return st, verdictDeleted, nil, 0, nil
		}
		return st, verdictMissing, nil, 0, nil
	}
	st.missing = false
	w := write{mzxid: r.mzxid, data: string(r.data)}
	switch w {
	case st.applied:
		return st, verdictSame, nil, 0, nil
	case st.rejected:
		return st, verdictRejectedAgain, nil, 0, nil
	}
	doc, side, err := decodeFor(svc, r.data)
	if err != nil {
		st.rejected = w
		return st, verdictRejected, nil, 0, err
	}
	st.applied = w
	return st, verdictApply, doc, side, nil
}

// decodeFor decodes a selection and checks that it is svc's.
func decodeFor(svc contract.Service, b []byte) (*contract.Selection, contract.Side, error) {
	doc, err := contract.DecodeSelection(b)
	if err != nil {
		return nil, 0, err
	}
	if doc.Service != 0 && doc.Service != svc {
		return nil, 0, fmt.Errorf("%w: service=%q in the znode of %s", contract.ErrInvalidDocument, doc.Service, svc)
	}
	return &doc, doc.Active, nil
}

// rejectReason is the reason label of a read that was not applied.
func rejectReason(v verdict) string {
	if v == verdictDeleted {
		return "deleted"
	}
	return "malformed"
}
