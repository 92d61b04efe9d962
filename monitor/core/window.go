package core

import (
	"cmp"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// Outcome says what the aggregation did with one sample.
type Outcome int

// Outcomes of Aggregator.Add.
const (
	// OutcomeMerged: the sample was merged into the current window.
	OutcomeMerged Outcome = 1 + iota
	// OutcomeDuplicate: the instance already reported this window_start (a
	// consumer re-reading after a reconnect); nothing was counted.
	OutcomeDuplicate
	// OutcomeIgnored: not a live pipeline's sample (role dark, or an unknown
	// stage or side); nothing was counted.
	OutcomeIgnored
)

func (o Outcome) String() string {
	switch o {
	case OutcomeMerged:
		return "merged"
	case OutcomeDuplicate:
		return "duplicate"
	case OutcomeIgnored:
		return "ignored"
	}
	return "unknown"
}

// Counters count the aggregation steps since the aggregator was made. Every
// sample is exactly one step, whatever its outcome; nothing else is a step.
type Counters struct {
	Steps      uint64
	Merged     uint64
	Duplicates uint64
	Ignored    uint64
}

// BuildSeen is a build running on a side and when the monitor first saw it.
type BuildSeen struct {
	Build string
	// FirstSeen is the receive time of the first sample with this build; zero
	// when the build was already running as the monitor started (its age is
	// unknown and it counts as established).
	FirstSeen time.Time
}

// WindowStats is the merge of one (service, side)'s samples over one window.
type WindowStats struct {
	Start, End time.Time
	Samples    int   // samples merged in this window
	Duplicates int   // duplicate samples dropped in this window
	Events     int64 // sum of events over the merged samples
	// QPS is Events over the window's length.
	QPS float64
	// PrevQPS is the QPS of the window before this one, when HasPrev (not
	// in a series' first window): input_rate_low does not judge a window in
	// which both sides' rates fell, or both started, together — traffic
	// stopping or starting upstream (see inputRateLow).
	PrevQPS float64
	HasPrev bool
	// Lag merges the lag histograms of every merged sample.
	Lag      contract.LagHistogram
	LagMaxMs int64
	// LagP99Ms is the merged p99: the upper bound of the histogram bucket
	// holding it, capped by LagMaxMs (the p99 is never above the max).
	LagP99Ms int64
	// UpstreamLagP99Ms is, for a service, the same side's aggregator p99
	// lag in the same window (set by the Engine): an aggregator draining a
	// backlog floods its side's services with SpendEvents whose own lag is
	// small, because they were just emitted.
	UpstreamLagP99Ms int64
	// LastSample is when the latest sample of this (service, side) arrived,
	// in any window; zero if none ever did.
	LastSample time.Time
	// Instances is how many instances reported within the heartbeat timeout.
	Instances int
	// TopicPartitions is the input topic's partition count as the instances
	// report it (0: unknown); Unassigned lists (up to 16) partitions no live
	// instance has, UnassignedCount counts them all.
	TopicPartitions int32
	Unassigned      []int32
	UnassignedCount int
	// UnassignedSince is when some partitions became unassigned; zero while
	// all are assigned.
	UnassignedSince time.Time
	// Builds are the builds the live instances run, oldest first.
	Builds []BuildSeen
}

// NewestBuild returns the most recently first-seen running build, "" if none.
func (s WindowStats) NewestBuild() BuildSeen {
	if len(s.Builds) == 0 {
		return BuildSeen{}
	}
	return s.Builds[len(s.Builds)-1]
}

// Aggregator merges health samples per (service, side) into windows. It
// keeps two kinds of state: the accumulators of the current window (reset by
// Close) and what outlives windows: per instance its latest partitions,
// build and recently seen window starts, the time of the last sample, since
// when partitions are unassigned, and when each build was first seen.
//
// Its only input is Add; Close returns results in a type Add cannot take.
type Aggregator struct {
	rules       Rules
	retention   time.Duration // how far back an instance's window starts are remembered
	buildMemory time.Duration // how long a build that stopped running is remembered
	start       time.Time     // start of the current window
	warmupUntil time.Time     // builds first seen before this were already running
	series      map[Key]*series
	counters    Counters
}

type series struct {
	// current window
	samples, dups int
	events        int64
	lag           contract.LagHistogram
	lagMax        int64
	// across windows
	prevQPS   float64 // the QPS of the last closed window
	closed    bool    // a window of this series has been closed
	lastSeen  time.Time
	instances map[string]*instance
	cov       coverage
	builds    map[string]*buildState
}

type instance struct {
	lastSeen   time.Time
	live       bool    // its partitions are counted in the coverage
	starts     []int64 // window starts (unix ns) seen recently, ascending
	partitions []int32 // as of its latest sample
	build      string
	topicParts int32
}

type buildState struct{ firstSeen, lastSeen time.Time }

// NewAggregator starts the first window at start.
func NewAggregator(cfg Config, start time.Time) *Aggregator {
	return &Aggregator{
		rules:       cfg.Rules,
		retention:   2*cfg.Window + cfg.Rules.HeartbeatTimeout(),
		buildMemory: max(2*cfg.Window+cfg.Rules.HeartbeatTimeout(), cfg.Stagger.Period),
		start:       start,
		warmupUntil: start.Add(cfg.Rules.HeartbeatTimeout()),
		series:      map[Key]*series{},
	}
}

// Counters returns the step counters.
func (a *Aggregator) Counters() Counters { return a.counters }

// WindowStart is the start of the current window.
func (a *Aggregator) WindowStart() time.Time { return a.start }

// Add merges one sample received at receivedAt into the current window.
// A sample is a duplicate when its instance already reported the same
// window_start, or one older than what the aggregator still remembers.
func (a *Aggregator) Add(s *contract.HealthSample, receivedAt time.Time) Outcome {
	a.counters.Steps++
	if s.Role != contract.RoleLive || !s.Service.Valid() || !s.Side.Valid() || s.Instance == "" {
		a.counters.Ignored++
		return OutcomeIgnored
	}
	sr := a.seriesOf(Key{s.Service, s.Side})
	in := sr.instances[s.Instance]
	if in == nil {
		in = &instance{}
		sr.instances[s.Instance] = in
	}
	fresh, newest := in.remember(s.WindowStart.UnixNano(), a.retention)
	if !fresh {
		sr.dups++
		a.counters.Duplicates++
		return OutcomeDuplicate
	}
	a.counters.Merged++
	sr.samples++
	sr.events += s.Events
	sr.lag.Merge(&s.LagMs)
	sr.lagMax = max(sr.lagMax, s.LagMsMax)
	if receivedAt.After(sr.lastSeen) {
		sr.lastSeen = receivedAt
	}
	if !newest {
		// a late sample of an earlier window: its events count, but the
		// instance's partitions and build stay those of its newest sample
		if receivedAt.After(in.lastSeen) {
			in.lastSeen = receivedAt
		}
		return OutcomeMerged
	}
	a.updateInstance(sr, in, s, receivedAt)
	return OutcomeMerged
}

func (a *Aggregator) seriesOf(k Key) *series {
	sr := a.series[k]
	if sr == nil {
		sr = &series{instances: map[string]*instance{}, builds: map[string]*buildState{}}
		a.series[k] = sr
	}
	return sr
}

// updateInstance moves the instance's partitions and build to its latest sample.
func (a *Aggregator) updateInstance(sr *series, in *instance, s *contract.HealthSample, at time.Time) {
	if in.live {
		sr.cov.add(in.partitions, -1)
	}
	in.partitions = append(in.partitions[:0], s.Partitions...)
	in.topicParts, in.build, in.lastSeen, in.live = s.TopicPartitions, s.Build, at, true
	sr.cov.setTotal(s.TopicPartitions)
	sr.cov.add(in.partitions, +1)
	sr.cov.settle(at)
	b := sr.builds[s.Build]
	if b == nil {
		b = &buildState{firstSeen: at}
		if at.Before(a.warmupUntil) {
			b.firstSeen = time.Time{}
		}
		sr.builds[s.Build] = b
	}
	b.lastSeen = at
}

// remember records a window start of the instance and reports whether it
// is new (not seen before) and whether it is the newest one so far. Starts
// older than retention before the newest count as seen.
func (in *instance) remember(ns int64, retention time.Duration) (fresh, newest bool) {
	n := len(in.starts)
	if n > 0 && ns <= in.starts[n-1] {
		if ns < in.starts[n-1]-int64(retention) {
			return false, false
		}
		i, found := slices.BinarySearch(in.starts, ns)
		if found {
			return false, false
		}
		in.starts = slices.Insert(in.starts, i, ns)
		return true, false
	}
	in.starts = append(in.starts, ns)
	horizon := ns - int64(retention)
	drop := 0
	for drop < len(in.starts) && in.starts[drop] < horizon {
		drop++
	}
	if drop > 0 {
		in.starts = append(in.starts[:0], in.starts[drop:]...)
	}
	return true, true
}

// Close ends the current window at now, returns the stats of every
// (service, side) ever seen, and starts the next window at now. Instances
// silent for longer than the heartbeat timeout stop covering partitions.
func (a *Aggregator) Close(now time.Time) map[Key]WindowStats {
	out := make(map[Key]WindowStats, len(a.series))
	for k, sr := range a.series {
		a.expire(sr, now)
		st := sr.stats(a.start, now)
		st.PrevQPS, st.HasPrev = sr.prevQPS, sr.closed
		out[k] = st
		sr.prevQPS, sr.closed = st.QPS, true
		sr.reset()
	}
	a.start = now
	return out
}

// expire uncounts the partitions of instances that stopped reporting, in
// the order they went silent, and forgets long-gone instances, and builds
// not running for longer than the stagger period (back again, they are new).
func (a *Aggregator) expire(sr *series, now time.Time) {
	timeout := a.rules.HeartbeatTimeout()
	var gone []*instance
	for name, in := range sr.instances {
		switch {
		case now.Sub(in.lastSeen) > a.retention:
			if in.live {
				gone = append(gone, in)
			}
			delete(sr.instances, name)
		case in.live && now.Sub(in.lastSeen) > timeout:
			gone = append(gone, in)
		}
	}
	slices.SortFunc(gone, func(x, y *instance) int { return x.lastSeen.Compare(y.lastSeen) })
	for _, in := range gone {
		sr.cov.add(in.partitions, -1)
		in.live = false
		sr.cov.settle(in.lastSeen.Add(timeout))
	}
	for b, st := range sr.builds {
		if now.Sub(st.lastSeen) > a.buildMemory {
			delete(sr.builds, b)
		}
	}
}

func (sr *series) stats(start, end time.Time) WindowStats {
	st := WindowStats{
		Start: start, End: end,
		Samples: sr.samples, Duplicates: sr.dups, Events: sr.events,
		Lag: sr.lag, LagMaxMs: sr.lagMax,
		LastSample:      sr.lastSeen,
		TopicPartitions: sr.cov.total,
		UnassignedCount: sr.cov.missing,
		UnassignedSince: sr.cov.since,
		Unassigned:      sr.cov.uncovered(16),
	}
	if span := end.Sub(start).Seconds(); span > 0 {
		st.QPS = float64(sr.events) / span
	}
	st.LagP99Ms = sr.lag.Quantile(0.99)
	if sr.lagMax > 0 && sr.lagMax < st.LagP99Ms {
		st.LagP99Ms = sr.lagMax
	}
	running := map[string]bool{}
	for _, in := range sr.instances {
		if in.live {
			st.Instances++
			running[in.build] = true
		}
	}
	for b := range running {
		st.Builds = append(st.Builds, BuildSeen{Build: b, FirstSeen: sr.builds[b].firstSeen})
	}
	slices.SortFunc(st.Builds, func(x, y BuildSeen) int {
		return cmp.Or(x.FirstSeen.Compare(y.FirstSeen), cmp.Compare(x.Build, y.Build))
	})
	return st
}

func (sr *series) reset() {
	sr.samples, sr.dups, sr.events, sr.lagMax = 0, 0, 0, 0
	sr.lag = contract.LagHistogram{}
}
