package replay

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Report is what a play did.
type Report struct {
	Recording string `json:"recording"`
	// Mode is "rate" (--qps), "percent", "recorded" (the recorded
	// timestamps) or "unpaced".
	Mode string `json:"mode"`
	// TargetRate is the rate asked for (0 when following timestamps or unpaced).
	TargetRate float64 `json:"target_rate,omitempty"`
	Percent    float64 `json:"percent,omitempty"`
	// Stopped is StoppedEnd, StoppedDuration or StoppedInterrupted.
	Stopped string `json:"stopped"`
	// Passes over the recording (more than 1 with --loop).
	Passes int `json:"passes"`
	// Read, Filtered and Skipped (by --percent) count records of the
	// recording; Released is what was sent to every target.
	Read     int64 `json:"read"`
	Filtered int64 `json:"filtered"`
	Skipped  int64 `json:"skipped"`
	Released int64 `json:"released"`
	// Elapsed runs from the first record sent to the last.
	Elapsed time.Duration `json:"elapsed_ns"`
	// AchievedRate is (Released-1)/Elapsed: the rate the records went out at.
	AchievedRate float64 `json:"achieved_rate"`
	// PerSecond is the spread of records sent per whole second.
	PerSecond RateSpread `json:"per_second"`
	// Stalls is how often the player fell behind by more than the catch-up
	// allowance and shifted its schedule (backpressure or a host stall), and
	// StallTime their total.
	Stalls    int64         `json:"stalls"`
	StallTime time.Duration `json:"stall_ns"`
	// TimeFieldSet and TimeFieldMissing count the values whose
	// PlayerOptions.SetTimeField was set to the send time, or was absent.
	TimeFieldSet     int64 `json:"time_field_set,omitempty"`
	TimeFieldMissing int64 `json:"time_field_missing,omitempty"`
	// RecordingProblem is set when the recording was not closed (torn or unfinished).
	RecordingProblem string         `json:"recording_problem,omitempty"`
	Targets          []TargetReport `json:"targets"`
}

// TargetReport is one target's share of a play.
type TargetReport struct {
	Target string `json:"target"`
	// Sent counts the records the target acknowledged; Errors those it failed.
	Sent        int64    `json:"sent"`
	Errors      int64    `json:"errors"`
	FirstErrors []string `json:"first_errors,omitempty"`
	// Backpressure is how long the player waited for this target's buffer to
	// have room, over Waits waits: a target that cannot keep up shows here.
	Backpressure time.Duration `json:"backpressure_ns"`
	Waits        int64         `json:"waits"`
	// AckedPerSecond is the spread of records acknowledged per whole second.
	AckedPerSecond RateSpread `json:"acked_per_second"`
}

// RateSpread summarises counts per whole second (the last, partial second
// of a play is left out).
type RateSpread struct {
	Seconds int     `json:"seconds"`
	Min     int64   `json:"min"`
	Max     int64   `json:"max"`
	Mean    float64 `json:"mean"`
	StdDev  float64 `json:"stddev"`
	// MaxDeviation is the largest |second - reference| / reference, where the
	// reference is the target rate when there is one, else Mean.
	MaxDeviation float64 `json:"max_deviation"`
}

// spreadOf summarises per-second counts, leaving out the last one.
func spreadOf(seconds []int64, ref float64) RateSpread {
	if len(seconds) > 1 {
		seconds = seconds[:len(seconds)-1]
	}
	s := RateSpread{Seconds: len(seconds)}
	if len(seconds) == 0 {
		return s
	}
	s.Min, s.Max = math.MaxInt64, math.MinInt64
	var sum float64
	for _, c := range seconds {
		s.Min, s.Max = min(s.Min, c), max(s.Max, c)
		sum += float64(c)
	}
	s.Mean = sum / float64(len(seconds))
	if ref <= 0 {
		ref = s.Mean
	}
	var sq float64
	for _, c := range seconds {
		sq += (float64(c) - s.Mean) * (float64(c) - s.Mean)
		if ref > 0 {
			s.MaxDeviation = max(s.MaxDeviation, math.Abs(float64(c)-ref)/ref)
		}
	}
	s.StdDev = math.Sqrt(sq / float64(len(seconds)))
	return s
}

