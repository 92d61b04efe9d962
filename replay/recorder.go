package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/buildinfo"
	"github.com/hotpair/hotpair/internal/kafka"
)

// RecorderOptions configure a Recorder. Either Duration (live: from the end
// of the topic, for that long) or Since (a window [Since, Until), found by
// timestamp; an Until in the future records live until then) must be set.
type RecorderOptions struct {
	Brokers []string
	// KafkaAuth is the cluster's TLS and SASL (nil: plaintext).
	KafkaAuth *contract.KafkaAuth
	Topic     string
	// Output is the recording file to create.
	Output   string
	Duration time.Duration
	Since    time.Time
	Until    time.Time // zero: until now
	Filter   Filter
	// Limit stops after this many records (0: no limit).
	Limit int64
	// FlushInterval is how often buffered records are written out as a block
	// (default 1s): at most this much is lost when the recorder is killed.
	FlushInterval time.Duration
	// IdleTimeout ends a past-window recording when no record arrived for this
	// long although some partitions did not reach their end offset (offsets
	// removed by compaction, transaction markers). Default 5s.
	IdleTimeout time.Duration
	// Progress, when set, is called every ProgressInterval (default 1s) and
	// at the end, from the recorder's goroutine.
	Progress         func(Progress)
	ProgressInterval time.Duration

	// Injected dependencies.
	Logger     *slog.Logger          // default: discard
	Registerer prometheus.Registerer // default: a private registry
	ClientOpts []kgo.Opt             // extra franz-go options (timeouts, fetch sizes)
}

func (o *RecorderOptions) validate() error {
	switch {
	case len(o.Brokers) == 0:
		return errors.New("replay: RecorderOptions.Brokers is required")
	case o.Topic == "":
		return errors.New("replay: RecorderOptions.Topic is required")
	case o.Output == "":
		return errors.New("replay: RecorderOptions.Output is required")
	case (o.Duration > 0) == !o.Since.IsZero():
		return errors.New("replay: set exactly one of RecorderOptions.Duration (live) and Since (a past window)")
	case o.Duration < 0:
		return errors.New("replay: RecorderOptions.Duration must be positive")
	case !o.Until.IsZero() && !o.Until.After(o.Since):
		return fmt.Errorf("replay: RecorderOptions.Until %s must be after Since %s", o.Until.Format(time.RFC3339), o.Since.Format(time.RFC3339))
	case o.Limit < 0:
		return errors.New("replay: RecorderOptions.Limit must not be negative")
	}
	return nil
}

