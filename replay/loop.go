package replay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sender fans one record out to every target. send may block while a target
// is behind: that is the backpressure that slows the whole play down.
type sender interface {
	begin(start time.Time)
	// send reports whether some target made it wait.
	send(ctx context.Context, rec *Record, ts time.Time) (waited bool)
}

// Reasons a play stopped.
const (
	StoppedEnd         = "end"         // the recording ended
	StoppedDuration    = "duration"    // Duration elapsed
	StoppedInterrupted = "interrupted" // the context was cancelled
)

// playLoop is the driver: it reads records, asks the pacer when each is due,
// waits, sends, and tells the pacer. It is the only goroutine touching the
// pacer and its own counters.
type playLoop struct {
	o     *PlayerOptions
	src   *source
	pacer *Pacer
	out   sender
	sinks []*sink
	m     *playerMetrics
	log   *slog.Logger
	// produceCtx is the context records are produced under (default: run's).
	produceCtx context.Context

	released    int64
	first, last time.Time // send times of the first and last record
	seconds     []int64   // records released per second since the schedule start
}

func (l *playLoop) run(ctx context.Context) (string, error) {
	if l.out == nil {
		l.out = &fanout{sinks: l.sinks, o: l.o}
	}
	if l.produceCtx == nil {
		l.produceCtx = ctx
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var deadline time.Time
	passKept := 0
	for {
		rec, err := l.src.next()
		if errors.Is(err, io.EOF) {
			if !l.o.Loop || passKept == 0 {
				return StoppedEnd, nil
			}
			if err := l.src.rewind(); err != nil {
				return StoppedEnd, err
			}
			l.pacer.Rewind()
			passKept = 0
			continue
		} else if err != nil {
			return StoppedEnd, err
		}
		passKept++
		now := time.Now()
		due := l.pacer.Due(now, rec.Timestamp)
		if l.released == 0 {
			l.out.begin(l.pacer.Start())
			if l.o.Duration > 0 {
				deadline = l.pacer.Start().Add(l.o.Duration)
			}
		}
		if !deadline.IsZero() && !due.Before(deadline) {
			return StoppedDuration, nil
		}
		if wait := due.Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return StoppedInterrupted, nil
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return StoppedInterrupted, nil
		}
		if due.After(now) {
			now = time.Now()
		}
		if l.out.send(l.produceCtx, rec, now) {
			l.pacer.Released(time.Now())
		} else {
			l.pacer.Released(now)
		}
		l.count(now)
	}
}

func (l *playLoop) count(at time.Time) {
	if l.released == 0 {
		l.first = at
	}
	l.last = at
	l.released++
	sec := int(at.Sub(l.pacer.Start()) / time.Second)
	for len(l.seconds) <= sec {
		l.seconds = append(l.seconds, 0)
	}
	l.seconds[sec]++
	if l.m != nil {
		l.m.released.Inc()
	}
}

// fanout sends each record to every sink, in target order.
type fanout struct {
	sinks []*sink
	o     *PlayerOptions
	// timeSet and timeMissing count values whose SetTimeField was set, or absent.
	timeSet, timeMissing int64
}

func (f *fanout) begin(start time.Time) {
	for _, s := range f.sinks {
		s.setStart(start)
	}
}

func (f *fanout) send(ctx context.Context, rec *Record, now time.Time) (waited bool) {
	ts := now
	if f.o.RecordedTimestamps {
		ts = rec.Timestamp
	}
	value := rec.Value
	if f.o.SetTimeField != "" {
		var ok bool
		if value, ok = setJSONTime(rec.Value, f.o.SetTimeField, now); ok {
			f.timeSet++
		} else {
			f.timeMissing++
		}
	}
	for _, s := range f.sinks {
		kr := &kgo.Record{
			Topic:     s.target.Topic,
			Key:       rec.Key,
			Value:     value,
			Timestamp: ts,
			Partition: rec.Partition,
		}
		if n := len(rec.Headers) + len(f.o.Headers); n > 0 {
			kr.Headers = make([]kgo.RecordHeader, 0, n)
		}
		for _, h := range rec.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		for _, h := range f.o.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		waited = s.produce(ctx, kr) || waited
	}
	return waited
}
