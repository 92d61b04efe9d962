package dispatch_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// A dispatcher that resumes live partitions at its group's committed
// offset — after a crash, the records it had copied since its last commit;
// after a rebalance, those the previous owner had — does not copy again
// what the target already has: every sampled event is on the target once.
// The crash is made by moving the group's offsets back to the start after
// a clean stop, as if none of the first round had been committed.
func TestResumedPartitionsAreNotCopiedTwice(t *testing.T) {
	e := newEnv(t)
	e.register(e.liveInstances(), 2)
	e.register(e.darkInstances("cand"), 2)
	brokers := darkCluster(t, "cand")
	e.set(doc("cand", contract.DarkIdentical, 1.5, brokers)) // clones too
	w := newWorkload(100, 3)
	w.budgets(t, e.live)
	group := func(c *dispatch.Config) { c.Group = "dispatch-resume" }
	events := kafkatest.Follow(t, brokers, contract.TopicsWithPrefix(contract.DarkPrefix("cand")).AdEvents)

	d, _, stop := e.startStoppable(group)
	waitPlan(t, d, "cand", 10*time.Second, sending(1.5))
	first := w.events(t, e.live)
	want := expectEvents(first, 1.5)
	waitFor(t, events, want, gotEvents)
	stop()

	adm := kadm.NewClient(kafkatest.Client(t, e.live))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, "dispatch-resume")
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	back := kadm.Offsets{}
	offs.Each(func(o kadm.OffsetResponse) { back.AddOffset(o.Topic, o.Partition, 0, -1) })
	if len(back) == 0 {
		t.Fatal("the group committed nothing")
	}
	if _, err := adm.CommitOffsets(ctx, "dispatch-resume", back); err != nil {
		t.Fatal(err)
	}

	second := w.events(t, e.live)
	d, reg, _ := e.startStoppable(group)
	want = slices.Sorted(slices.Values(append(want, expectEvents(second, 1.5)...)))
	waitFor(t, events, want, gotEvents)
	if got, skipped := metric(reg, "hotpair_dark_dispatch_resume_skipped_total", "target", "cand"), len(expectEvents(first, 1.5)); got != float64(skipped) {
		t.Fatalf("%v copies skipped on resuming, want the first round's %d", got, skipped)
	}
	if v := metric(reg, "hotpair_dark_dispatch_resume_failures_total", "target", "cand"); v != 0 {
		t.Fatalf("%v resume failures", v)
	}
	_ = d
}
