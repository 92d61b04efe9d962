package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// TestMalformedRecordsGoToDeadLetters writes malformed ad events, spend events
// and budget rows of every kind between good ones. Each bad record must land
// in hotpair-dlq with its own reason and its source coordinates, the good
// records around them must be processed, and totals must stay exact.
func TestMalformedRecordsGoToDeadLetters(t *testing.T) {
	brokers := kafkatest.Cluster(t).ListenAddrs()
	startPipeline(t, testOptions(brokers, contract.Primary))
	cl := kafkatest.Client(t, brokers)
	ctx := context.Background()

	w := newWorkload(5, 400, 3)
	in, err := NewIngester(IngestOptions{Clusters: map[contract.Side][]string{contract.Primary: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	w.writeBudgets(t, in)

	now := time.Now().UTC()
	good := func(id string) string {
		return fmt.Sprintf(`{"v":1,"id":%q,"type":"click","campaign":"camp-001","advertiser":"adv-1","price_micros":1000,"ts":%q}`, id, now.Format(time.RFC3339Nano))
	}
	badAds := []struct {
		reason contract.Reason
		key    string
		value  []byte
	}{
		{contract.ReasonEmptyValue, "camp-001", nil},
		{contract.ReasonInvalidJSON, "camp-001", []byte(`{"v":1,`)},
		{contract.ReasonNotObject, "camp-001", []byte(`[1,2,3]`)},
		{contract.ReasonUnsupportedVersion, "camp-001", []byte(strings.Replace(good("a4"), `"v":1`, `"v":2`, 1))},
		{contract.ReasonMissingField, "camp-001", []byte(strings.Replace(good("a5"), `"campaign":"camp-001",`, ``, 1))},
		{contract.ReasonWrongType, "camp-001", []byte(strings.Replace(good("a6"), `"price_micros":1000`, `"price_micros":"1000"`, 1))},
		{contract.ReasonNegativeAmount, "camp-001", []byte(strings.Replace(good("a7"), `"price_micros":1000`, `"price_micros":-5`, 1))},
		{contract.ReasonInvalidEnum, "camp-001", []byte(strings.Replace(good("a8"), `"click"`, `"view"`, 1))},
		{contract.ReasonInvalidTimestamp, "camp-001", []byte(strings.Replace(good("a9"), now.Format(time.RFC3339Nano), "yesterday", 1))},
		{contract.ReasonTimestampRange, "camp-001", []byte(strings.Replace(good("a10"), now.Format(time.RFC3339Nano), "1990-01-01T00:00:00Z", 1))},
		{contract.ReasonFutureTimestamp, "camp-001", []byte(strings.Replace(good("a11"), now.Format(time.RFC3339Nano), now.Add(48*time.Hour).Format(time.RFC3339Nano), 1))},
		{contract.ReasonKeyMismatch, "camp-002", []byte(good("a12"))},
		{contract.ReasonInvalidID, "camp 001", []byte(strings.ReplaceAll(good("a13"), "camp-001", "camp 001"))},
	}
	spend := func(id string) string {
		ws := now.Truncate(time.Second)
		return fmt.Sprintf(`{"v":1,"id":"camp-001/%d%s","campaign":"camp-001","advertiser":"adv-1","spend_micros":7,"events":1,"window_start":%q,"window_end":%q,"emitted_at":%q}`,
			ws.UnixMilli(), id, ws.Format(time.RFC3339Nano), ws.Add(time.Second).Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	badSpend := []struct {
		reason contract.Reason
		key    string
		value  []byte
	}{
		{contract.ReasonEmptyValue, "camp-001", nil},
		{contract.ReasonInvalidJSON, "camp-001", []byte(`not json`)},
		{contract.ReasonNotObject, "camp-001", []byte(`"a string"`)},
		{contract.ReasonUnsupportedVersion, "camp-001", []byte(strings.Replace(spend("/late/s4"), `"v":1`, `"v":0`, 1))},
		{contract.ReasonMissingField, "camp-001", []byte(strings.Replace(spend("/late/s5"), `"spend_micros":7,`, ``, 1))},
		{contract.ReasonWrongType, "camp-001", []byte(strings.Replace(spend("/late/s6"), `"events":1`, `"events":1.5`, 1))},
		{contract.ReasonNegativeAmount, "camp-001", []byte(strings.Replace(spend("/late/s7"), `"spend_micros":7`, `"spend_micros":-7`, 1))},
		{contract.ReasonInvalidSpendID, "camp-001", []byte(spend("-x"))},
		{contract.ReasonInvalidWindow, "camp-001", []byte(strings.Replace(spend("/late/s9"), `"window_end":"`+now.Truncate(time.Second).Add(time.Second).Format(time.RFC3339Nano), `"window_end":"`+now.Truncate(time.Second).Format(time.RFC3339Nano), 1))},
		{contract.ReasonInvalidTimestamp, "camp-001", []byte(strings.Replace(spend("/late/s10"), `"emitted_at":"`+now.Format(time.RFC3339Nano), `"emitted_at":"noon`, 1))},
		{contract.ReasonKeyMismatch, "camp-003", []byte(spend("/late/s11"))},
	}
	badBudget := []byte(`{"v":1,"campaign":"camp-002","advertiser":"adv-2","daily_micros":5,"lifetime_micros":0,"timezone":"Mars/Olympus"}`)

	produce := func(topic, key string, value []byte) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range badAds {
		produce("ad-events", b.key, b.value)
		produce("ad-events", "camp-001", []byte(good(fmt.Sprintf("good-%d", i))))
		w.truth["camp-001"] += 1000
	}
	for _, b := range badSpend {
		produce("spend", b.key, b.value)
	}
	produce("budgets", "camp-002", badBudget)
	w.writeEvents(t, in)
	waitStatuses(t, brokers, 60*time.Second, spentIs(w.truth))

	// Every bad record is in the DLQ with its reason, once per stage that read it.
	want := map[string]bool{}
	for _, b := range badAds {
		want["aggregator/ad-events/"+string(b.reason)] = true
	}
	for _, svc := range contract.Services() {
		for _, b := range badSpend {
			want[svc.String()+"/spend/"+string(b.reason)] = true
		}
		want[svc.String()+"/budgets/"+string(contract.ReasonInvalidTimezone)] = true
	}
	var dlq []*kgo.Record
	kafkatest.Follow(t, brokers, "hotpair-dlq").Until(t, 30*time.Second, func(recs []*kgo.Record) string {
		dlq = recs
		if len(dlq) < len(want) {
			return fmt.Sprintf("%d dead letters, want %d", len(dlq), len(want))
		}
		return ""
	})
	got := map[string]bool{}
	for _, r := range dlq {
		h := headers(r)
		k := h["hotpair-service"] + "/" + h["hotpair-source-topic"] + "/" + h["hotpair-reason"]
		if got[k] {
			t.Errorf("dead letter %s twice", k)
		}
		got[k] = true
		// The source coordinates point at the original record, byte for byte.
		part, _ := strconv.Atoi(h["hotpair-source-partition"])
		off, _ := strconv.ParseInt(h["hotpair-source-offset"], 10, 64)
		orig := recordAt(t, cl, h["hotpair-source-topic"], int32(part), off)
		if string(orig.Value) != string(r.Value) || string(orig.Key) != string(r.Key) {
			t.Errorf("dead letter %s: source %s/%d/%d holds %q, dead letter %q", k, h["hotpair-source-topic"], part, off, orig.Value, r.Value)
		}
		if h["hotpair-error"] == "" {
			t.Errorf("dead letter %s has no hotpair-error", k)
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing dead letter %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("unexpected dead letter %s", k)
		}
	}
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

func recordAt(t *testing.T, cl *kgo.Client, topic string, partition int32, offset int64) *kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s/%d/%d: %v", topic, partition, offset, ctx.Err())
		}
		var rec *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if rec == nil && r.Offset == offset {
				rec = r
			}
		})
		if rec != nil {
			return rec
		}
	}
}
