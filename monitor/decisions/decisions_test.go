package decisions

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func sel(active contract.Side, epoch int64, at time.Time) contract.Selection {
	return contract.Selection{V: 1, Service: contract.ServiceBudget, Active: active, Preferred: contract.Primary, Epoch: epoch, DecidedAt: at,
		Reason: "because", Sides: map[contract.Side]contract.SideState{
			contract.Primary: {Healthy: active == contract.Primary, QPS: 10, LagP99Ms: 40},
			contract.Standby: {Healthy: true, QPS: 12, LagP99Ms: 30},
		}}
}

func TestChanges(t *testing.T) {
	base := sel(contract.Primary, 1, t0)
	failover := sel(contract.Standby, 2, t0.Add(2*time.Minute))
	failover.LastSwitch = failover.DecidedAt
	degraded := failover
	degraded.Degraded, degraded.DecidedAt = true, t0.Add(4*time.Minute)
	over := failover
	over.Override = &contract.Override{V: 1, Side: contract.Standby, Until: t0.Add(time.Hour), Reason: "pin", By: "alice"}
	stag := failover
	stag.StaggerViolation = "both sides took a new build"
	for _, tc := range []struct {
		name       string
		prev       *contract.Selection
		next       contract.Selection
		cause      string
		ids, kinds []string
	}{
		{"first decision", nil, base, "stay", []string{"budget/1/switch"}, []string{"initial"}},
		{"nothing changed", &base, base, "stay", nil, nil},
		{"a new window", &base, sel(contract.Primary, 1, t0.Add(time.Minute)), "stay", nil, nil},
		{"failover", &base, failover, "failover", []string{"budget/2/switch"}, []string{"failover"}},
		{"degraded on", &failover, degraded, "stay",
			[]string{"budget/2/degraded-on/" + ms(degraded.DecidedAt)}, []string{"degraded_on"}},
		{"degraded off", &degraded, failover, "stay", []string{"budget/2/degraded-off/" + ms(failover.DecidedAt)}, []string{"degraded_off"}},
		{"override on", &failover, over, "override", []string{"budget/2/override-on/" + ms(over.DecidedAt)}, []string{"override_on"}},
		{"override off", &over, failover, "stay", []string{"budget/2/override-off/" + ms(failover.DecidedAt)}, []string{"override_off"}},
		{"stagger on", &failover, stag, "stay", []string{"budget/2/stagger-on/" + ms(stag.DecidedAt)}, []string{"stagger_on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Changes(tc.prev, tc.next, tc.cause)
			var ids, labels []string
			for _, e := range got {
				ids, labels = append(ids, e.ID), append(labels, e.Label())
				b, err := Encode(e)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Decode(b); err != nil {
					t.Fatalf("entry %s does not decode: %v\n%s", e.ID, err, b)
				}
			}
			if !reflect.DeepEqual(ids, tc.ids) || !reflect.DeepEqual(labels, tc.kinds) {
				t.Fatalf("ids %v labels %v, want %v %v", ids, labels, tc.ids, tc.kinds)
			}
		})
	}
	sw := Changes(&base, failover, "failover")[0]
	if sw.From != contract.Primary || sw.To != contract.Standby || !sw.At.Equal(failover.LastSwitch) || sw.Selection.Sides[contract.Primary].Healthy {
		t.Fatalf("switch entry %+v does not carry the evidence", sw)
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func TestDecodeRejectsBadEntries(t *testing.T) {
	good, _ := Encode(Changes(nil, sel(contract.Primary, 1, t0), "")[0])
	for _, tc := range []struct {
		name, value string
		want        error
	}{
		{"not json", "{oops", ErrInvalid},
		{"no version", strings.Replace(string(good), `"v":1,`, ``, 1), ErrInvalid},
		{"a newer version", strings.Replace(string(good), `"v":1,`, `"v":2,`, 1), ErrUnknownVersion},
		{"unknown kind", strings.Replace(string(good), `"kind":"switch"`, `"kind":"reboot"`, 1), ErrInvalid},
		{"not a service", strings.Replace(string(good), `"service":"budget"`, `"service":"ads"`, 1), ErrInvalid},
		{"wrong type", strings.Replace(string(good), `"epoch":1`, `"epoch":"one"`, 1), ErrInvalid},
		{"switch to nowhere", strings.Replace(string(good), `"to":"primary"`, `"to":"elsewhere"`, 1), ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode([]byte(tc.value)); !errors.Is(err, tc.want) {
				t.Fatalf("Decode(%s) = %v, want %v", tc.value, err, tc.want)
			}
		})
	}
	if _, err := Decode([]byte(strings.Replace(string(good), `"v":1,`, `"v":1,"added_later":true,`, 1))); err != nil {
		t.Fatalf("an unknown field is not ignored: %v", err)
	}
	// kcat shows the reasons as they read.
	s := sel(contract.Primary, 1, t0)
	s.Reason = "input_rate_low: qps 1.0 < 0.5 × standby qps 300.0"
	if b, _ := Encode(Changes(nil, s, "")[0]); !strings.Contains(string(b), s.Reason) || strings.Contains(string(b), "\n") {
		t.Fatalf("encoded: %s", b)
	}
}

func TestMergeKeepsEachIDOnceRecordedFirst(t *testing.T) {
	a := Changes(nil, sel(contract.Primary, 1, t0), "")[0]
	a.RecordedAt, a.RecordedBy = t0.Add(time.Second), "m1"
	retry := a
	retry.RecordedAt, retry.RecordedBy = t0.Add(3*time.Second), "m1-retry"
	win := WindowEntry(sel(contract.Primary, 1, t0), t0.Add(-time.Minute), t0, map[contract.Side]Verdict{contract.Primary: {Healthy: true}}, Thresholds{})
	got := Merge([]Entry{retry, win}, []Entry{a, win})
	if len(got) != 2 || got[0].ID != win.ID || got[1].ID != a.ID || got[1].RecordedBy != "m1" {
		t.Fatalf("merged %+v", got)
	}
	// The order of the copies does not matter.
	if again := Merge([]Entry{a, win}, []Entry{retry, win}); !reflect.DeepEqual(again, got) {
		t.Fatalf("merge depends on the order of the copies")
	}
}

func TestParseTime(t *testing.T) {
	now := t0
	for in, want := range map[string]time.Time{
		"12h": now.Add(-12 * time.Hour), "-12h": now.Add(-12 * time.Hour), "now": now, "0s": now,
		"2026-11-29T21:00:00Z": time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "+1h", "--1h", "12"} {
		if _, err := ParseTime(bad, now); err == nil || !strings.Contains(err.Error(), "is neither") {
			t.Errorf("ParseTime(%q) = %v", bad, err)
		}
	}
}

// Both clusters' copies are merged; bad values and entries of a newer
// version on the topic are skipped and counted, never stop the reader; a
// dead cluster leaves the other copy readable.
func TestReadMergesBothCopiesAndSkipsBadValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, s := kafkatest.Cluster(t), kafkatest.Cluster(t)
	entries := []Entry{Changes(nil, sel(contract.Primary, 1, t0), "")[0]}
	failover := sel(contract.Standby, 2, t0.Add(2*time.Minute))
	failover.LastSwitch = failover.DecidedAt
	entries = append(entries, Changes(&entries[0].Selection, failover, "failover")...)
	newer, _ := Encode(entries[0])
	bad := [][]byte{[]byte("{not json"), []byte(strings.Replace(string(newer), `"v":1,`, `"v":7,`, 1)), []byte(`{"v":1,"kind":"switch"}`)}
	for i, c := range []interface{ ListenAddrs() []string }{p, s} {
		brokers := c.ListenAddrs()
		if err := kafka.EnsureTopics(ctx, kafka.Cluster{Brokers: brokers}, 1, 1, kafka.TopicSpec{Name: Topic}); err != nil {
			t.Fatal(err)
		}
		cl := kafkatest.Client(t, brokers)
		var recs []*kgo.Record
		for j, e := range entries {
			if i == 0 && j == 1 {
				continue // the primary missed the failover (it was down)
			}
			e.RecordedAt = e.At.Add(time.Millisecond)
			b, _ := Encode(e)
			recs = append(recs, &kgo.Record{Topic: Topic, Key: []byte(e.Service.String()), Value: b, Timestamp: e.RecordedAt})
		}
		for _, v := range bad {
			recs = append(recs, &kgo.Record{Topic: Topic, Value: v, Timestamp: t0})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	both := []Source{{Side: "primary", Brokers: p.ListenAddrs()}, {Side: "standby", Brokers: s.ListenAddrs()}}
	got, stats, err := Read(ctx, ReadOptions{Sources: both})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "budget/1/switch" || got[1].ID != "budget/2/switch" {
		t.Fatalf("read %+v", got)
	}
	if st := stats[0]; st.Records != 4 || st.Entries != 1 || st.Bad != 2 || st.UnknownVersion != 1 {
		t.Fatalf("primary stats %+v", st)
	}
	// Since bounds what is read.
	got, _, err = Read(ctx, ReadOptions{Sources: both, Filter: Filter{Since: t0.Add(time.Minute)}})
	if err != nil || len(got) != 1 || got[0].Cause != "failover" {
		t.Fatalf("since: %+v, %v", got, err)
	}

	// The primary cluster is gone: the standby copy still answers.
	p.Close()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	got, stats, err = Read(dctx, ReadOptions{Sources: both})
	if err != nil || len(got) != 2 || stats[0].Err == nil || stats[1].Err != nil {
		t.Fatalf("with the primary down: %d entries, %v, stats %+v", len(got), err, stats)
	}
	if _, _, err := Read(dctx, ReadOptions{Sources: both[:1]}); err == nil {
		t.Fatal("reading only a dead cluster did not fail")
	}
}
