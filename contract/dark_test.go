package contract

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDarkSampleIsNestedAndStable(t *testing.T) {
	const n = 20000
	count := map[float64]int{}
	for i := range n {
		c := fmt.Sprintf("campaign-%d", i)
		for _, f := range []float64{0.1, 0.25, 0.5} {
			if DarkCopies(c, f) > 0 {
				count[f]++
			}
		}
		// A larger fraction's sample contains a smaller one's, copy by copy.
		prev := 0
		for _, f := range []float64{0.1, 0.25, 0.5, 1, 1.5, 2.5} {
			k := DarkCopies(c, f)
			if k < prev {
				t.Fatalf("%s: %d copies at %v, fewer than %d at a smaller fraction", c, k, f, prev)
			}
			prev = k
		}
		if DarkCopies(c, 1) != 1 || DarkCopies(c, 2) != 2 {
			t.Fatalf("%s: whole multipliers must send exactly that many copies", c)
		}
		if DarkCopies(c, 0) != 0 {
			t.Fatalf("%s: fraction 0 sends", c)
		}
	}
	for f, got := range count {
		want := f * n
		if d := float64(got) - want; d > 0.03*n || d < -0.03*n {
			t.Errorf("fraction %v sampled %d of %d campaigns, want about %v", f, got, n, want)
		}
	}
	// Stable: the hash is fixed (a golden value), not per process.
	if got := DarkHash("campaign-1"); fmt.Sprintf("%.6f", got) != "0.041263" {
		t.Errorf("DarkHash(campaign-1) = %.6f: the sample changed between releases", got)
	}
}

func TestDarkCloneIDRoundTrips(t *testing.T) {
	for _, c := range []string{"c1", "a~darkx", "x~dark0"} {
		for k := range 4 {
			id := DarkCloneID(c, k)
			gc, gk := DarkCampaignOf(id)
			if gc != c || gk != k {
				t.Errorf("DarkCampaignOf(%q) = %q, %d; want %q, %d", id, gc, gk, c, k)
			}
		}
	}
}

func TestDarkPrefix(t *testing.T) {
	if got := DarkPrefix("cand"); got != "dark.cand." {
		t.Fatalf("DarkPrefix = %q", got)
	}
	for topic, want := range map[string]bool{
		"dark.cand.ad-events": true, "dark.cand.": true, "ad-events": false,
		"dark.ad-events": false, "dark..x": false, "xdark.cand.ad-events": false, "dark.Cand.x": false,
	} {
		if IsDarkTopic(topic) != want {
			t.Errorf("IsDarkTopic(%q) = %v", topic, !want)
		}
	}
	if !ValidDarkName("cand-1") || ValidDarkName("Cand") || ValidDarkName("a.b") || ValidDarkName("") {
		t.Error("ValidDarkName accepts or refuses the wrong names")
	}
}

func TestDecodeDarkTarget(t *testing.T) {
	good := `{"v":1,"name":"cand","source":"primary","strategy":"relative","multiplier":0.25,
		"brokers":["127.0.0.1:9092"],"prefix":"dark.cand.","enabled":true,"updated_at":"2026-12-01T00:00:00Z"}`
	d, err := DecodeDarkTarget([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if !d.ActiveAt(now) || d.Source != Primary || d.Multiplier != 0.25 {
		t.Fatalf("decoded %+v", d)
	}
	until := now.Add(-time.Second)
	d.Until = &until
	if d.ActiveAt(now) {
		t.Error("a target past its until is active")
	}
	for field, doc := range map[string]string{
		"prefix":     strings.Replace(good, `"dark.cand."`, `""`, 1),
		"multiplier": strings.Replace(good, `0.25`, `0`, 1),
		"strategy":   strings.Replace(good, `"relative"`, `"random"`, 1),
		"name":       strings.Replace(good, `"cand"`, `"Cand"`, 1),
		"source":     strings.Replace(good, `"primary"`, `"dark"`, 1),
		"brokers":    strings.Replace(good, `["127.0.0.1:9092"]`, `[]`, 1),
	} {
		_, err := DecodeDarkTarget([]byte(doc))
		if !errors.Is(err, ErrInvalidDocument) || (field != "source" && !strings.Contains(err.Error(), field)) {
			t.Errorf("bad %s: err = %v", field, err)
		}
	}
}

func TestDarkSourceRoundTrip(t *testing.T) {
	for _, s := range []DarkSource{{Primary, 0, 0, 0}, {Standby, 63, 1 << 40, MaxDarkMultiplier}} {
		v := AppendDarkSource(nil, s)
		got, err := ParseDarkSource(v)
		if err != nil || got != s {
			t.Errorf("%q: %+v, %v; want %+v", v, got, err, s)
		}
	}
	if v := string(AppendDarkSource(nil, DarkSource{Primary, 3, 12345, 2})); v != "primary/3/12345/2" {
		t.Errorf("header value %q", v)
	}
	for _, bad := range []string{"", "primary/3/12", "left/3/12/0", "primary/-1/12/0", "primary/3/x/0", "primary/3/12/17", "primary/3/12/0/1"} {
		if _, err := ParseDarkSource([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A row's reason parses back; anything else is an error (the comparator
// then treats the row as an older dispatcher's).
func TestDarkRowReason(t *testing.T) {
	for _, r := range []DarkRowReason{DarkRowSample, DarkRowUpdate, DarkRowGap} {
		if got, err := ParseDarkRowReason([]byte(r)); err != nil || got != r {
			t.Fatalf("ParseDarkRowReason(%q) = %q, %v", r, got, err)
		}
	}
	for _, bad := range []string{"", "Gap", "resume", "gap "} {
		if _, err := ParseDarkRowReason([]byte(bad)); err == nil {
			t.Fatalf("ParseDarkRowReason(%q) accepted", bad)
		}
	}
}
