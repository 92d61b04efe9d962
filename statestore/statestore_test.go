package statestore

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lovoo/goka/storage"
)

func TestMemoryStorage(t *testing.T) {
	s := NewMemory()
	for _, k := range []string{"b", "a", "c/2", "c/1", "d"} {
		if err := s.Set(k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := s.Get("a"); string(v) != "v-a" {
		t.Fatalf("get a: %q", v)
	}
	if ok, _ := s.Has("zz"); ok {
		t.Fatal("has a missing key")
	}
	if err := s.Delete("d"); err != nil {
		t.Fatal(err)
	}
	if off, _ := s.GetOffset(-2); off != -2 {
		t.Fatalf("offset before any: %d", off)
	}
	_ = s.SetOffset(41)
	if off, _ := s.GetOffset(-2); off != 41 {
		t.Fatalf("offset: %d", off)
	}
	keys := func(it storage.Iterator, err error) []string {
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for it.Next() {
			ks = append(ks, string(it.Key()))
		}
		return ks
	}
	if got := keys(s.Iterator()); !slices.Equal(got, []string{"a", "b", "c/1", "c/2"}) {
		t.Fatalf("iterator keys %v", got)
	}
	if got := keys(s.IteratorWithRange([]byte("c/"), nil)); !slices.Equal(got, []string{"c/1", "c/2"}) {
		t.Fatalf("prefix keys %v", got)
	}
	if got := keys(s.IteratorWithRange([]byte("a"), []byte("c/2"))); !slices.Equal(got, []string{"a", "b", "c/1"}) {
		t.Fatalf("range keys %v", got)
	}
	it, _ := s.Iterator()
	if !it.Seek([]byte("bb")) || string(it.Key()) != "c/1" {
		t.Fatalf("seek bb landed on %q", it.Key())
	}
	if v, _ := it.Value(); string(v) != "v-c/1" {
		t.Fatalf("value after seek %q", v)
	}
	_ = s.Close()
	if err := s.Set("x", []byte("1")); err == nil {
		t.Fatal("set after close succeeded")
	}
}

func TestWakeups(t *testing.T) {
	w := NewWakeups()
	now := time.UnixMilli(10_000)
	w.Set(0, "a", 5_000)
	w.Set(0, "b", 12_000)
	w.Set(1, "c", 9_000)
	w.Set(1, "d", 9_500)
	w.Set(0, "a", 11_000) // moved later: the old entry is stale
	w.Set(1, "d", 0)      // cleared
	wall := func(int32) int64 { return now.UnixMilli() }
	got := w.Due(now, wall, time.Second, 100)
	if !slices.Equal(got, []string{"c"}) {
		t.Fatalf("due at 10s: %v, want [c]", got)
	}
	// c is re-armed at now+retry until its state is written again.
	if got := w.Due(now.Add(500*time.Millisecond), func(int32) int64 { return 10_500 }, time.Second, 100); len(got) != 0 {
		t.Fatalf("re-armed key due before its retry: %v", got)
	}
	later := func(int32) int64 { return 11_500 }
	got = w.Due(now.Add(1500*time.Millisecond), later, time.Second, 100)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("due at 11.5s: %v, want [a c]", got)
	}
	// Per-partition thresholds: partition 0 at its own clock.
	w.Set(0, "e", 20_000)
	w.Set(1, "f", 20_000)
	got = w.Due(now, func(p int32) int64 { return map[int32]int64{0: 30_000, 1: 0}[p] }, time.Hour, 100)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b", "e"}) { // a was re-armed at 12.5s
		t.Fatalf("per-partition due: %v, want [a b e]", got)
	}
	w.DropPartition(1)
	if n := w.Len(); n != 3 { // a, b and e re-armed on partition 0
		t.Fatalf("len after dropping partition 1: %d", n)
	}
	if got := w.Due(now, func(int32) int64 { return 1 << 62 }, time.Hour, 1); len(got) != 1 {
		t.Fatalf("limit 1 returned %d keys", len(got))
	}

	// A partition not assigned to the instance (a hot standby's) is indexed
	// but sends no wake-ups.
	w = NewWakeups()
	w.Set(0, "a", 1)
	w.Set(2, "g", 1)
	w.Assign([]int32{0})
	all := func(int32) int64 { return 5 }
	if got := w.Due(now, all, time.Hour, 100); !slices.Equal(got, []string{"a"}) || w.Len() != 1 {
		t.Fatalf("with partition 0 assigned: woke %v (len %d), want [a]", got, w.Len())
	}
	w.Assign([]int32{0, 2})
	if got := w.Due(now, all, time.Hour, 100); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("with partition 2 assigned too: woke %v, want [g]", got)
	}
}

