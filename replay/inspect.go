package replay

import (
	"cmp"
	"errors"
	"io"
	"math/bits"
	"slices"
	"time"
)

// Inspection describes a recording.
type Inspection struct {
	File string `json:"file"`
	Meta Meta   `json:"meta"`
	// Complete is true when the recording was closed; Problem says what is
	// wrong with it otherwise (torn tail, unfinished).
	Complete  bool   `json:"complete"`
	Stopped   string `json:"stopped,omitempty"`
	Problem   string `json:"problem,omitempty"`
	FileBytes int64  `json:"file_bytes"`
	RawBytes  int64  `json:"raw_bytes"`
	TornBytes int64  `json:"torn_bytes,omitempty"`
	Blocks    int64  `json:"blocks"`
	Records   int64  `json:"records"`

	First    time.Time     `json:"first,omitzero"`
	Last     time.Time     `json:"last,omitzero"`
	Span     time.Duration `json:"span_ns"`
	MeanRate float64       `json:"mean_rate"`
	// PerSecond is the spread of records per second of record time.
	PerSecond RateSpread `json:"per_second"`
	// RateOverTime splits the span into at most 24 equal buckets.
	RateOverTime []RateBucket `json:"rate_over_time"`

	Keys       KeyStats         `json:"keys"`
	Partitions map[int32]int64  `json:"partitions"`
	Headers    map[string]int64 `json:"headers,omitempty"`
	Sizes      SizeStats        `json:"sizes"`
	OutOfOrder OrderStats       `json:"out_of_order"`
}

// RateBucket is the records whose timestamps fall in [Start, Start+Width).
type RateBucket struct {
	Start   time.Time     `json:"start"`
	Width   time.Duration `json:"width_ns"`
	Records int64         `json:"records"`
	Rate    float64       `json:"rate"`
}

// KeyStats counts keys.
type KeyStats struct {
	Distinct int64      `json:"distinct"`
	Null     int64      `json:"null"`
	Top      []KeyCount `json:"top"`
}

// KeyCount is one key and its records.
type KeyCount struct {
	Key     string `json:"key"`
	Records int64  `json:"records"`
}

// SizeStats are byte counts.
type SizeStats struct {
	KeyBytes    int64   `json:"key_bytes"`
	ValueBytes  int64   `json:"value_bytes"`
	HeaderBytes int64   `json:"header_bytes"`
	ValueMin    int     `json:"value_min"`
	ValueMax    int     `json:"value_max"`
	ValueMean   float64 `json:"value_mean"`
	// ValueP99 is an upper bound (the next power of two less one, at most
	// ValueMax) of the 99th percentile value size.
	ValueP99 int `json:"value_p99_upper"`
}

// OrderStats counts records out of timestamp order. File order is send
// order; across partitions some disorder is normal for a live recording,
// within a partition it means producers set timestamps out of order.
type OrderStats struct {
	// Records whose timestamp is before the newest timestamp before them.
	Records int64 `json:"records"`
	// MaxBehind is the largest such step back.
	MaxBehind time.Duration `json:"max_behind_ns"`
	// FirstIndex is the position (from 0) of the first such record, -1 if none.
	FirstIndex int64 `json:"first_index"`
	// WithinPartition counts steps back between records of the same partition.
	WithinPartition int64 `json:"within_partition"`
	// OffsetRegressions counts records whose offset is not above the previous
	// one of their partition (a recording concatenated or edited by hand).
	OffsetRegressions int64 `json:"offset_regressions"`
}

// TopKeys is how many keys Inspect lists.
const TopKeys = 10

type inspector struct {
	in         Inspection
	keys       map[string]int64
	seconds    map[int64]int64
	sizeLog2   [65]int64
	newest     time.Time
	partLastTS map[int32]time.Time
	partLastOf map[int32]int64
}

// Inspect reads the whole recording at path and describes it.
func Inspect(path string) (*Inspection, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := &inspector{keys: map[string]int64{}, seconds: map[int64]int64{},
		partLastTS: map[int32]time.Time{}, partLastOf: map[int32]int64{}}
	s.in = Inspection{File: path, Meta: r.Meta(), Partitions: map[int32]int64{}, Headers: map[string]int64{}}
	s.in.OutOfOrder.FirstIndex = -1
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		s.add(rec)
	}
	s.finish(r.Status())
	return &s.in, nil
}

