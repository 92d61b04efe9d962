package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/core/history"
)

// saveHistory writes to path the health samples both clusters received
// since the monitors started, as JSON lines (each sample with its record
// time as receive time): what `hotpair monitor simulate --file` replays.
// The pipelines keep sampling while the clusters are read one after the
// other, so both sides are cut at the same moment, the older of the two
// newest samples: a side must not look silent in the last window only
// because it was read first. It returns how many samples it wrote and the
// moment the history ends.
func (s *Sandbox) saveHistory(ctx context.Context, path string) (int, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var all []core.Record
	var until time.Time
	for _, side := range contract.Sides() {
		recs, _, err := history.ReadTopic(ctx, history.TopicOptions{Brokers: s.clusters[side.String()].brokers(), KafkaAuth: s.kafkaAuth(), Side: side,
			Since: s.monitorsFrom, ClientID: "hotpair-sandbox-history"})
		if err != nil {
			return 0, time.Time{}, err
		}
		newest := time.Time{}
		for i := range recs {
			if at := recs[i].At(); at.After(newest) {
				newest = at
			}
		}
		if until.IsZero() || newest.Before(until) {
			until = newest
		}
		all = append(all, recs...)
	}
	all = slices.DeleteFunc(all, func(r core.Record) bool { return r.At().After(until) })
	f, err := os.Create(path)
	if err != nil {
		return 0, until, err
	}
	if err := history.WriteJSONLines(f, all); err != nil {
		f.Close()
		return 0, until, err
	}
	return len(all), until, f.Close()
}

// simulateArgs are the arguments of `hotpair monitor simulate` that replay a
// history saved by saveHistory with the thresholds of the sandbox's
// monitors (the others are the defaults of both).
func (s *Sandbox) simulateArgs(path string) []string {
	c := s.monitorConfig(0).Config
	return []string{"monitor", "simulate", "--file", path,
		"--window", c.Window.String(), "--sample-interval", c.Rules.SampleInterval.String(),
		"--partition-grace", c.Rules.PartitionGrace.String(), "--lag-limit", c.Rules.LagLimit.String(),
		"--catch-up-lag", c.Rules.CatchUpLag.String(), "--grace", c.Decision.Grace.String(),
		"--failover-after", fmt.Sprint(c.Decision.FailoverAfter)}
}
