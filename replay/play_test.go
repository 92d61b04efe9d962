package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// cluster starts a kfake cluster with the given topics (name -> partitions).
func cluster(t *testing.T, topics map[string]int32, opts ...kfake.Opt) []string {
	t.Helper()
	c := kafkatest.Cluster(t, opts...)
	brokers := c.ListenAddrs()
	for name, p := range topics {
		if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: brokers}, p, 1, kafka.TopicSpec{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	return brokers
}

// produce writes recs to topic (their Partition is ignored: goka's hash
// picks it) and returns them as the broker stored them.
func produce(t *testing.T, brokers []string, topic string, recs []*Record) {
	t.Helper()
	cl := kafkatest.Client(t, brokers, kgo.ProducerLinger(time.Millisecond))
	for _, r := range recs {
		kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		cl.Produce(t.Context(), kr, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// consume reads want records of topic, in partition order then offset order.
func consume(t *testing.T, brokers []string, topic string, want int) []*kgo.Record {
	t.Helper()
	got := kafkatest.ReadAll(t, brokers, topic, want, 20*time.Second)
	if len(got) != want {
		t.Fatalf("%s: read %d records, want %d", topic, len(got), want)
	}
	slices.SortStableFunc(got, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return got
}

func kgoRecord(r *kgo.Record) *Record {
	rec := fromKgo(r)
	if rec.Headers == nil {
		rec.Headers = []Header{}
	}
	return rec
}

// sameContent compares what a consumer sees: key, value, headers (nil and
// empty header lists are the same on the wire).
func sameContent(a, b *Record) error {
	a2, b2 := *a, *b
	a2.Timestamp, b2.Timestamp, a2.Partition, b2.Partition, a2.Offset, b2.Offset = time.Time{}, time.Time{}, 0, 0, 0, 0
	if len(a2.Headers) == 0 && len(b2.Headers) == 0 {
		a2.Headers, b2.Headers = nil, nil
	}
	return sameRecord(&a2, &b2)
}

func play(t *testing.T, o PlayerOptions) Report {
	t.Helper()
	p, err := NewPlayer(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(t.Context()); err != nil {
		t.Fatalf("play: %v\n%+v", err, p.Report())
	}
	return p.Report()
}

// Record (a past window, found by timestamp) → inspect → retime → play, on
// kfake: the played records are byte-identical to the recorded ones.
func TestRecordInspectRetimePlayRoundTrip(t *testing.T) {
	src := cluster(t, map[string]int32{"ad-events": 3})
	dst := cluster(t, map[string]int32{"ad-events": 1})
	dir := t.TempDir()

	// Three minutes of traffic, one hour ago; the window keeps the middle minute.
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	recs := testRecords(900, 40, base, 200*time.Millisecond)
	for _, r := range recs {
		if r.Value == nil {
			r.Value = []byte("tombstones do not survive some brokers' logs unchanged; keep a value")
		}
	}
	produce(t, src, "ad-events", recs)
	var inWindow []*Record
	since, until := base.Add(time.Minute), base.Add(2*time.Minute)
	for _, r := range recs {
		if !r.Timestamp.Before(since) && r.Timestamp.Before(until) {
			inWindow = append(inWindow, r)
		}
	}

	rec, err := NewRecorder(RecorderOptions{Brokers: src, Topic: "ad-events", Output: filepath.Join(dir, "rec.hpr"), Since: since, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Result(); got.Records != int64(len(inWindow)) || got.Stopped != StoppedWindow {
		t.Fatalf("recorded %+v, want %d records stopped by the window", got, len(inWindow))
	}

	in, err := Inspect(filepath.Join(dir, "rec.hpr"))
	if err != nil {
		t.Fatal(err)
	}
	if !in.Complete || in.Records != 300 || in.Keys.Distinct != 40 || in.Keys.Null == 0 || len(in.Partitions) != 3 ||
		!in.First.Equal(since) || in.Last.Sub(in.First) != time.Minute-200*time.Millisecond || in.Meta.Topic != "ad-events" {
		t.Fatalf("inspection %+v", in)
	}
	if in.MeanRate < 4.99 || in.MeanRate > 5.01 || in.OutOfOrder.WithinPartition != 0 || in.OutOfOrder.OffsetRegressions != 0 {
		t.Fatalf("rate %.3f, order %+v", in.MeanRate, in.OutOfOrder)
	}

	res, err := Retime(RetimeOptions{Input: filepath.Join(dir, "rec.hpr"), Output: filepath.Join(dir, "retimed.hpr"), QPS: 1000, Start: base})
	if err != nil || res.Records != 300 {
		t.Fatalf("retime: %+v %v", res, err)
	}
	retimed, st := readAll(t, filepath.Join(dir, "retimed.hpr"))
	recorded, _ := readAll(t, filepath.Join(dir, "rec.hpr"))
	for i, r := range retimed {
		if want := base.Add(time.Duration(i) * time.Millisecond); !r.Timestamp.Equal(want) {
			t.Fatalf("retimed record %d at %v, want %v", i, r.Timestamp, want)
		}
		if err := sameContent(r, recorded[i]); err != nil || r.Partition != recorded[i].Partition || r.Offset != recorded[i].Offset {
			t.Fatalf("retime changed record %d: %v", i, err)
		}
	}
	if !st.Complete {
		t.Fatalf("retimed file not complete: %+v", st)
	}

	rep := play(t, PlayerOptions{Recording: filepath.Join(dir, "retimed.hpr"), Targets: []Target{{Brokers: dst, Topic: "ad-events"}},
		QPS: 1000, RecordedTimestamps: true})
	if rep.Released != 300 || rep.Targets[0].Sent != 300 || rep.Targets[0].Errors != 0 {
		t.Fatalf("report %+v", rep)
	}
	got := consume(t, dst, "ad-events", 300)
	for i, kr := range got { // one target partition: file order
		if err := sameContent(kgoRecord(kr), retimed[i]); err != nil {
			t.Fatalf("played record %d: %v", i, err)
		}
		if !kr.Timestamp.Equal(retimed[i].Timestamp) {
			t.Fatalf("played record %d at %v, want the retimed %v", i, kr.Timestamp, retimed[i].Timestamp)
		}
	}
	// And the recording holds exactly the source's records of the window.
	for _, r := range recorded {
		if !slices.ContainsFunc(inWindow, func(w *Record) bool { return sameContent(r, w) == nil && r.Timestamp.Equal(w.Timestamp) }) {
			t.Fatalf("recorded record %+v was not produced in the window", r)
		}
	}
}

func TestRecordLiveWithFilters(t *testing.T) {
	src := cluster(t, map[string]int32{"ad-events": 2})
	produce(t, src, "ad-events", testRecords(50, 5, time.Now(), time.Millisecond)) // before: not recorded
	f, err := ParseFilter(nil, []string{"source=ads-1"}, []string{"advertiser=adv-2"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "live.hpr")
	var progress []Progress
	recording := make(chan struct{}) // closed at the first progress call: the recorder is consuming
	rec, err := NewRecorder(RecorderOptions{Brokers: src, Topic: "ad-events", Output: out, Duration: 3 * time.Second, Filter: f,
		ProgressInterval: 500 * time.Millisecond, Progress: func(p Progress) {
			if len(progress) == 0 {
				close(recording)
			}
			progress = append(progress, p)
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(t.Context()) }()
	select {
	case <-recording:
	case err := <-done:
		t.Fatalf("recorder ended before recording: %v", err)
	}
	live := testRecords(200, 20, time.Now(), time.Millisecond)
	produce(t, src, "ad-events", live)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var want []*Record
	for _, r := range live {
		if f.Match(r) {
			want = append(want, r)
		}
	}
	got, st := readAll(t, out)
	if len(got) != len(want) || len(want) == 0 || st.Trailer.Stopped != StoppedDuration {
		t.Fatalf("recorded %d (stopped %q), want %d", len(got), st.Trailer.Stopped, len(want))
	}
	for _, g := range got {
		if !f.Match(g) {
			t.Fatalf("recorded a record the filter drops: %s", g.Value)
		}
	}
	if len(progress) < 3 || progress[len(progress)-1].Stopped != StoppedDuration || progress[len(progress)-1].Records != int64(len(want)) {
		t.Fatalf("progress calls %+v", progress)
	}
}

// Two targets get the same records in the same order, with the injected
// headers, on the partitions goka would pick.
func TestPlayTwoTargetsLockstepSameRecords(t *testing.T) {
	a := cluster(t, map[string]int32{"in": 4})
	b := cluster(t, map[string]int32{"in": 4, "goka": 4})
	path := filepath.Join(t.TempDir(), "r.hpr")
	recs := testRecords(2000, 64, t0, time.Millisecond)
	w := writeFile(t, path, recs)
	w.Close("")
	f, _ := ParseFilter([]string{"camp-1*", "camp-2*"}, nil, nil)
	rep := play(t, PlayerOptions{Recording: path, Targets: []Target{{Brokers: a, Topic: "in"}, {Brokers: b, Topic: "in"}}, Unpaced: true, Filter: f,
		Headers: []Header{{Key: "replay", Value: []byte("run-1")}}})
	var want []*Record
	for _, r := range recs {
		if f.Match(r) {
			want = append(want, r)
		}
	}
	if rep.Released != int64(len(want)) || rep.Filtered != int64(len(recs)-len(want)) {
		t.Fatalf("released %d, filtered %d; want %d, %d", rep.Released, rep.Filtered, len(want), len(recs)-len(want))
	}
	ga, gb := consume(t, a, "in", len(want)), consume(t, b, "in", len(want))
	for i := range ga {
		if ga[i].Partition != gb[i].Partition || ga[i].Offset != gb[i].Offset || !ga[i].Timestamp.Equal(gb[i].Timestamp) {
			t.Fatalf("record %d: a at %d/%d %v, b at %d/%d %v", i, ga[i].Partition, ga[i].Offset, ga[i].Timestamp, gb[i].Partition, gb[i].Offset, gb[i].Timestamp)
		}
		if err := sameContent(kgoRecord(ga[i]), kgoRecord(gb[i])); err != nil {
			t.Fatalf("record %d differs between targets: %v", i, err)
		}
		h := ga[i].Headers[len(ga[i].Headers)-1]
		if h.Key != "replay" || string(h.Value) != "run-1" {
			t.Fatalf("record %d: last header %s=%s, want the injected replay=run-1", i, h.Key, h.Value)
		}
	}
	// Per partition, the order is the recording's order.
	for p := int32(0); p < 4; p++ {
		var wantP []*Record
		for _, r := range want {
			if r.Key != nil && kafka.PartitionFor(string(r.Key), 4) == p {
				wantP = append(wantP, r)
			}
		}
		var gotP []*Record
		for _, kr := range ga {
			if kr.Partition == p {
				gotP = append(gotP, kgoRecord(kr))
			}
		}
		if len(gotP) != len(wantP) {
			t.Fatalf("partition %d: %d records, goka's hash puts %d there", p, len(gotP), len(wantP))
		}
		for i := range gotP {
			if !bytes.Equal(gotP[i].Value, wantP[i].Value) {
				t.Fatalf("partition %d record %d out of order", p, i)
			}
		}
	}
	// The partitions agree with kafka.GokaPartitioner's.
	produce(t, b, "goka", want)
	gk := consume(t, b, "goka", len(want))
	for i := range gk {
		if gk[i].Partition != gb[i].Partition || !bytes.Equal(gk[i].Value, gb[i].Value) {
			t.Fatalf("record %d: GokaPartitioner put it on %d, the player on %d", i, gk[i].Partition, gb[i].Partition)
		}
	}
}

// --percent 50 keeps the same keys in two runs, about half of them, at half
// the recording's retimed rate.
func TestPlayPercentPicksTheSameKeysEveryRun(t *testing.T) {
	brokers := cluster(t, map[string]int32{"run1": 1, "run2": 1})
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw.hpr")
	w := writeFile(t, raw, testRecords(3000, 300, t0, time.Millisecond))
	w.Close("")
	retimed := filepath.Join(dir, "retimed.hpr")
	if _, err := Retime(RetimeOptions{Input: raw, Output: retimed, QPS: 6000}); err != nil {
		t.Fatal(err)
	}
	r1 := play(t, PlayerOptions{Recording: retimed, Targets: []Target{{Brokers: brokers, Topic: "run1"}}, Percent: 50})
	r2 := play(t, PlayerOptions{Recording: retimed, Targets: []Target{{Brokers: brokers, Topic: "run2"}}, Percent: 50})
	if r1.Released != r2.Released || r1.TargetRate != 3000 || r1.Mode != "percent" {
		t.Fatalf("run 1 %+v\nrun 2 %+v", r1, r2)
	}
	if r1.Released < 1200 || r1.Released > 1800 {
		t.Fatalf("50%% kept %d of 3000 records", r1.Released)
	}
	g1, g2 := consume(t, brokers, "run1", int(r1.Released)), consume(t, brokers, "run2", int(r2.Released))
	keys := map[string]bool{}
	for i := range g1 {
		if !bytes.Equal(g1[i].Key, g2[i].Key) || !bytes.Equal(g1[i].Value, g2[i].Value) {
			t.Fatalf("record %d: run 1 %s, run 2 %s", i, g1[i].Value, g2[i].Value)
		}
		keys[string(g1[i].Key)] = true
	}
	// Whole keys are kept or dropped: a kept key has all of its records.
	all, _ := readAll(t, raw)
	for _, r := range all {
		if r.Key != nil && keys[string(r.Key)] != KeepPercent(r, 50) {
			t.Fatalf("key %s: played %v, selection says %v", r.Key, keys[string(r.Key)], KeepPercent(r, 50))
		}
	}
}

// A target that cannot keep up slows the whole play down (the fast target
// waits too), loses nothing, and the report shows where the time went.
func TestPlaySlowTargetAppliesBackpressure(t *testing.T) {
	slowCluster := kafkatest.Cluster(t)
	slow := slowCluster.ListenAddrs()
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: slow}, 1, 1, kafka.TopicSpec{Name: "in"}); err != nil {
		t.Fatal(err)
	}
	slowCluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		time.Sleep(20 * time.Millisecond) // every produce request takes 20 ms
		return nil, nil, false
	})
	fast := cluster(t, map[string]int32{"in": 1})
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(300, 10, t0, time.Millisecond))
	w.Close("")
	rep := play(t, PlayerOptions{Recording: path, Targets: []Target{{Brokers: slow, Topic: "in"}, {Brokers: fast, Topic: "in"}}, QPS: 2000, MaxInFlight: 4})
	if rep.Targets[0].Sent != 300 || rep.Targets[1].Sent != 300 {
		t.Fatalf("acknowledged %d and %d of 300", rep.Targets[0].Sent, rep.Targets[1].Sent)
	}
	if rep.Targets[0].Backpressure <= 0 || rep.Targets[0].Waits == 0 || rep.Stalls == 0 {
		t.Fatalf("slow target's backpressure is not in the report: %+v", rep)
	}
	if rep.AchievedRate > 1000 {
		t.Fatalf("achieved %.0f/s through a target that takes about 200/s", rep.AchievedRate)
	}
}

func TestPlayRejectsMissingTopicAndBadOptions(t *testing.T) {
	brokers := cluster(t, map[string]int32{"in": 1})
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(10, 2, t0, time.Millisecond))
	w.Close("")
	p, err := NewPlayer(PlayerOptions{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "nope"}}, QPS: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := p.Run(ctx); !errors.Is(err, ErrNoTopic) {
		t.Fatalf("missing topic: got %v, want ErrNoTopic", err)
	}
	for _, o := range []PlayerOptions{
		{Targets: []Target{{Brokers: brokers, Topic: "in"}}},
		{Recording: path},
		{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "in"}}, QPS: 10, Percent: 50},
		{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "in"}}, Percent: 101},
		{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "in"}}, Loop: true},
	} {
		if _, err := NewPlayer(o); err == nil {
			t.Errorf("NewPlayer(%+v) accepted", o)
		}
	}
	for _, s := range []string{"localhost:9092", "/topic", "localhost/topic", "a:1/b/c"} {
		if _, err := ParseTarget(s); !errors.Is(err, ErrBadTarget) {
			t.Errorf("ParseTarget(%q) = %v", s, err)
		}
	}
	if tg, err := ParseTarget("h1:9092,h2:9093/ad-events"); err != nil || fmt.Sprint(tg.Brokers) != "[h1:9092 h2:9093]" || tg.Topic != "ad-events" {
		t.Errorf("ParseTarget: %+v %v", tg, err)
	}
}

// Ctrl-C ends a play cleanly: what was sent before is delivered, nothing
// is reported as failed.
func TestPlayInterruptedDeliversWhatWasSent(t *testing.T) {
	brokers := cluster(t, map[string]int32{"in": 2})
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(1000, 10, t0, time.Millisecond))
	w.Close("")
	p, err := NewPlayer(PlayerOptions{Recording: path, Targets: []Target{{Brokers: brokers, Topic: "in"}}, QPS: 200})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("interrupted play: %v", err)
	}
	rep := p.Report()
	if rep.Stopped != StoppedInterrupted || rep.Released < 1 || rep.Released > 141 || rep.Targets[0].Sent != rep.Released || rep.Targets[0].Errors != 0 {
		t.Fatalf("report %+v", rep)
	}
	if got := consume(t, brokers, "in", int(rep.Released)); len(got) != int(rep.Released) {
		t.Fatalf("target holds %d records, %d were sent", len(got), rep.Released)
	}
}
