package compare

import (
	"math"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// healthLog keeps one pipeline's health samples of the horizon.
type healthLog struct {
	samples []receivedSample
}

type receivedSample struct {
	contract.HealthSample
	received time.Time
}

func (h *healthLog) add(s contract.HealthSample, at time.Time) {
	h.samples = append(h.samples, receivedSample{s, at})
}

func (h *healthLog) prune(from time.Time) {
	h.samples = slices.DeleteFunc(h.samples, func(s receivedSample) bool { return s.received.Before(from) })
}

// unit is one instance's figures over one health window of one stage.
type unit struct {
	eps        float64 // input events/s
	cpuPer1k   float64 // CPU seconds per 1000 input events (NaN without resources)
	rss        float64 // resident bytes at the window's end (NaN without resources)
	lagP99     float64 // event-lag p99, seconds
	deadLetter float64 // dead letters per input event
}

// units returns the stage's instance windows that saw input.
func (h *healthLog) units(stage contract.Stage) []unit {
	var out []unit
	for _, s := range h.samples {
		secs := s.WindowEnd.Sub(s.WindowStart).Seconds()
		if s.Service != stage || s.Events <= 0 || secs <= 0 {
			continue
		}
		u := unit{eps: float64(s.Events) / secs, cpuPer1k: math.NaN(), rss: math.NaN(),
			deadLetter: float64(s.DeadLetters) / float64(s.Events)}
		lag := s.LagMs.Quantile(0.99)
		if lag == math.MaxInt64 { // beyond the last bucket: the window's maximum
			lag = s.LagMsMax
		}
		u.lagP99 = float64(lag) / 1000
		if r := s.Resources; r != nil {
			u.cpuPer1k = r.CPUSeconds / float64(s.Events) * 1000
			u.rss = float64(r.RSSBytes)
		}
		out = append(out, u)
	}
	return out
}

// stages returns the stages the log has samples of, in pipeline order.
func (h *healthLog) stages() []contract.Stage {
	var out []contract.Stage
	for _, st := range contract.Stages() {
		if slices.ContainsFunc(h.samples, func(s receivedSample) bool { return s.Service == st }) {
			out = append(out, st)
		}
	}
	return out
}