func (r *Report) fill(l *playLoop, stopped string, sinks []*sink) {
	r.Stopped = stopped
	r.Passes = l.src.passes
	r.Read, r.Filtered, r.Skipped, r.Released = l.src.read, l.src.filtered, l.src.skipped, l.released
	if l.src.problem != nil {
		r.RecordingProblem = l.src.problem.Error()
	}
	r.Elapsed = l.last.Sub(l.first)
	if l.released > 1 && r.Elapsed > 0 {
		r.AchievedRate = float64(l.released-1) / r.Elapsed.Seconds()
	}
	r.PerSecond = spreadOf(l.seconds, r.TargetRate)
	r.Stalls, r.StallTime = l.pacer.Stalls()
	if f, ok := l.out.(*fanout); ok {
		r.TimeFieldSet, r.TimeFieldMissing = f.timeSet, f.timeMissing
	}
	for _, s := range sinks {
		s.mu.Lock()
		r.Targets = append(r.Targets, TargetReport{
			Target: s.target.String(), Sent: s.acked, Errors: s.errors, FirstErrors: s.firstErrors,
			Backpressure: s.waited, Waits: s.waits, AckedPerSecond: spreadOf(s.ackSeconds, r.TargetRate),
		})
		s.mu.Unlock()
	}
}

// WriteText prints the report for a human.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "played %s (%s", r.Recording, r.Mode)
	if r.TargetRate > 0 {
		fmt.Fprintf(w, " %.6g/s", r.TargetRate)
	}
	fmt.Fprintf(w, "), stopped: %s, passes: %d\n", r.Stopped, r.Passes)
	fmt.Fprintf(w, "  records: %d read, %d filtered out, %d skipped by --percent, %d sent to every target\n",
		r.Read, r.Filtered, r.Skipped, r.Released)
	fmt.Fprintf(w, "  achieved rate: %.2f/s over %v\n", r.AchievedRate, r.Elapsed.Round(time.Millisecond))
	writeSpread(w, "  per second sent:", r.PerSecond)
	if r.Stalls > 0 {
		fmt.Fprintf(w, "  fell behind %d times, %v in total (backpressure or host stalls): the play slowed down\n",
			r.Stalls, r.StallTime.Round(time.Millisecond))
	}
	if r.TimeFieldSet+r.TimeFieldMissing > 0 {
		fmt.Fprintf(w, "  time field set to the send time in %d values, absent from %d\n", r.TimeFieldSet, r.TimeFieldMissing)
	}
	if r.RecordingProblem != "" {
		fmt.Fprintf(w, "  WARNING: %s\n", r.RecordingProblem)
	}
	for _, t := range r.Targets {
		fmt.Fprintf(w, "  target %s: %d acknowledged, %d errors", t.Target, t.Sent, t.Errors)
		if t.Waits > 0 {
			fmt.Fprintf(w, ", backpressure %v over %d waits", t.Backpressure.Round(time.Millisecond), t.Waits)
		}
		fmt.Fprintln(w)
		writeSpread(w, "    per second acknowledged:", t.AckedPerSecond)
		for _, e := range t.FirstErrors {
			fmt.Fprintf(w, "    error: %s\n", e)
		}
	}
}

func writeSpread(w io.Writer, label string, s RateSpread) {
	if s.Seconds == 0 {
		return
	}
	fmt.Fprintf(w, "%s min %d, max %d, mean %.2f, stddev %.2f, max deviation %.2f%% over %d whole seconds\n",
		label, s.Min, s.Max, s.Mean, s.StdDev, 100*s.MaxDeviation, s.Seconds)
}
