package sandbox

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/core/history"
	"github.com/hotpair/hotpair/pipeline"
)

// saveHistory writes to path the health samples both clusters received
// since the monitors started, as JSON lines (each sample with its record
// time as receive time): what `hotpair monitor simulate --file` replays.
// It returns how many samples it wrote.
func (s *Sandbox) saveHistory(ctx context.Context, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var all []core.Record
	for _, side := range pipeline.Sides() {
		recs, _, err := history.ReadTopic(ctx, history.TopicOptions{Brokers: s.clusters[side].brokers(), Side: side,
			Since: s.monitorsFrom, ClientID: "hotpair-sandbox-history"})
		if err != nil {
			return 0, err
		}
		all = append(all, recs...)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	if err := history.WriteJSONLines(f, all); err != nil {
		f.Close()
		return 0, err
	}
	return len(all), f.Close()
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
