package selector

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hotpair/hotpair/contract"
)

func TestParseTag(t *testing.T) {
	valid := []struct {
		in     string
		sides  [3]contract.Side
		epochs [3]int64 // -1: default
	}{
		{"1.p12.s3.p", [3]contract.Side{contract.Primary, contract.Standby, contract.Primary}, [3]int64{12, 3, -1}},
		{"1.p.p.p", [3]contract.Side{contract.Primary, contract.Primary, contract.Primary}, [3]int64{-1, -1, -1}},
		{"1.s0.s0.s0", [3]contract.Side{contract.Standby, contract.Standby, contract.Standby}, [3]int64{0, 0, 0}},
		{"1.p9223372036854775807.s.p1", [3]contract.Side{contract.Primary, contract.Standby, contract.Primary}, [3]int64{1<<63 - 1, -1, 1}},
		{"1.p1111111111111111111.s1111111111111111111.p1111111111111111111", [3]contract.Side{contract.Primary, contract.Standby, contract.Primary},
			[3]int64{1111111111111111111, 1111111111111111111, 1111111111111111111}}, // the longest tag
	}
	for _, c := range valid {
		t.Run(c.in, func(t *testing.T) {
			tag, err := ParseTag(c.in)
			if err != nil {
				t.Fatalf("ParseTag(%q): %v", c.in, err)
			}
			for i, svc := range contract.Services() {
				if got := tag.Side(svc); got != c.sides[i] {
					t.Errorf("%s side = %s, want %s", svc, got, c.sides[i])
				}
				e, ok := tag.Epoch(svc)
				if want := c.epochs[i]; ok != (want >= 0) || (ok && e != want) {
					t.Errorf("%s epoch = %d,%v, want %d", svc, e, ok, want)
				}
			}
			if got := tag.String(); got != c.in {
				t.Errorf("round trip: %q, want %q", got, c.in)
			}
		})
	}
	invalid := map[string]string{
		"empty":             "",
		"other version":     "2.p1.p1.p1",
		"no groups":         "1",
		"two groups":        "1.p1.s2",
		"four groups":       "1.p1.s2.p3.p4",
		"unknown side":      "1.x1.s2.p3",
		"upper case side":   "1.P1.s2.p3",
		"missing dot":       "1p1.s2.p3",
		"negative epoch":    "1.p-1.s2.p3",
		"leading zero":      "1.p01.s2.p3",
		"epoch overflow":    "1.p9223372036854775808.s.p",
		"trailing garbage":  "1.p1.s2.p3x",
		"trailing dot":      "1.p1.s2.p3.",
		"space":             "1.p1 .s2.p3",
		"too long":          "1.p1.s1.p1" + strings.Repeat(" ", 60),
		"separator is char": "1,p1,s2,p3",
	}
	for name, in := range invalid {
		t.Run(name, func(t *testing.T) {
			if tag, err := ParseTag(in); !errors.Is(err, ErrBadTag) {
				t.Fatalf("ParseTag(%q) = %v, %v; want ErrBadTag", in, tag, err)
			}
		})
	}
}

func TestTagInvalidEncodesEmpty(t *testing.T) {
	if s := (Tag{}).String(); s != "" {
		t.Fatalf("zero tag encodes as %q", s)
	}
	half := Tag{}.WithSide(contract.ServiceBudget, contract.Primary, 1)
	if half.Valid() || half.String() != "" {
		t.Fatalf("a tag without every service must be invalid and encode empty, got %q", half.String())
	}
}

func TestTagHotPathsDoNotAllocate(t *testing.T) {
	tag := Tag{}.WithSide(contract.ServiceBudget, contract.Primary, 12).WithSide(contract.ServicePacer, contract.Standby, 3).WithSide(contract.ServiceBidder, contract.Primary, -1)
	enc := tag.String()
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = tag.AppendTo(buf[:0]) }); n != 0 {
		t.Errorf("AppendTo allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseTag(enc) }); n != 0 {
		t.Errorf("ParseTag allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseTag("garbage") }); n != 0 {
		t.Errorf("ParseTag of a bad tag allocates %v times", n)
	}
}

func TestTagHeaderAndContext(t *testing.T) {
	tag := Tag{}.WithSide(contract.ServiceBudget, contract.Standby, 7).WithSide(contract.ServicePacer, contract.Primary, 2).WithSide(contract.ServiceBidder, contract.Primary, 2)
	h := http.Header{}
	if _, err := TagFromHeader(h); !errors.Is(err, ErrNoTag) {
		t.Fatalf("no header: err = %v, want ErrNoTag", err)
	}
	SetHeader(h, tag)
	if h.Get("hotpair-selection") != "1.s7.p2.p2" {
		t.Fatalf("header = %q", h.Get("hotpair-selection"))
	}
	got, err := TagFromHeader(h)
	if err != nil || got != tag {
		t.Fatalf("TagFromHeader = %v, %v; want %v", got, err, tag)
	}
	h.Set(TagHeader, "1.s7")
	if _, err := TagFromHeader(h); !errors.Is(err, ErrBadTag) {
		t.Fatalf("bad header: err = %v, want ErrBadTag", err)
	}

	ctx := context.Background()
	if _, ok := TagFromContext(ctx); ok {
		t.Fatal("empty context has a tag")
	}
	got, ok := TagFromContext(ContextWithTag(ctx, tag))
	if !ok || got != tag {
		t.Fatalf("TagFromContext = %v, %v", got, ok)
	}
}

func FuzzParseTag(f *testing.F) {
	for _, s := range []string{"1.p12.s3.p", "1.p.p.p", "1.s0.s0.s0", "2.p1.p1.p1", "1.p01.s.p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tag, err := ParseTag(s)
		if err != nil {
			return
		}
		if !tag.Valid() {
			t.Fatalf("ParseTag(%q) returned an invalid tag without error", s)
		}
		if enc := tag.String(); enc != s {
			t.Fatalf("ParseTag(%q).String() = %q: a tag has one spelling", s, enc)
		}
	})
}
