package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/monitor/core"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sample(side contract.Side, inst string, ws time.Time) contract.HealthSample {
	s := contract.HealthSample{V: 1, Service: contract.StageBudget, Side: side, Role: contract.RoleLive, Instance: inst, Build: "b1",
		Partitions: []int32{0, 1}, TopicPartitions: 2, WindowStart: ws, WindowEnd: ws.Add(10 * time.Second),
		Events: 1000, LagMsMax: 70}
	for range 1000 {
		s.LagMs.Observe(70)
	}
	return s
}

func TestJSONLinesRoundTrip(t *testing.T) {
	recs := []core.Record{
		{Sample: sample(contract.Primary, "a", t0), ReceivedAt: t0.Add(10*time.Second + 3*time.Millisecond)},
		{Sample: sample(contract.Standby, "b", t0)}, // no receive time
	}
	var buf bytes.Buffer
	if err := WriteJSONLines(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "\n") != 2 || !strings.Contains(buf.String(), `"received_at":"2026-11-30T12:00:10.003Z"`) ||
		strings.Count(buf.String(), "received_at") != 1 {
		t.Fatalf("written:\n%s", buf.String())
	}
	got, err := ReadJSONLines(strings.NewReader("\n" + buf.String() + "  \n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip:\n%+v\n%+v", got, recs)
	}
}

func TestReadJSONLinesNamesTheBadLine(t *testing.T) {
	good, _ := contract.Encode(sample(contract.Primary, "a", t0))
	for _, tc := range []struct{ name, text, want string }{
		{"not json", string(good) + "\n{oops\n", "line 2"},
		{"missing field", string(good) + "\n" + strings.Replace(string(good), `"instance":"a",`, "", 1) + "\n", `line 2: missing_field: field "instance"`},
		{"bad received_at", strings.Replace(string(good), `{"v":1,`, `{"v":1,"received_at":"yesterday",`, 1), "line 1: received_at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSONLines(strings.NewReader(tc.text))
			if !errors.Is(err, ErrBadLine) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// produce writes samples to the health topic of a cluster with the given
// record timestamps, plus one bad record and one of the wrong side.
func produce(t *testing.T, brokers []string, side contract.Side, n int) {
	t.Helper()
	ctx := context.Background()
	topic := contract.TopicsWithPrefix("").Health
	if err := kafka.EnsureTopics(ctx, kafka.Cluster{Brokers: brokers}, 3, 1, kafka.TopicSpec{Name: topic}); err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, brokers)
	var recs []*kgo.Record
	for i := range n {
		ws := t0.Add(time.Duration(i) * 10 * time.Second)
		for _, inst := range []string{"a", "b"} {
			s := sample(side, inst, ws)
			b, _ := contract.Encode(s)
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(s.Key()), Value: b, Timestamp: s.WindowEnd.Add(time.Millisecond)})
		}
	}
	wrong, _ := contract.Encode(sample(side.Other(), "x", t0))
	recs = append(recs, &kgo.Record{Topic: topic, Value: []byte("{not a sample"), Timestamp: t0.Add(time.Hour)},
		&kgo.Record{Topic: topic, Value: wrong, Timestamp: t0.Add(time.Hour)})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestReadTopic(t *testing.T) {
	c := kafkatest.Cluster(t)
	produce(t, c.ListenAddrs(), contract.Primary, 30)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	recs, st, err := ReadTopic(ctx, TopicOptions{Brokers: c.ListenAddrs(), Side: contract.Primary})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 60 || st != (TopicStats{Records: 62, Bad: 1, WrongSide: 1}) {
		t.Fatalf("%d records, %+v", len(recs), st)
	}
	for _, r := range recs {
		if !r.ReceivedAt.Equal(r.Sample.WindowEnd.Add(time.Millisecond)) {
			t.Fatalf("receive time %v for a window ending %v", r.ReceivedAt, r.Sample.WindowEnd)
		}
	}

	// since: only the samples of windows ending at 200 s or later (and the two odd records)
	recs, st, err = ReadTopic(ctx, TopicOptions{Brokers: c.ListenAddrs(), Side: contract.Primary, Since: t0.Add(200 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 22 || st.Records != 24 {
		t.Fatalf("since: %d records, %+v", len(recs), st)
	}
	for _, r := range recs {
		if r.ReceivedAt.Before(t0.Add(200 * time.Second)) {
			t.Fatalf("record of %v read", r.ReceivedAt)
		}
	}
}

func TestReadTopicMissing(t *testing.T) {
	c := kafkatest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := ReadTopic(ctx, TopicOptions{Brokers: c.ListenAddrs(), Side: contract.Standby, Topic: "nope-health"})
	if !errors.Is(err, ErrNoTopic) || !strings.Contains(err.Error(), fmt.Sprintf("%q on the standby brokers", "nope-health")) {
		t.Fatalf("err %v", err)
	}
}