// A memory builder hands out the same store for a partition each time: a
// store closed at the end of a group session and opened at the next keeps its
// data and offset.
func TestMemoryStoreOutlivesSessions(t *testing.T) {
	b, err := Config{Backend: BackendMemory}.Builder("primary", "budget", "t-table", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := b("t-table", 3)
	_ = s.Open()
	_ = s.Set("k", []byte("v"))
	_ = s.SetOffset(41)
	_ = s.Close()
	again, _ := b("t-table", 3)
	_ = again.Open()
	if v, _ := again.Get("k"); string(v) != "v" {
		t.Fatalf("reopened store lost its data: %q", v)
	}
	if off, _ := again.GetOffset(-2); off != 41 {
		t.Fatalf("reopened store offset %d, want 41", off)
	}
	if other, _ := b("t-table", 4); other == again {
		t.Fatal("two partitions share a store")
	}
	fresh, _ := Config{Backend: BackendMemory}.Builder("primary", "budget", "t-table", nil)
	if s, _ := fresh("t-table", 3); s == again {
		t.Fatal("a new builder reuses the old one's stores")
	}
}

func TestIndexedStorageFeedsWakeups(t *testing.T) {
	w := NewWakeups()
	base := NewMemory()
	var c CampaignCodec
	enc := func(at int64) []byte {
		b, err := c.Encode(&Campaign{NextDayMs: at})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// A store that already holds states (a reopened leveldb) is indexed on Open.
	_ = base.Set("old", enc(1_000))
	s := &indexed{Storage: base, partition: 3, w: w}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	_ = s.Set("new", enc(2_000))
	_ = s.Set("none", enc(0))
	got := w.Due(time.UnixMilli(5_000), func(int32) int64 { return 5_000 }, time.Hour, 10)
	slices.Sort(got)
	if !slices.Equal(got, []string{"new", "old"}) {
		t.Fatalf("due %v, want [new old]", got)
	}
	_ = s.Delete("new")
	_ = s.Close()
	if w.Len() != 0 {
		t.Fatalf("closing the partition's store left %d wake-ups", w.Len())
	}
}

func TestCodecRoundTrip(t *testing.T) {
	var c WindowsCodec
	in := &Windows{Panes: []Pane{{StartMs: 10_000, Micros: 5, Events: 1}}, SizeMs: 10_000, LatenessMs: 5_000, ClosedThroughMs: 10_000, NextOffset: 7}
	b, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if WakeAtOf(b) != 25_000 {
		t.Fatalf("wake at %d, want 25000", WakeAtOf(b))
	}
	out, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("round trip %+v -> %+v", in, out)
	}
	if _, err := c.Decode([]byte(`{"panes":[]}`)); err == nil {
		t.Fatal("decoded a value without the envelope")
	}
	if _, err := c.Encode(&Campaign{}); err == nil {
		t.Fatal("encoded a value of the wrong type")
	}
}

func TestLedgerCountsEachSpendOnce(t *testing.T) {
	var l Ledger
	apply := func(id string, late bool, start int64, day string, micros int64) bool {
		return l.Apply(Spend{ID: id, Late: late, WindowStartMs: start, Day: day, Micros: micros})
	}
	for i, s := range []struct {
		id           string
		late         bool
		start        int64
		day          string
		micros       int64
		applied      bool
		today, total int64
	}{
		{"c/1000", false, 1000, "2026-01-01", 10, true, 10, 10},
		{"c/2000", false, 2000, "2026-01-01", 5, true, 15, 15},
		{"c/1000", false, 1000, "2026-01-01", 10, false, 15, 15},        // duplicate
		{"c/1000/late/e1", true, 1000, "2026-01-01", 3, true, 18, 18},   // late event
		{"c/1000/late/e1", true, 1000, "2026-01-01", 3, false, 18, 18},  // late duplicate
		{"c/86400000", false, 86_400_000, "2026-01-02", 7, true, 7, 25}, // next day
		{"c/3000/late/e2", true, 3000, "2026-01-01", 4, true, 7, 29},    // late, of yesterday
		{"c/86410000", false, 86_410_000, "2026-01-02", 1, true, 8, 30},
	} {
		if ok := apply(s.id, s.late, s.start, s.day, s.micros); ok != s.applied || l.SpentToday != s.today || l.SpentLifetime != s.total {
			t.Fatalf("step %d (%s): applied %v, today %d, lifetime %d; want %v %d %d", i, s.id, ok, l.SpentToday, l.SpentLifetime, s.applied, s.today, s.total)
		}
	}
	if l.Duplicates != 2 || l.Applied != 6 {
		t.Fatalf("applied %d duplicates %d", l.Applied, l.Duplicates)
	}
	if !l.Roll("2026-01-03") || l.SpentToday != 0 || l.Roll("2026-01-02") {
		t.Fatalf("roll: %+v", l)
	}
	for i := range MaxLateIDs + 10 {
		apply(fmt.Sprintf("c/5000/late/x%d", i), true, 5000, "2026-01-03", 1)
	}
	if len(l.Late) != MaxLateIDs {
		t.Fatalf("late ids kept: %d, want %d", len(l.Late), MaxLateIDs)
	}
}

func TestWindowsAdd(t *testing.T) {
	var w Windows
	add := func(offset, tsMs, micros, clockMs int64) AddResult {
		return w.Add(Event{Offset: offset, TsMs: tsMs, Advertiser: "a", Micros: micros, ClockMs: clockMs}, 10_000, 5_000)
	}
	if r := add(0, 12_345, 5, 12_345); r != Added {
		t.Fatal(r)
	}
	if r := add(1, 3_000, 7, 12_345); r != Added { // an older window, open on the clock
		t.Fatal(r)
	}
	if r := add(1, 12_000, 7, 12_345); r != Duplicate { // same offset again
		t.Fatal(r)
	}
	if w.Panes[0].StartMs != 0 || w.Panes[1].StartMs != 10_000 {
		t.Fatalf("panes not ordered: %+v", w.Panes)
	}
	if got := w.CloseDue(14_999); len(got) != 0 {
		t.Fatalf("closed before end+lateness: %+v", got)
	}
	if got := w.CloseDue(15_000); len(got) != 1 || got[0].Micros != 7 {
		t.Fatalf("close at 15s: %+v", got)
	}
	if r := add(2, 9_999, 1, 15_000); r != Late {
		t.Fatalf("event of an emitted window: %v", r)
	}
	// A window the clock has passed is closed, emitted or not: its late
	// events are late whenever the pane is emitted, so both sides agree.
	if r := add(3, 10_001, 1, 25_000); r != Late || len(w.Panes) != 1 || w.Panes[0].Micros != 5 {
		t.Fatalf("event of a window closed on the clock but not emitted: %v, panes %+v", r, w.Panes)
	}
	if got := w.CloseDue(25_000); len(got) != 1 || got[0].Micros != 5 || w.ClosedThroughMs != 20_000 {
		t.Fatalf("close at 25s: %+v, closed through %d", got, w.ClosedThroughMs)
	}
	if WindowStartMs(-1, 10) != -10 || WindowStartMs(19, 10) != 10 {
		t.Fatal("window alignment")
	}
}

func TestCampaignBinaryRoundTrip(t *testing.T) {
	in := &Campaign{
		Ledger:    Ledger{Day: "2026-11-30", SpentToday: 5, SpentLifetime: -0, Through: 1796032800000, Late: []string{"a/1/late/x", "b"}, Applied: 9, Duplicates: 2},
		Budget:    &BudgetRow{Advertiser: "adv", DailyMicros: 1e9, LifetimeMicros: 0, Timezone: "Asia/Kolkata"},
		Status:    "daily_capped",
		Pacer:     &Pacer{Rate: 0.125, DemandPerSec: 1234.5},
		Bidder:    &Bidder{Multiplier: 1.75, LastMs: 99},
		NextDayMs: 1796083200000,
	}
	var c CampaignCodec
	b, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	// Every truncation is an error, never a panic or a silent zero.
	for n := headerLen; n < len(b); n++ {
		if _, err := c.Decode(b[:n]); err == nil {
			t.Fatalf("decoding %d of %d bytes succeeded", n, len(b))
		}
	}
}

// A leveldb store is kept for the next run only after a clean stop: one a
// process left without Release (killed) or released after a failure can
// hold state the changelog lacks, and starts empty, to be recovered from the
// changelog alone.
func TestLevelDBStoreIsKeptOnlyAfterACleanStop(t *testing.T) {
	c := Config{Backend: BackendLevelDB, Dir: t.TempDir()}
	// open starts a run: a builder, as a starting stage makes one, and its
	// store of partition 0.
	open := func() storage.Storage {
		t.Helper()
		b, err := c.Builder("primary", "aggregator", "t-table", nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := b("t-table", 0)
		if err == nil {
			err = s.Open()
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	write := func() {
		t.Helper()
		s := open()
		if err := s.Set("k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		t.Helper()
		s := open()
		defer s.Close()
		v, err := s.Get("k")
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	for _, tc := range []struct {
		name    string
		release func() error
		want    string
	}{
		{"clean stop", func() error { return c.Release("primary", "aggregator", true) }, "v"},
		{"failed run", func() error { return c.Release("primary", "aggregator", false) }, ""},
		{"killed", func() error {
			if !c.InUse("primary", "aggregator") {
				t.Error("a store left without Release is not reported in use")
			}
			return nil
		}, ""},
	} {
		write()
		if err := tc.release(); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != tc.want {
			t.Errorf("%s: the next run reads %q, want %q", tc.name, got, tc.want)
		}
		if err := c.Release("primary", "aggregator", false); err != nil {
			t.Fatal(err)
		}
	}
}
