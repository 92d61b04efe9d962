package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// PlayerOptions configure a Player.
type PlayerOptions struct {
	// Recording is the file to play.
	Recording string
	// Targets receive identical records, in the same order, in lockstep.
	Targets []Target

	// QPS plays at exactly this many records per second, ignoring the
	// recorded timestamps. Percent keeps the records whose key hash falls in
	// the first Percent of the hash space and plays them at Percent of the
	// recording's rate (its retimed rate, else its mean rate). Unpaced plays
	// as fast as the targets take records. With none of them, the recorded
	// timestamps set the pace. At most one may be set.
	QPS     float64
	Percent float64
	Unpaced bool

	// Headers are added to every record sent.
	Headers []Header
	// Filter drops records that do not match it before anything else.
	Filter Filter
	// Loop plays the recording again from its start when it ends.
	Loop bool
	// Duration stops the play after this long (0: at the end of the recording).
	Duration time.Duration
	// RecordedTimestamps sends the recorded timestamps; by default every
	// record is stamped with the time it is sent (the same on every target),
	// so that time-based retention and windows see live-looking traffic.
	RecordedTimestamps bool
	// SetTimeField, when set, names a top-level field of the JSON values
	// (e.g. "ts" of ad events) that is set to the send time, the same on
	// every target: a pipeline that windows by event time then sees live
	// traffic instead of last week's. Values without it are sent unchanged
	// (the report counts them).
	SetTimeField string
	// Partitioning picks each record's partition (default PartitionByKey).
	Partitioning Partitioning
	// MaxInFlight is how many records a target may hold unacknowledged
	// before the player waits for it (default 10000): the lockstep window.
	MaxInFlight int
	// CatchUp is how late a record may be sent before the schedule shifts
	// instead of bursting (default DefaultCatchUp).
	CatchUp time.Duration

	// Injected dependencies.
	Logger     *slog.Logger          // default: discard
	Registerer prometheus.Registerer // default: a private registry
	ClientOpts []kgo.Opt             // extra franz-go options for every target (timeouts, buffers)
}

func (o *PlayerOptions) validate() error {
	switch {
	case o.Recording == "":
		return errors.New("replay: PlayerOptions.Recording is required")
	case len(o.Targets) == 0:
		return errors.New("replay: PlayerOptions.Targets needs at least one target")
	case o.QPS < 0 || math.IsNaN(o.QPS) || math.IsInf(o.QPS, 0):
		return fmt.Errorf("replay: PlayerOptions.QPS %v must be a positive rate", o.QPS)
	case o.Percent < 0 || o.Percent > 100 || math.IsNaN(o.Percent):
		return fmt.Errorf("replay: PlayerOptions.Percent %v must be in (0, 100]", o.Percent)
	case countTrue(o.QPS > 0, o.Percent > 0, o.Unpaced) > 1:
		return errors.New("replay: PlayerOptions.QPS, Percent and Unpaced exclude each other")
	case o.Duration < 0:
		return errors.New("replay: PlayerOptions.Duration must not be negative")
	case o.Loop && o.Duration == 0:
		return errors.New("replay: PlayerOptions.Loop needs a Duration (or stop the play by cancelling it)")
	}
	return nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// flushGrace is how long a player waits for its targets to acknowledge what
// it handed over, after the play ended or was cancelled.
const flushGrace = 30 * time.Second

// Player plays a recording into its targets.
type Player struct {
	o      PlayerOptions
	log    *slog.Logger
	m      *playerMetrics
	report Report
}

// NewPlayer validates o and returns a Player.
func NewPlayer(o PlayerOptions) (*Player, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Partitioning == 0 {
		o.Partitioning = PartitionByKey
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 10000
	}
	if o.CatchUp <= 0 {
		o.CatchUp = DefaultCatchUp
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	return &Player{o: o, log: o.Logger, m: newPlayerMetrics(o.Registerer)}, nil
}

// Report returns the report of the last Run.
func (p *Player) Report() Report { return p.report }

// Run plays the recording until its end (or Duration, or ctx is cancelled),
// waits for every target to acknowledge what it was sent, and fills the
// report. It returns ErrDelivery when some record failed on some target; a
// cancelled ctx ends the play early without an error.
func (p *Player) Run(ctx context.Context) error {
	src, err := openSource(p.o.Recording, p.o.Filter, p.o.Percent)
	if err != nil {
		return err
	}
	defer src.close()
	pacer, mode, rate, err := p.pacer(src)
	if err != nil {
		return err
	}
	sinks := make([]*sink, 0, len(p.o.Targets))
	defer func() {
		for _, s := range sinks {
			s.close()
		}
	}()
	for _, t := range p.o.Targets {
		s, err := newSink(ctx, t, &p.o, src.meta.Partitions, p.m)
		if err != nil {
			return err
		}
		sinks = append(sinks, s)
	}
	p.report = Report{Recording: p.o.Recording, Mode: mode, TargetRate: rate, Percent: p.o.Percent}
	p.log.Info("replay: playing", "recording", p.o.Recording, "mode", mode, "rate", rate, "targets", len(sinks))
	// Records are produced under a context that outlives a cancel by
	// flushGrace: what was handed over before Ctrl-C still gets delivered
	// (or counted as failed), and a Produce blocked on a dead target still
	// returns in the end.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(flushGrace, pcancel) })
	defer stopGrace()
	l := &playLoop{o: &p.o, src: src, pacer: pacer, sinks: sinks, m: p.m, log: p.log, produceCtx: pctx}
	stopped, err := l.run(ctx)
	flushCtx, cancel := context.WithTimeout(pctx, flushGrace)
	defer cancel()
	for _, s := range sinks {
		if ferr := s.flush(flushCtx); ferr != nil {
			p.log.Warn("replay: target did not acknowledge everything in time", "target", s.target.String(), "err", ferr)
		}
	}
	p.report.fill(l, stopped, sinks)
	if err != nil {
		return err
	}
	for _, t := range p.report.Targets {
		if t.Errors > 0 || t.Sent != p.report.Released {
			return fmt.Errorf("%w: target %s: %d acknowledged of %d, %d errors", ErrDelivery, t.Target, t.Sent, p.report.Released, t.Errors)
		}
	}
	return nil
}

// pacer builds the pacer for the options, and names the mode.
func (p *Player) pacer(src *source) (*Pacer, string, float64, error) {
	switch {
	case p.o.Unpaced:
		return NewUnpaced(), "unpaced", 0, nil
	case p.o.QPS > 0:
		return NewFixedRate(p.o.QPS, p.o.CatchUp), "rate", p.o.QPS, nil
	case p.o.Percent > 0:
		base, err := recordingRate(p.o.Recording)
		if err != nil {
			return nil, "", 0, err
		}
		rate := base * p.o.Percent / 100
		return NewFixedRate(rate, p.o.CatchUp), "percent", rate, nil
	}
	return NewRecordedPace(p.o.CatchUp), "recorded", src.meta.RetimedQPS, nil
}

// recordingRate returns a recording's rate: the retimed rate, else its mean
// rate from the end marker, else from a pass over it.
func recordingRate(path string) (float64, error) {
	r, err := Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if q := r.Meta().RetimedQPS; q > 0 {
		return q, nil
	}
	var n int64
	var first, last time.Time
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 0, err
		}
		if n == 0 {
			first = rec.Timestamp
		}
		last = rec.Timestamp
		n++
	}
	span := last.Sub(first)
	if n < 2 || span <= 0 {
		return 0, fmt.Errorf("replay: %s: %d records over %v have no rate; use --qps", path, n, span)
	}
	return float64(n-1) / span.Seconds(), nil
}