func (s *inspector) add(rec *Record) {
	in := &s.in
	if in.Records == 0 {
		in.First, in.Last, s.newest = rec.Timestamp, rec.Timestamp, rec.Timestamp
		in.Sizes.ValueMin = len(rec.Value)
	}
	in.First, in.Last = minTime(in.First, rec.Timestamp), maxTime(in.Last, rec.Timestamp)
	s.order(rec)
	in.Records++
	if rec.Key == nil {
		in.Keys.Null++
	} else {
		s.keys[string(rec.Key)]++
	}
	in.Partitions[rec.Partition]++
	s.seconds[rec.Timestamp.Unix()]++
	in.Sizes.KeyBytes += int64(len(rec.Key))
	in.Sizes.ValueBytes += int64(len(rec.Value))
	in.Sizes.ValueMin, in.Sizes.ValueMax = min(in.Sizes.ValueMin, len(rec.Value)), max(in.Sizes.ValueMax, len(rec.Value))
	s.sizeLog2[bits.Len(uint(len(rec.Value)))]++
	for _, h := range rec.Headers {
		in.Headers[h.Key]++
		in.Sizes.HeaderBytes += int64(len(h.Key) + len(h.Value))
	}
}

func (s *inspector) order(rec *Record) {
	o := &s.in.OutOfOrder
	if behind := s.newest.Sub(rec.Timestamp); behind > 0 {
		o.Records++
		o.MaxBehind = max(o.MaxBehind, behind)
		if o.FirstIndex < 0 {
			o.FirstIndex = s.in.Records
		}
	} else {
		s.newest = rec.Timestamp
	}
	if last, ok := s.partLastTS[rec.Partition]; ok {
		if rec.Timestamp.Before(last) {
			o.WithinPartition++
		}
		if rec.Offset <= s.partLastOf[rec.Partition] {
			o.OffsetRegressions++
		}
	}
	s.partLastTS[rec.Partition], s.partLastOf[rec.Partition] = rec.Timestamp, rec.Offset
}

func (s *inspector) finish(st Status) {
	in := &s.in
	in.Complete, in.Blocks, in.FileBytes, in.RawBytes, in.TornBytes = st.Complete, st.Blocks, st.Bytes+st.TornBytes, st.RawBytes, st.TornBytes
	in.Stopped = st.Trailer.Stopped
	if st.Problem != nil {
		in.Problem = st.Problem.Error()
	}
	in.Span = in.Last.Sub(in.First)
	if in.Records > 1 && in.Span > 0 {
		in.MeanRate = float64(in.Records-1) / in.Span.Seconds()
	}
	if in.Records > 0 {
		in.Sizes.ValueMean = float64(in.Sizes.ValueBytes) / float64(in.Records)
		in.Sizes.ValueP99 = min(p99Upper(s.sizeLog2[:], in.Records), in.Sizes.ValueMax)
		in.PerSecond = spreadOf(s.perSecond(), 0)
		in.RateOverTime = s.rateOverTime()
	}
	in.Keys.Distinct = int64(len(s.keys))
	for k, n := range s.keys {
		in.Keys.Top = append(in.Keys.Top, KeyCount{Key: k, Records: n})
	}
	slices.SortFunc(in.Keys.Top, func(a, b KeyCount) int {
		return cmp.Or(cmp.Compare(b.Records, a.Records), cmp.Compare(a.Key, b.Key))
	})
	in.Keys.Top = in.Keys.Top[:min(len(in.Keys.Top), TopKeys)]
}

// perSecond returns the records of every second from the first to the last.
func (s *inspector) perSecond() []int64 {
	first, last := s.in.First.Unix(), s.in.Last.Unix()
	out := make([]int64, last-first+1)
	for sec, n := range s.seconds {
		out[sec-first] = n
	}
	return out
}

// bucketWidths are the widths rateOverTime may use.
var bucketWidths = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour}

func (s *inspector) rateOverTime() []RateBucket {
	start := s.in.First.Truncate(time.Second)
	span := s.in.Last.Sub(start)
	width := bucketWidths[len(bucketWidths)-1]
	for _, w := range bucketWidths {
		if span/w < 24 {
			width = w
			break
		}
	}
	out := make([]RateBucket, int(span/width)+1)
	for i := range out {
		out[i] = RateBucket{Start: start.Add(time.Duration(i) * width), Width: width}
	}
	for sec, n := range s.seconds {
		out[time.Unix(sec, 0).Sub(start)/width].Records += n
	}
	for i := range out {
		out[i].Rate = float64(out[i].Records) / width.Seconds()
	}
	// The last bucket covers only the seconds up to the last record.
	last := &out[len(out)-1]
	if covered := time.Unix(s.in.Last.Unix()+1, 0).Sub(last.Start); covered < width {
		last.Width = covered
		last.Rate = float64(last.Records) / covered.Seconds()
	}
	return out
}

func p99Upper(log2 []int64, total int64) int {
	var seen int64
	for i, n := range log2 {
		if seen += n; float64(seen) >= 0.99*float64(total) {
			if i == 0 {
				return 0
			}
			return 1<<i - 1
		}
	}
	return 0
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
