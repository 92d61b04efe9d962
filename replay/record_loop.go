package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Reasons a recording stopped (Trailer.Stopped).
const (
	StoppedWindow = "window" // every partition reached the window's end
	StoppedLimit  = "limit"  // RecorderOptions.Limit records were written
	// StoppedDuration and StoppedInterrupted are shared with the player.
)

// recordLoop consumes and writes; it owns the writer and every counter.
type recordLoop struct {
	o   *RecorderOptions
	w   window
	cl  *kgo.Client
	out *Writer
	m   *recorderMetrics
	log *slog.Logger

	started            time.Time
	records, filtered  int64
	bytes              int64
	newest             time.Time
	done               map[int32]bool
	lastRecord         time.Time
	nextFlush, nextLog time.Time
}

func (l *recordLoop) run(ctx context.Context) (string, error) {
	l.done = map[int32]bool{}
	if l.w.end != nil {
		for p, end := range l.w.end {
			if l.w.start[p] >= end {
				l.done[p] = true
			}
		}
	}
	l.lastRecord, l.nextFlush, l.nextLog = l.started, l.started.Add(l.o.FlushInterval), l.started.Add(l.o.ProgressInterval)
	for {
		if stopped := l.finished(ctx); stopped != "" {
			return stopped, nil
		}
		pctx, cancel := context.WithDeadline(ctx, l.nextWake())
		fs := l.cl.PollFetches(pctx)
		cancel()
		if err := fetchError(fs); err != nil {
			return "", err
		}
		var err error
		fs.EachRecord(func(kr *kgo.Record) {
			if err == nil {
				err = l.take(kr)
			}
		})
		if err != nil {
			return "", err
		}
		if err := l.tick(time.Now()); err != nil {
			return "", err
		}
	}
}

// finished returns why the recording is over, or "".
func (l *recordLoop) finished(ctx context.Context) string {
	now := time.Now()
	switch {
	case ctx.Err() != nil:
		return StoppedInterrupted
	case l.o.Limit > 0 && l.records >= l.o.Limit:
		return StoppedLimit
	case !l.w.deadline.IsZero() && !now.Before(l.w.deadline):
		if l.w.end == nil && l.o.Duration == 0 {
			return StoppedWindow
		}
		return StoppedDuration
	case l.w.end != nil && len(l.done) >= len(l.w.end):
		return StoppedWindow
	case l.w.end != nil && now.Sub(l.lastRecord) >= l.o.IdleTimeout:
		var missing []int32
		for p := range l.w.end {
			if !l.done[p] {
				missing = append(missing, p)
			}
		}
		slices.Sort(missing)
		l.log.Warn("replay: no record for a while before the window's end offsets; offsets may be compacted or transaction markers",
			"partitions", missing, "idle", l.o.IdleTimeout)
		return StoppedWindow
	}
	return ""
}

func (l *recordLoop) nextWake() time.Time {
	wake := minTime(l.nextFlush, l.nextLog)
	if !l.w.deadline.IsZero() {
		wake = minTime(wake, l.w.deadline)
	}
	return wake
}

// fetchError returns the first fetch error that is not the poll's own deadline.
func fetchError(fs kgo.Fetches) error {
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		return fmt.Errorf("replay: fetching %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	return nil
}

// take writes one consumed record, if it is inside the window and passes the filter.
func (l *recordLoop) take(kr *kgo.Record) error {
	l.lastRecord = time.Now()
	if l.w.end != nil {
		end, ok := l.w.end[kr.Partition]
		if !ok || kr.Offset >= end || l.done[kr.Partition] {
			l.done[kr.Partition] = true
			return nil
		}
		if kr.Offset+1 >= end {
			l.done[kr.Partition] = true
		}
	}
	if l.o.Limit > 0 && l.records >= l.o.Limit {
		return nil
	}
	rec := fromKgo(kr)
	inWindow := (l.w.from.IsZero() || !rec.Timestamp.Before(l.w.from)) && (l.w.to.IsZero() || rec.Timestamp.Before(l.w.to))
	if !inWindow || !l.o.Filter.Match(rec) {
		l.filtered++
		l.m.filtered.Inc()
		return nil
	}
	if err := l.out.Write(rec); err != nil {
		return err
	}
	size := int64(len(rec.Key) + len(rec.Value))
	for _, h := range rec.Headers {
		size += int64(len(h.Key) + len(h.Value))
	}
	l.records++
	l.bytes += size
	l.m.recorded.Inc()
	l.m.bytes.Add(float64(size))
	if rec.Timestamp.After(l.newest) {
		l.newest = rec.Timestamp
	}
	return nil
}

// tick flushes and reports progress when due.
func (l *recordLoop) tick(now time.Time) error {
	if !now.Before(l.nextFlush) {
		if err := l.out.Flush(); err != nil {
			return err
		}
		l.nextFlush = now.Add(l.o.FlushInterval)
	}
	if !now.Before(l.nextLog) {
		if l.o.Progress != nil {
			l.o.Progress(l.progress(""))
		}
		l.nextLog = now.Add(l.o.ProgressInterval)
	}
	return nil
}

func (l *recordLoop) progress(stopped string) Progress {
	p := Progress{Records: l.records, Filtered: l.filtered, Bytes: l.bytes,
		Elapsed: time.Since(l.started), Total: l.w.total, Stopped: stopped}
	switch {
	case l.w.from.IsZero():
		p.Position = p.Elapsed
	case !l.newest.IsZero():
		p.Position = l.newest.Sub(l.w.from)
	}
	return p
}

func fromKgo(kr *kgo.Record) *Record {
	r := &Record{Timestamp: kr.Timestamp.UTC(), Key: kr.Key, Value: kr.Value, Partition: kr.Partition, Offset: kr.Offset}
	if len(kr.Headers) > 0 {
		r.Headers = make([]Header, len(kr.Headers))
		for i, h := range kr.Headers {
			r.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return r
}
