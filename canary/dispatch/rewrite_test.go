package dispatch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
)

func eventRecord(t *testing.T, campaign, id string) *kgo.Record {
	t.Helper()
	b, err := contract.Encode(contract.AdEvent{V: 1, ID: id, Type: contract.EventImpression, Campaign: campaign,
		Advertiser: "adv", PriceMicros: 1500, TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: "ad-events", Key: []byte(campaign), Value: b, Timestamp: time.Unix(100, 0)}
}

// src is the source of copy k of the live record the tests copy.
func src(k int) contract.DarkSource {
	return contract.DarkSource{Side: contract.Primary, Partition: 3, Offset: 41, K: k}
}

// sourceOf is the source a copy's header names.
func sourceOf(t *testing.T, r *kgo.Record) contract.DarkSource {
	t.Helper()
	for _, h := range r.Headers {
		if h.Key == contract.HeaderDarkSource {
			s, err := contract.ParseDarkSource(h.Value)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("copy without %s: %v", contract.HeaderDarkSource, r.Headers)
	return contract.DarkSource{}
}

// Copy 0 is the live bytes (and the source header); a clone carries the derived campaign in key and
// value and a distinct event id, and decodes as a valid event.
func TestCloneRewritesCampaignAndEventID(t *testing.T) {
	r := eventRecord(t, "camp-7", "ev-1")
	c0, err := copyEvent(r, 0, "dark.x.ad-events", src(0))
	if err != nil || string(c0.Value) != string(r.Value) || string(c0.Key) != "camp-7" || c0.Topic != "dark.x.ad-events" {
		t.Fatalf("copy 0: %v %+v", err, c0)
	}
	if got := sourceOf(t, c0); got != src(0) {
		t.Fatalf("copy 0 says it comes from %+v", got)
	}
	ids := map[string]bool{"ev-1": true}
	for k := 1; k <= 3; k++ {
		c, err := copyEvent(r, k, "dark.x.ad-events", src(k))
		if err != nil {
			t.Fatal(err)
		}
		e, err := contract.DecodeAdEvent(c.Value)
		if err != nil {
			t.Fatalf("clone %d does not decode: %v", k, err)
		}
		if want := contract.DarkCloneID("camp-7", k); e.Campaign != want || string(c.Key) != want {
			t.Fatalf("clone %d: campaign %q key %q, want %q", k, e.Campaign, c.Key, want)
		}
		if ids[e.ID] {
			t.Fatalf("clone %d reuses event id %q", k, e.ID)
		}
		ids[e.ID] = true
		if got := sourceOf(t, c); got != src(k) {
			t.Fatalf("clone %d says it comes from %+v", k, got)
		}
		if base, kk := contract.DarkCampaignOf(e.Campaign); base != "camp-7" || kk != k {
			t.Fatalf("DarkCampaignOf(%q) = %q, %d", e.Campaign, base, kk)
		}
		if e.PriceMicros != 1500 || !e.TS.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Fatalf("clone %d changed more than the ids: %+v", k, e)
		}
	}
}

func TestCloneBudget(t *testing.T) {
	row, _ := contract.Encode(contract.Budget{V: 1, Campaign: "camp-7", Advertiser: "adv", DailyMicros: 9000, Timezone: "UTC"})
	c, err := copyBudget([]byte("camp-7"), row, 2, "dark.x.budgets", contract.DarkRowGap)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Headers) != 1 || c.Headers[0].Key != contract.HeaderDarkRow || string(c.Headers[0].Value) != "gap" {
		t.Fatalf("a row's headers %+v, want %s: gap (why it was sent)", c.Headers, contract.HeaderDarkRow)
	}
	b, err := contract.DecodeBudget(c.Value)
	if err != nil || b.Campaign != "camp-7~dark2" || string(c.Key) != b.Campaign || b.DailyMicros != 9000 {
		t.Fatalf("clone budget: %v %+v key %q", err, b, c.Key)
	}
	tomb, err := copyBudget([]byte("camp-7"), nil, 1, "dark.x.budgets", contract.DarkRowUpdate)
	if err != nil || tomb.Value != nil || string(tomb.Key) != "camp-7~dark1" || string(tomb.Headers[0].Value) != "update" {
		t.Fatalf("clone tombstone: %v %+v", err, tomb)
	}
}

// A clone whose id would exceed the contract's 128 bytes is refused, not
// sent to be dead-lettered; an undecodable record has no clone.
func TestCloneRefusals(t *testing.T) {
	long := strings.Repeat("c", 126)
	if _, err := copyEvent(eventRecord(t, long, "ev"), 1, "t", src(1)); !errors.Is(err, ErrCloneID) {
		t.Fatalf("long campaign: %v", err)
	}
	if _, err := copyEvent(&kgo.Record{Key: []byte("c"), Value: []byte("{")}, 1, "t", src(1)); err == nil {
		t.Fatal("a clone of garbage")
	}
	if c, err := copyEvent(&kgo.Record{Key: []byte("c"), Value: []byte("{")}, 0, "t", src(0)); err != nil || string(c.Value) != "{" {
		t.Fatalf("copy 0 of garbage must go as is (the dark pipeline dead-letters it like live): %v", err)
	}
}

// A constant target sends what is queued first, then repeats what it sent
// in order, each generation under clone ids of its own with fresh event
// ids; the queue is bounded.
func TestConstantFeedRepeats(t *testing.T) {
	f := newConstantFeed(2)
	a, err := copyEvent(eventRecord(t, "camp-a", "e1"), 0, "dark.x.ad-events", src(0)) // queued as copies are
	if err != nil {
		t.Fatal(err)
	}
	b := eventRecord(t, "camp-b", "e2")
	if !f.push(a) || !f.push(b) || f.push(a) {
		t.Fatal("a feed of 2 takes exactly 2")
	}
	for _, want := range []*kgo.Record{a, b} {
		if r, gen, _ := f.next(); r != want || gen != 0 {
			t.Fatalf("queued copy: gen %d", gen)
		}
	}
	seen := map[string]bool{}
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	for i, want := range []struct {
		campaign string
	}{{"camp-a~dark17"}, {"camp-b~dark17"}, {"camp-a~dark34"}} {
		r, gen, seq := f.next()
		rep, err := repeatEvent(r, gen, seq, now)
		if err != nil {
			t.Fatal(err)
		}
		e, err := contract.DecodeAdEvent(rep.Value)
		if err != nil || e.Campaign != want.campaign || string(rep.Key) != e.Campaign || !e.TS.Equal(now) {
			t.Fatalf("repeat %d: %v %+v", i, err, e)
		}
		if seen[e.ID] {
			t.Fatalf("repeat %d reuses id %q", i, e.ID)
		}
		for _, h := range rep.Headers {
			if h.Key == contract.HeaderDarkSource {
				t.Fatalf("repeat %d is a new event but names a live source, %s", i, h.Value)
			}
		}
		seen[e.ID] = true
	}
}
