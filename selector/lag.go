package selector

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
)

// ViewLag is how far one view (one side, one topic) is behind its topic.
type ViewLag struct {
	Side    string `json:"side"`
	Service string `json:"service"`
	Topic   string `json:"topic"`
	// Partitions is the topic's partition count as last measured.
	Partitions int `json:"partitions"`
	// RecordsBehind is the number of records between what the view has
	// applied and the end offsets last measured (EndOffsetsAt).
	RecordsBehind int64 `json:"records_behind"`
	// CaughtUp: nothing behind as of EndOffsetsAt.
	CaughtUp bool `json:"caught_up"`
	// CaughtUpOnce: every partition has reached its end at least once since
	// the views started; until then the view may still be recovering.
	CaughtUpOnce bool `json:"caught_up_once"`
	// CaughtUpAt is when the view was last seen caught up (zero: never).
	CaughtUpAt time.Time `json:"caught_up_at"`
	// TimeBehind is 0 when caught up, else how long since the view last had
	// everything its topic held (since the start while it never had).
	TimeBehind time.Duration `json:"time_behind_ns"`
	// Records is how many records the view applied since it started.
	Records int64 `json:"records"`
	// LastRecordTime is the timestamp of the newest record applied.
	LastRecordTime time.Time `json:"last_record_time"`
	// EndOffsetsAt is when the topic's end offsets were last measured;
	// it falls behind while the cluster is unreachable.
	EndOffsetsAt time.Time `json:"end_offsets_at"`
	// Error is the last error reaching the cluster or the topic, if the last
	// measurement failed.
	Error string `json:"error,omitempty"`
}

// lagTracker follows one side's consumed and end offsets. The consumer and
// the measuring goroutine write it; reports read it.
type lagTracker struct {
	changes    *changes.Feed // told about every consumed fetch and measurement
	mu         sync.Mutex
	started    time.Time
	topics     [contract.NumServices + 1]*topicLag
	measuredAt time.Time // last successful measurement of end offsets
	err        string    // error of the last failed request, cleared by a success
}

type topicLag struct {
	name string
	// listed: the topic's end offsets were measured at least once, so parts
	// holds every partition. Until then the partitions known are only those
	// fetched from, and the view is never caught up: a partition not yet
	// fetched may hold records.
	listed     bool
	parts      map[int32]*partLag
	err        string // the topic's error at the last measurement
	records    int64
	lastRecord time.Time
	caughtOnce bool
	caughtAt   time.Time
}

type partLag struct {
	next, start, end int64
	reached          bool // next has reached an end offset at least once
}

func newLagTracker(topics [contract.NumServices + 1]string, now time.Time, changes *changes.Feed) *lagTracker {
	l := &lagTracker{started: now, changes: changes}
	for _, svc := range contract.Services() {
		l.topics[svc] = &topicLag{name: topics[svc], parts: map[int32]*partLag{}}
	}
	return l
}

func (t *topicLag) part(p int32) *partLag {
	pl := t.parts[p]
	if pl == nil {
		pl = &partLag{}
		t.parts[p] = pl
	}
	return pl
}

// consumed records that partition p of svc's topic was applied up to next,
// with the high watermark the fetch reported.
func (l *lagTracker) consumed(svc contract.Service, p int32, next, hwm int64, n int, last, now time.Time) {
	defer l.changes.Notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.topics[svc]
	pl := t.part(p)
	pl.next, pl.end = next, max(pl.end, hwm)
	pl.reached = pl.reached || pl.next >= pl.end
	t.records += int64(n)
	if last.After(t.lastRecord) {
		t.lastRecord = last
	}
	t.check(now)
}

// measured records a measurement of the start and end offsets.
func (l *lagTracker) measured(serviceOf func(string) contract.Service, starts, ends kadm.ListedOffsets, now time.Time) {
	defer l.changes.Notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.measuredAt, l.err = now, ""
	for _, svc := range contract.Services() {
		l.topics[svc].err = ""
	}
	ends.Each(func(o kadm.ListedOffset) {
		t := l.topics[serviceOf(o.Topic)]
		if t == nil {
			return
		}
		if o.Err != nil {
			t.err = o.Err.Error()
			return
		}
		t.listed = true
		pl := t.part(o.Partition)
		pl.end = o.Offset
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Err == nil {
			pl.start = s.Offset
		}
		pl.reached = pl.reached || max(pl.next, pl.start) >= pl.end
	})
	for _, svc := range contract.Services() {
		l.topics[svc].check(now)
	}
}

