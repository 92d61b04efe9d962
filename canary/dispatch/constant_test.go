package dispatch_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// A constant target gets its rate even when live sends less: every live
// event once under its own campaign, then repeats under clone campaigns
// (generation g of copy k: ~dark<k+17g>) with fresh event ids, each clone
// campaign with its original's budget row. The originals' spend is exactly
// live's.
func TestConstantTargetRepeatsUnderCloneCampaigns(t *testing.T) {
	e := newEnv(t)
	dark := darkCluster(t, "load")
	tp := contract.TopicsWithPrefix(contract.DarkPrefix("load"))
	d := doc("load", contract.DarkConstant, 0, dark)
	d.Rate = 400
	e.set(d)
	w := newWorkload(10, 2)
	w.budgets(t, e.live)
	disp, _ := e.start(nil)
	waitPlan(t, disp, "load", 10*time.Second, sending(1))
	ids := w.events(t, e.live)
	live := len(w.campaigns) * w.perCamp

	const want = 200 // ten passes over the 20 live events
	var events []*kgo.Record
	kafkatest.Follow(t, dark, tp.AdEvents).Until(t, 60*time.Second, func(recs []*kgo.Record) string {
		events = recs
		if len(recs) < want {
			return fmt.Sprintf("%d events, want at least %d", len(recs), want)
		}
		return ""
	})
	originals, seen := map[string]bool{}, map[string]bool{}
	clones := map[string]bool{}
	for _, r := range events {
		ev, err := contract.DecodeAdEvent(r.Value)
		if err != nil || string(r.Key) != ev.Campaign {
			t.Fatalf("event %s: %v", r.Value, err)
		}
		if seen[ev.ID] {
			t.Fatalf("event id %s sent twice", ev.ID)
		}
		seen[ev.ID] = true
		base, k := contract.DarkCampaignOf(ev.Campaign)
		switch {
		case k == 0:
			if strings.Contains(ev.ID, "~") {
				t.Fatalf("a repeat under the original campaign: %+v", ev)
			}
			originals[base+" "+ev.ID] = true
		case k%17 != 0:
			t.Fatalf("repeat under clone %d, not a multiple of 17: %+v", k, ev)
		default:
			clones[ev.Campaign] = true
		}
	}
	if len(originals) != live {
		t.Fatalf("%d original events, want every live one once (%d)", len(originals), live)
	}
	for c, evs := range ids {
		for _, id := range evs {
			if !originals[c+" "+id] {
				t.Fatalf("live event %s of %s not sent", id, c)
			}
		}
	}
	kafkatest.Follow(t, dark, tp.Budgets).Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		rows := kafkatest.LatestOf(recs)
		for c := range clones {
			b, err := contract.DecodeBudget(rows[c])
			if err != nil || b.Campaign != c {
				return fmt.Sprintf("clone campaign %s has no budget row (%v)", c, err)
			}
		}
		for _, c := range w.campaigns {
			if rows[c] == nil {
				return "no budget row for " + c
			}
		}
		return ""
	})
}
