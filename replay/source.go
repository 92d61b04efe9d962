package replay

import (
	"errors"
	"hash/fnv"
	"io"
)

// source reads a recording for a player: it applies the filter and the
// --percent selection, and starts over for --loop.
type source struct {
	path    string
	filter  Filter
	percent float64 // 0: keep all
	r       *Reader
	meta    Meta

	read, filtered, skipped int64
	passes                  int
	problem                 error // how the recording ended, if not closed
}

func openSource(path string, f Filter, percent float64) (*source, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	return &source{path: path, filter: f, percent: percent, r: r, meta: r.Meta(), passes: 1}, nil
}

// next returns the next record to play, or io.EOF at the end of a pass.
func (s *source) next() (*Record, error) {
	for {
		rec, err := s.r.Next()
		if errors.Is(err, io.EOF) {
			if st := s.r.Status(); st.Problem != nil {
				s.problem = st.Problem
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		s.read++
		if !s.filter.Match(rec) {
			s.filtered++
			continue
		}
		if s.percent > 0 && !KeepPercent(rec, s.percent) {
			s.skipped++
			continue
		}
		return rec, nil
	}
}

// rewind starts a new pass from the recording's start.
func (s *source) rewind() error {
	s.r.Close()
	r, err := Open(s.path)
	if err != nil {
		return err
	}
	s.r = r
	s.passes++
	return nil
}

func (s *source) close() { s.r.Close() }

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
