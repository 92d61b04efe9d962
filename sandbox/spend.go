package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SideSpend compares one side's spend with the load generator's ground truth.
type SideSpend struct {
	Side string `json:"side"`
	// Campaigns that spent, and how many of them match exactly.
	Campaigns int `json:"campaigns"`
	Exact     int `json:"exact"`
	// WrittenMicros is what the load generator wrote; LostMicros what this
	// side's ingest could not deliver (a cut longer than its buffer);
	// ExpectedMicros = written − lost; ObservedMicros is the sum of the
	// side's budget enforcer's lifetime spend.
	WrittenMicros  int64 `json:"written_micros"`
	LostMicros     int64 `json:"lost_micros"`
	LostEvents     int64 `json:"lost_events"`
	ExpectedMicros int64 `json:"expected_micros"`
	ObservedMicros int64 `json:"observed_micros"`
	// Mismatches are the first campaigns that differ.
	Mismatches []CampaignSpend `json:"mismatches,omitempty"`
}

// OK reports whether every campaign matches.
func (s SideSpend) OK() bool { return s.Exact == s.Campaigns }

// String is one line for a timeline.
func (s SideSpend) String() string {
	line := fmt.Sprintf("%s: %d/%d campaigns exact; expected %d µ (written %d − lost %d in %d events), observed %d µ",
		s.Side, s.Exact, s.Campaigns, s.ExpectedMicros, s.WrittenMicros, s.LostMicros, s.LostEvents, s.ObservedMicros)
	for _, m := range s.Mismatches {
		line += fmt.Sprintf("; %s expected %d observed %d", m.Campaign, m.Expected, m.Observed)
	}
	return line
}

// CampaignSpend is one campaign's spend on one side.
type CampaignSpend struct {
	Campaign string `json:"campaign"`
	Expected int64  `json:"expected"`
	Observed int64  `json:"observed"`
}

// CheckSpend stops the load generator and waits, up to timeout, until both
// sides have caught up: every campaign's lifetime spend on each side equals
// what was written to that side minus what its ingest lost. It returns the
// comparison of each side as it last stood.
func (s *Sandbox) CheckSpend(ctx context.Context, timeout time.Duration) []SideSpend {
	g := s.loadGen()
	g.setPaused(true)
	deadline := time.Now().Add(timeout)
	var out []SideSpend
	for {
		out = s.compareSpend(ctx)
		if (okAll(out) || time.Now().After(deadline)) || ctx.Err() != nil {
			return out
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func okAll(ss []SideSpend) bool {
	for _, s := range ss {
		if !s.OK() {
			return false
		}
	}
	return len(ss) > 0
}

func (s *Sandbox) compareSpend(ctx context.Context) []SideSpend {
	truth, lost, lostRecs := s.loadGen().groundTruth()
	var out []SideSpend
	for _, side := range contract.Sides() {
		observed, err := s.lifetimeSpend(ctx, side.String())
		ss := SideSpend{Side: side.String(), LostEvents: lostRecs[side.String()]}
		for c, written := range truth {
			ss.Campaigns++
			ss.WrittenMicros += written
			ss.LostMicros += lost[side.String()][c]
			want := written - lost[side.String()][c]
			ss.ExpectedMicros += want
			ss.ObservedMicros += observed[c]
			if err == nil && observed[c] == want {
				ss.Exact++
			} else if len(ss.Mismatches) < 5 {
				ss.Mismatches = append(ss.Mismatches, CampaignSpend{Campaign: c, Expected: want, Observed: observed[c]})
			}
		}
		slices.SortFunc(ss.Mismatches, func(a, b CampaignSpend) int { return cmpString(a.Campaign, b.Campaign) })
		out = append(out, ss)
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lifetimeSpend reads a side's budget-status topic to its end and returns
// each campaign's latest lifetime spend.
func (s *Sandbox) lifetimeSpend(ctx context.Context, side string) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.readTopic(ctx, side, s.topics.BudgetStatus, func(r *kgo.Record) {
		if st, err := contract.DecodeBudgetStatus(r.Value); err == nil {
			out[st.Campaign] = st.SpentLifetimeMicros
		}
	})
	if err != nil && !errors.Is(err, kafka.ErrNoTopic) {
		return nil, err
	}
	return out, nil
}

// readTopic hands every record of a cluster's topic (cluster by name), up
// to its end now, to fn; a topic that does not exist is kafka.ErrNoTopic.
func (s *Sandbox) readTopic(ctx context.Context, cluster, topic string, fn func(*kgo.Record)) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := kafka.NewClient(s.kafkaCluster(cluster), "hotpair-sandbox-reader")
	if err != nil {
		return err
	}
	defer cl.Close()
	err = kafka.ReadRange(ctx, cl, topic, time.Time{}, func(r *kgo.Record) bool { fn(r); return true })
	if err != nil {
		return fmt.Errorf("reading %s of the %s cluster: %w", topic, cluster, err)
	}
	return nil
}
