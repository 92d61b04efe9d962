package replay

import (
	"path/filepath"
	"testing"
	"time"
)

func TestInspectDetectsOutOfOrderRecords(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	recs := []*Record{
		{Timestamp: at(0), Key: []byte("a"), Partition: 0, Offset: 10},
		{Timestamp: at(1000), Key: []byte("b"), Partition: 1, Offset: 5},
		{Timestamp: at(400), Key: []byte("a"), Partition: 0, Offset: 11}, // 600 ms behind, across partitions
		{Timestamp: at(1500), Key: []byte("a"), Partition: 0, Offset: 12},
		{Timestamp: at(1200), Key: []byte("a"), Partition: 0, Offset: 12}, // behind within partition 0, offset repeats
		{Timestamp: at(2999), Key: nil, Partition: 1, Offset: 6},
	}
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, recs)
	w.Close("")
	in, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	o := in.OutOfOrder
	if o.Records != 2 || o.FirstIndex != 2 || o.MaxBehind != 600*time.Millisecond || o.WithinPartition != 1 || o.OffsetRegressions != 1 {
		t.Fatalf("out of order %+v", o)
	}
	if in.Keys.Distinct != 2 || in.Keys.Null != 1 || in.Keys.Top[0] != (KeyCount{"a", 4}) || in.Partitions[0] != 4 || in.Partitions[1] != 2 {
		t.Fatalf("keys %+v partitions %v", in.Keys, in.Partitions)
	}
	if !in.First.Equal(at(0)) || !in.Last.Equal(at(2999)) || in.Span != 2999*time.Millisecond {
		t.Fatalf("span %v .. %v", in.First, in.Last)
	}
	// Seconds 0, 1 and 2 hold 2, 3 and 1 records.
	if in.PerSecond.Seconds != 2 || in.PerSecond.Min != 2 || in.PerSecond.Max != 3 {
		t.Fatalf("per second %+v", in.PerSecond)
	}
	if len(in.RateOverTime) != 3 || in.RateOverTime[1].Records != 3 || in.RateOverTime[2].Width != time.Second {
		t.Fatalf("rate over time %+v", in.RateOverTime)
	}
}
