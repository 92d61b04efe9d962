package replay

import (
	"errors"
	"hash/fnv"
	"io"
)

// source reads a recording for a player: it applies the filter and the
// --percent selection, and starts over for --loop. A goroutine of its own
// reads and decodes ahead, in batches, so that decoding overlaps sending;
// only the player's goroutine calls its methods.
type source struct {
	path    string
	filter  Filter
	percent float64 // 0: keep all
	meta    Meta

	batches chan sourceBatch
	stop    chan struct{}
	cur     []*Record

	read, filtered, skipped int64
	passes                  int
	problem                 error // how the recording ended, if not closed
}

// sourceBatch is what the read-ahead goroutine hands over: records kept,
// counts, and at the end of a pass its outcome.
type sourceBatch struct {
	recs                    []*Record
	read, filtered, skipped int64
	end                     bool  // the pass is over
	err                     error // a corrupt recording
	problem                 error // the recording was not closed
}

const sourceBatchSize = 512

func openSource(path string, f Filter, percent float64) (*source, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	s := &source{path: path, filter: f, percent: percent, meta: r.Meta(), passes: 1}
	s.start(r)
	return s, nil
}

func (s *source) start(r *Reader) {
	s.batches, s.stop = make(chan sourceBatch, 8), make(chan struct{})
	go s.readAhead(r, s.batches, s.stop)
}

// readAhead reads one pass of the recording into batches; it owns r.
func (s *source) readAhead(r *Reader, out chan<- sourceBatch, stop <-chan struct{}) {
	defer r.Close()
	b := sourceBatch{recs: make([]*Record, 0, sourceBatchSize)}
	for {
		rec, err := r.Next()
		if err != nil {
			b.end = true
			if errors.Is(err, io.EOF) {
				b.problem = r.Status().Problem
			} else {
				b.err = err
			}
		} else {
			b.read++
			switch {
			case !s.filter.Match(rec):
				b.filtered++
			case s.percent > 0 && !KeepPercent(rec, s.percent):
				b.skipped++
			default:
				b.recs = append(b.recs, rec)
			}
		}
		if b.end || len(b.recs) == sourceBatchSize {
			select {
			case out <- b:
			case <-stop:
				return
			}
			if b.end {
				return
			}
			b = sourceBatch{recs: make([]*Record, 0, sourceBatchSize)}
		}
	}
}

// next returns the next record to play, or io.EOF at the end of a pass.
func (s *source) next() (*Record, error) {
	for len(s.cur) == 0 {
		b, ok := <-s.batches
		if !ok {
			return nil, io.EOF
		}
		s.read, s.filtered, s.skipped = s.read+b.read, s.filtered+b.filtered, s.skipped+b.skipped
		s.cur = b.recs
		if b.end {
			close(s.stop)
			s.batches = closedBatches
			if b.problem != nil {
				s.problem = b.problem
			}
			if b.err != nil {
				return nil, b.err
			}
			if len(s.cur) == 0 {
				return nil, io.EOF
			}
		}
	}
	rec := s.cur[0]
	s.cur = s.cur[1:]
	return rec, nil
}

// closedBatches is a closed channel: a finished pass reads as io.EOF.
var closedBatches = func() chan sourceBatch { c := make(chan sourceBatch); close(c); return c }()

// rewind starts a new pass from the recording's start.
func (s *source) rewind() error {
	s.close()
	r, err := Open(s.path)
	if err != nil {
		return err
	}
	s.cur = nil
	s.start(r)
	s.passes++
	return nil
}

// close stops the read-ahead goroutine (it closes its reader).
func (s *source) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
}

// KeepPercent reports whether a --percent selection of percent keeps rec. The
// choice depends on the record's key only (on its value for a record without
// key), through a fixed hash that is independent of the partitioner's, so it
// is the same on every target, in every run and every build, and it keeps or
// drops a key's records together.
func KeepPercent(rec *Record, percent float64) bool {
	h := fnv.New64a()
	h.Write([]byte("hotpair-replay/percent\x00"))
	if rec.Key != nil {
		h.Write(rec.Key)
	} else {
		h.Write(rec.Value)
	}
	return float64(mix64(h.Sum64())%1_000_000) < percent*10_000
}

// mix64 is the splitmix64 finaliser: it spreads fnv's low bits, which are
// weak for short keys that differ only at the end.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}
