package replay

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// step is one record through a pacer: its recorded time offset, when the
// driver asks (now, relative to the first ask), when it released it, and
// the due time the pacer must give (relative to the first ask).
type step struct {
	ts, now, released, want time.Duration
}

func TestPacerSchedules(t *testing.T) {
	tests := []struct {
		name  string
		pacer func() *Pacer
		steps []step
	}{
		{"fixed rate spaces records evenly", func() *Pacer { return NewFixedRate(100, ms(250)) }, []step{
			{0, 0, 0, 0}, {0, 0, 0, ms(10)}, {0, ms(5), ms(20), ms(20)}, {0, ms(20), ms(30), ms(30)},
		}},
		{"fixed rate ignores timestamps", func() *Pacer { return NewFixedRate(10, ms(250)) }, []step{
			{ms(900), 0, 0, 0}, {0, 0, ms(100), ms(100)}, {ms(5000), ms(100), ms(200), ms(200)},
		}},
		{"a short delay is caught up", func() *Pacer { return NewFixedRate(100, ms(250)) }, []step{
			{0, 0, ms(200), 0}, {0, ms(200), ms(200), ms(10)}, {0, ms(200), ms(200), ms(20)},
		}},
		{"a long stall shifts the schedule instead of bursting", func() *Pacer { return NewFixedRate(100, ms(250)) }, []step{
			{0, 0, 0, 0}, {0, 0, ms(2010), ms(10)}, {0, ms(2010), ms(2020), ms(2020)}, {0, ms(2020), ms(2030), ms(2030)},
		}},
		{"recorded timestamps set the pace", func() *Pacer { return NewRecordedPace(ms(250)) }, []step{
			{ms(1000), 0, 0, 0}, {ms(1003), 0, ms(3), ms(3)}, {ms(1500), ms(3), ms(500), ms(500)},
		}},
		{"an older timestamp is due at once, never reordered", func() *Pacer { return NewRecordedPace(ms(250)) }, []step{
			{ms(1000), 0, 0, 0}, {ms(1100), 0, ms(100), ms(100)}, {ms(1050), ms(100), ms(100), ms(100)}, {ms(1200), ms(100), ms(200), ms(200)},
		}},
		{"unpaced is always due now", func() *Pacer { return NewUnpaced() }, []step{
			{ms(5000), 0, 0, 0}, {0, ms(1), ms(1), ms(1)}, {ms(9000), ms(2), ms(900), ms(2)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pacer()
			for i, s := range tt.steps {
				got := p.Due(t0.Add(s.now), t0.Add(s.ts)).Sub(t0)
				if got != s.want {
					t.Fatalf("record %d: due at %v, want %v", i, got, s.want)
				}
				p.Released(t0.Add(s.released))
			}
		})
	}
}

func TestPacerCountsStalls(t *testing.T) {
	p := NewFixedRate(100, ms(250))
	p.Due(t0, t0)
	p.Released(t0.Add(ms(100))) // caught up: not a stall
	p.Due(t0, t0)
	p.Released(t0.Add(ms(1010))) // 1 s late
	if n, d := p.Stalls(); n != 1 || d != time.Second {
		t.Fatalf("stalls %d (%v), want 1 (1s)", n, d)
	}
}

func TestPacerRewindContinuesAfterTheLastRecord(t *testing.T) {
	p := NewRecordedPace(ms(250))
	for i, ts := range []int{0, 100, 200} { // one pass: 3 records 100 ms apart
		due := p.Due(t0.Add(ms(ts)), t0.Add(time.Hour+ms(ts)))
		if due != t0.Add(ms(ts)) {
			t.Fatalf("record %d due %v", i, due.Sub(t0))
		}
		p.Released(due)
	}
	p.Rewind()
	// The second pass starts one mean interval (100 ms) after the last record.
	for i, ts := range []int{0, 100} {
		due := p.Due(t0.Add(ms(200)), t0.Add(time.Hour+ms(ts)))
		if want := t0.Add(ms(300 + ts)); due != want {
			t.Fatalf("second pass record %d due %v, want %v", i, due.Sub(t0), want.Sub(t0))
		}
		p.Released(due)
	}
}

// fakeSender stands for the targets inside a synctest bubble: it notes when
// each record was sent and blocks (backpressure) where told.
type fakeSender struct {
	start time.Time
	sent  []time.Duration
	keys  []string
	block map[int]time.Duration // record index -> how long send blocks
}

func (f *fakeSender) begin(start time.Time) { f.start = start }

func (f *fakeSender) send(_ context.Context, rec *Record, now time.Time) bool {
	f.sent = append(f.sent, now.Sub(f.start))
	f.keys = append(f.keys, string(rec.Key))
	if d := f.block[len(f.sent)-1]; d > 0 {
		time.Sleep(d)
		return true
	}
	return false
}

// playFake runs the player's driver loop over a recording with a fake sender.
func playFake(t *testing.T, path string, o PlayerOptions, pacer *Pacer, out *fakeSender) (*playLoop, string) {
	t.Helper()
	src, err := openSource(path, o.Filter, o.Percent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.close)
	l := &playLoop{o: &o, src: src, pacer: pacer, out: out}
	stopped, err := l.run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return l, stopped
}

func TestPlayLoopKeepsTheRateThroughBackpressure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(1000, 10, t0, time.Millisecond))
	w.Close("")
	synctest.Test(t, func(t *testing.T) {
		// A target blocks for 3 s at record 300 (a slow broker): the player
		// waits, then goes on at the same rate, with no burst to catch up.
		out := &fakeSender{block: map[int]time.Duration{300: 3 * time.Second, 600: 50 * time.Millisecond}}
		l, stopped := playFake(t, path, PlayerOptions{}, NewFixedRate(100, DefaultCatchUp), out)
		if stopped != StoppedEnd || len(out.sent) != 1000 {
			t.Fatalf("stopped %q after %d records", stopped, len(out.sent))
		}
		for i, at := range out.sent {
			want := ms(10 * i)
			if i > 300 {
				want += 3 * time.Second // the schedule shifted by the stall
			}
			if i > 600 && i <= 605 {
				want = max(want, out.sent[600]+ms(50)) // a short delay is caught up within the catch-up allowance
			}
			if at != want {
				t.Fatalf("record %d sent at %v, want %v", i, at, want)
			}
		}
		if n, d := l.pacer.Stalls(); n != 1 || d != 3*time.Second {
			t.Fatalf("stalls %d (%v), want 1 of 3s", n, d)
		}
		// No second sends more than the rate, even right after the stall.
		for i := 250; i < 590; i++ {
			j := i
			for j < len(out.sent) && out.sent[j]-out.sent[i] < time.Second {
				j++
			}
			if j-i > 101 {
				t.Fatalf("%d records within one second from record %d", j-i, i)
			}
		}
	})
}

func TestPlayLoopDurationAndLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(50, 10, t0, 20*time.Millisecond)) // 1 s of records
	w.Close("")
	synctest.Test(t, func(t *testing.T) {
		out := &fakeSender{}
		l, stopped := playFake(t, path, PlayerOptions{Loop: true, Duration: 3500 * time.Millisecond}, NewRecordedPace(DefaultCatchUp), out)
		if stopped != StoppedDuration {
			t.Fatalf("stopped %q", stopped)
		}
		// 20 ms apart across passes too: 3.5 s hold 175 records, in 4 passes.
		if len(out.sent) != 175 || l.src.passes != 4 {
			t.Fatalf("sent %d records in %d passes, want 175 in 4", len(out.sent), l.src.passes)
		}
		for i, at := range out.sent {
			if at != ms(20*i) {
				t.Fatalf("record %d at %v, want %v", i, at, ms(20*i))
			}
		}
	})
}

func TestPlayLoopStopsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(1000, 10, t0, time.Millisecond))
	w.Close("")
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 1995*time.Millisecond)
		defer cancel()
		src, _ := openSource(path, Filter{}, 0)
		defer src.close()
		out := &fakeSender{}
		l := &playLoop{o: &PlayerOptions{}, src: src, pacer: NewFixedRate(100, DefaultCatchUp), out: out}
		stopped, err := l.run(ctx)
		if err != nil || stopped != StoppedInterrupted || len(out.sent) != 200 {
			t.Fatalf("stopped %q (%v) after %d records; want interrupted after 200", stopped, err, len(out.sent))
		}
	})
}