// topicFailed records an error fetching svc's topic (such as Read refused
// on it), until the next measurement of the topic succeeds.
func (l *lagTracker) topicFailed(svc contract.Service, err error) {
	defer l.changes.Notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.topics[svc].err = err.Error()
}

// failed records a failed request to the cluster.
func (l *lagTracker) failed(err error) {
	defer l.changes.Notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err.Error()
}

func (t *topicLag) behind() int64 {
	var n int64
	for _, pl := range t.parts {
		n += max(pl.end-max(pl.next, pl.start), 0)
	}
	return n
}

// check updates the caught-up state after a change.
func (t *topicLag) check(now time.Time) {
	if !t.listed || len(t.parts) == 0 || t.err != "" {
		return
	}
	all := true
	for _, pl := range t.parts {
		all = all && pl.reached
	}
	t.caughtOnce = t.caughtOnce || all
	if t.behind() == 0 {
		t.caughtAt = now
	}
}

// report returns the lag of each topic of the side.
func (l *lagTracker) report(side contract.Side, now time.Time) []ViewLag {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ViewLag, 0, contract.NumServices)
	for _, svc := range contract.Services() {
		t := l.topics[svc]
		vl := ViewLag{
			Side: side.String(), Service: svc.String(), Topic: t.name,
			Partitions: len(t.parts), RecordsBehind: t.behind(),
			CaughtUpOnce: t.caughtOnce, CaughtUpAt: t.caughtAt,
			Records: t.records, LastRecordTime: t.lastRecord, EndOffsetsAt: l.measuredAt,
			Error: l.err,
		}
		if vl.Error == "" {
			vl.Error = t.err
		}
		vl.CaughtUp = t.listed && len(t.parts) > 0 && vl.RecordsBehind == 0 && vl.Error == ""
		if !vl.CaughtUp {
			since := t.caughtAt
			if since.IsZero() {
				since = l.started
			}
			vl.TimeBehind = max(now.Sub(since), 0)
		}
		out = append(out, vl)
	}
	return out
}

// measuredAge is how long ago end offsets were last measured (since the
// start when never).
func (l *lagTracker) measuredAge(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.measuredAt.IsZero() {
		return now.Sub(l.started)
	}
	return now.Sub(l.measuredAt)
}

// lagCollector exports the lag report of both sides at every scrape, so
// the metrics are never staler than Views.Lag.
type lagCollector struct {
	v                                                   *Views
	behind, seconds, caughtUp, caughtUpOnce, lastRecord *prometheus.Desc
}

func newLagCollector(v *Views) *lagCollector {
	labels := []string{"side", "topic"}
	return &lagCollector{
		v: v,
		behind: prometheus.NewDesc("hotpair_view_records_behind",
			"Records between what the view applied and the topic's end offsets as last measured.", labels, nil),
		seconds: prometheus.NewDesc("hotpair_view_seconds_behind",
			"0 when the view is caught up, else seconds since it last had everything its topic held.", labels, nil),
		caughtUp: prometheus.NewDesc("hotpair_view_caught_up",
			"1 when the view has nothing behind as of the last measurement of end offsets.", labels, nil),
		caughtUpOnce: prometheus.NewDesc("hotpair_view_caught_up_once",
			"1 once every partition of the view has reached its end since the start (recovery finished).", labels, nil),
		lastRecord: prometheus.NewDesc("hotpair_view_last_record_timestamp_seconds",
			"Timestamp of the newest record the view applied (absent before the first).", labels, nil),
	}
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.behind
	ch <- c.seconds
	ch <- c.caughtUp
	ch <- c.caughtUpOnce
	ch <- c.lastRecord
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, vl := range c.v.Lag() {
		ch <- prometheus.MustNewConstMetric(c.behind, prometheus.GaugeValue, float64(vl.RecordsBehind), vl.Side, vl.Topic)
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.GaugeValue, vl.TimeBehind.Seconds(), vl.Side, vl.Topic)
		ch <- prometheus.MustNewConstMetric(c.caughtUp, prometheus.GaugeValue, b2f(vl.CaughtUp), vl.Side, vl.Topic)
		ch <- prometheus.MustNewConstMetric(c.caughtUpOnce, prometheus.GaugeValue, b2f(vl.CaughtUpOnce), vl.Side, vl.Topic)
		if !vl.LastRecordTime.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.lastRecord, prometheus.GaugeValue, float64(vl.LastRecordTime.UnixNano())/1e9, vl.Side, vl.Topic)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