// Progress is a recorder's progress.
type Progress struct {
	Records  int64         `json:"records"`
	Filtered int64         `json:"filtered"`
	Bytes    int64         `json:"bytes"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Total is the recording's planned length (live duration or window span);
	// Position is how far into it the newest record is.
	Total    time.Duration `json:"total_ns"`
	Position time.Duration `json:"position_ns"`
	// Stopped is set in the last call.
	Stopped string `json:"stopped,omitempty"`
}

// Recorder records a topic into a file.
type Recorder struct {
	o   RecorderOptions
	log *slog.Logger
	m   *recorderMetrics

	progress Progress
}

// NewRecorder validates o and returns a Recorder.
func NewRecorder(o RecorderOptions) (*Recorder, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Second
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	return &Recorder{o: o, log: o.Logger, m: newRecorderMetrics(o.Registerer)}, nil
}

// Result returns the final progress of the last Run.
func (r *Recorder) Result() Progress { return r.progress }

// window is what to consume: start offsets, optional end offsets (exclusive),
// a timestamp range and a wall-clock deadline.
type window struct {
	partitions int32
	start      map[int32]int64
	end        map[int32]int64 // nil: live, no end offsets
	from, to   time.Time       // keep records with from <= ts < to (zero: unbounded)
	deadline   time.Time       // stop at this wall time (zero: at the end offsets)
	total      time.Duration
}

// Run records until the duration or window ends, Limit is reached or ctx is
// cancelled, and closes the file (a cancel is a normal stop, "interrupted").
func (r *Recorder) Run(ctx context.Context) error {
	c := kafka.Cluster{Brokers: r.o.Brokers, Auth: r.o.KafkaAuth}
	if err := kafka.CheckAuth(ctx, c); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	cl, err := kafka.NewClient(c, "hotpair-replay-record", r.o.ClientOpts...)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	w, err := r.plan(ctx, kadm.NewClient(cl), time.Now())
	cl.Close()
	if err != nil {
		return err
	}
	offsets := map[int32]kgo.Offset{}
	for p, o := range w.start {
		offsets[p] = kgo.NewOffset().At(o)
	}
	cl, err = kafka.NewClient(c, "hotpair-replay-record", append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.o.Topic: offsets}),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, r.o.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer cl.Close()
	meta := Meta{Topic: r.o.Topic, Partitions: w.partitions, RecordedAt: time.Now().UTC(),
		Since: r.o.Since.UTC(), Until: r.o.Until.UTC(), Filters: r.o.Filter.Exprs(), Build: buildinfo.String()}
	if r.o.Since.IsZero() {
		meta.Since, meta.Until = time.Time{}, time.Time{}
	}
	out, err := Create(r.o.Output, meta)
	if err != nil {
		return err
	}
	r.log.Info("replay: recording", "topic", r.o.Topic, "partitions", w.partitions, "output", r.o.Output)
	l := &recordLoop{o: &r.o, w: w, cl: cl, out: out, m: r.m, log: r.log, started: time.Now()}
	stopped, runErr := l.run(ctx)
	if runErr != nil {
		stopped = "error"
	}
	closeErr := out.Close(stopped)
	r.progress = l.progress(stopped)
	if r.o.Progress != nil {
		r.o.Progress(r.progress)
	}
	return errors.Join(runErr, closeErr)
}

// plan finds the partitions and offsets to consume.
func (r *Recorder) plan(ctx context.Context, adm *kadm.Client, now time.Time) (window, error) {
	td, err := adm.ListTopics(ctx, r.o.Topic)
	if err != nil {
		return window{}, fmt.Errorf("replay: listing topic %s: %w", r.o.Topic, err)
	}
	t, ok := td[r.o.Topic]
	if !ok || t.Err != nil {
		return window{}, fmt.Errorf("%w: %s", ErrNoTopic, r.o.Topic)
	}
	w := window{partitions: int32(len(t.Partitions))}
	if r.o.Duration > 0 {
		ends, err := adm.ListEndOffsets(ctx, r.o.Topic)
		if err != nil {
			return window{}, fmt.Errorf("replay: listing end offsets: %w", err)
		}
		w.start = offsetsOf(ends, r.o.Topic)
		w.deadline, w.total = now.Add(r.o.Duration), r.o.Duration
		return w, ends.Error()
	}
	w.from, w.to = r.o.Since, r.o.Until
	if w.to.IsZero() {
		w.to = now
	}
	w.total = w.to.Sub(w.from)
	starts, err := adm.ListOffsetsAfterMilli(ctx, r.o.Since.UnixMilli(), r.o.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return window{}, fmt.Errorf("replay: finding offsets at %s: %w", r.o.Since.Format(time.RFC3339), err)
	}
	w.start = offsetsOf(starts, r.o.Topic)
	if w.to.After(now) {
		w.deadline = w.to // the window reaches into the future: record live until then
		return w, nil
	}
	ends, err := adm.ListOffsetsAfterMilli(ctx, w.to.UnixMilli(), r.o.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return window{}, fmt.Errorf("replay: finding offsets at %s: %w", w.to.Format(time.RFC3339), err)
	}
	w.end = offsetsOf(ends, r.o.Topic)
	return w, nil
}

func offsetsOf(lo kadm.ListedOffsets, topic string) map[int32]int64 {
	m := map[int32]int64{}
	for p, o := range lo[topic] {
		if p >= 0 {
			m[p] = o.Offset
		}
	}
	return m
}
