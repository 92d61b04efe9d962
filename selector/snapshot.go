package selector

import (
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Snapshot is one immutable view of every service's selection. The Selector
// replaces it as a whole; a holder may keep using an old one.
type Snapshot struct {
	// Indexed by Service; index 0 (and any unwatched service) holds the
	// default side, so Active never answers an unset side.
	sides  [contract.NumServices + 1]contract.Side
	epochs [contract.NumServices + 1]int64 // -1 while the side is the default
	// docs are the selection documents read from ZooKeeper (nil: default).
	docs   [contract.NumServices + 1]*contract.Selection
	readAt [contract.NumServices + 1]time.Time

	tag    Tag
	encTag string

	// changed is closed when a snapshot with another tag replaces this one.
	// Snapshots that replace each other with the same tag share it.
	changed chan struct{}
}

// newDefaultSnapshot answers def for every service.
func newDefaultSnapshot(def contract.Side) *Snapshot {
	s := &Snapshot{changed: make(chan struct{})}
	for i := range s.sides {
		s.sides[i], s.epochs[i] = def, -1
	}
	s.seal()
	return s
}

// seal computes the tag of a snapshot under construction.
func (s *Snapshot) seal() {
	var t Tag
	for _, svc := range contract.Services() {
		t = t.WithSide(svc, s.sides[svc], s.epochs[svc])
	}
	s.tag, s.encTag = t, t.String()
}

// with returns a copy of s with svc's selection replaced by doc. The copy
// shares s's changed channel when the tag is the same; the caller closes
// s.changed otherwise.
func (s *Snapshot) with(svc contract.Service, side contract.Side, doc *contract.Selection, readAt time.Time) *Snapshot {
	n := *s
	n.sides[svc], n.epochs[svc], n.docs[svc], n.readAt[svc] = side, doc.Epoch, doc, readAt
	n.seal()
	if n.encTag != s.encTag {
		n.changed = make(chan struct{})
	}
	return &n
}

// Active returns the side to read svc from. An unset or unwatched service
// answers the default side. It does not allocate.
func (s *Snapshot) Active(svc contract.Service) contract.Side {
	if svc > contract.NumServices {
		return s.sides[0]
	}
	return s.sides[svc]
}

// Epoch returns the epoch of svc's selection; ok is false while the side is
// the default rather than read from ZooKeeper.
func (s *Snapshot) Epoch(svc contract.Service) (epoch int64, ok bool) {
	if svc > contract.NumServices || s.epochs[svc] < 0 {
		return 0, false
	}
	return s.epochs[svc], true
}

// IsDefault reports whether svc answers the configured default side because
// no selection has been read for it from ZooKeeper yet (or it is not watched).
func (s *Snapshot) IsDefault(svc contract.Service) bool {
	return svc > contract.NumServices || s.docs[svc] == nil
}

// Selection returns the document svc's side was read from, nil while the
// side is the default. The document must not be modified.
func (s *Snapshot) Selection(svc contract.Service) *contract.Selection {
	if svc > contract.NumServices {
		return nil
	}
	return s.docs[svc]
}

// ReadAt returns when svc's selection was read (zero while default).
func (s *Snapshot) ReadAt(svc contract.Service) time.Time {
	if svc > contract.NumServices {
		return time.Time{}
	}
	return s.readAt[svc]
}

// Tag returns the snapshot as a request tag.
func (s *Snapshot) Tag() Tag { return s.tag }

// TagString returns the encoded tag; it is computed once per snapshot, so
// this does not allocate.
func (s *Snapshot) TagString() string { return s.encTag }

// Changed returns a channel that is closed once a snapshot with a different
// tag (another side or epoch for some service) has replaced this one.
func (s *Snapshot) Changed() <-chan struct{} { return s.changed }
