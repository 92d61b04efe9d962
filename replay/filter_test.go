package replay

import (
	"errors"
	"fmt"
	"testing"
)

func TestFilter(t *testing.T) {
	rec := &Record{
		Key:     []byte("camp-17"),
		Value:   []byte(`{"v":1,"advertiser":"adv-7","price_micros":1500,"ok":true,"geo":{"country":"DE"},"note":null}`),
		Headers: []Header{{Key: "source", Value: []byte("ads-1")}},
	}
	tests := []struct {
		name                string
		keys, headers, wher []string
		want                bool
	}{
		{"no filter keeps all", nil, nil, nil, true},
		{"exact key", []string{"camp-17"}, nil, nil, true},
		{"other key", []string{"camp-1"}, nil, nil, false},
		{"key prefix", []string{"camp-1*"}, nil, nil, true},
		{"one of several keys", []string{"camp-2", "camp-17"}, nil, nil, true},
		{"header present", nil, []string{"source"}, nil, true},
		{"header value", nil, []string{"source=ads-1"}, nil, true},
		{"header other value", nil, []string{"source=ads-2"}, nil, false},
		{"header one of values", nil, []string{"source=ads-2", "source=ads-1"}, nil, true},
		{"header missing", nil, []string{"trace"}, nil, false},
		{"json string field", nil, nil, []string{"advertiser=adv-7"}, true},
		{"json string field other", nil, nil, []string{"advertiser=adv-70"}, false},
		{"json one of values", nil, nil, []string{"advertiser=adv-1", "advertiser=adv-7"}, true},
		{"json number as written", nil, nil, []string{"price_micros=1500"}, true},
		{"json bool", nil, nil, []string{"ok=true"}, true},
		{"json null", nil, nil, []string{"note=null"}, true},
		{"json nested", nil, nil, []string{"geo.country=DE"}, true},
		{"json nested missing", nil, nil, []string{"geo.city=Berlin"}, false},
		{"json object is not a scalar", nil, nil, []string{"geo=DE"}, false},
		{"all conditions must hold", []string{"camp-17"}, []string{"source"}, []string{"advertiser=adv-8"}, false},
		{"all conditions hold", []string{"camp-17"}, []string{"source"}, []string{"advertiser=adv-7", "ok=true"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFilter(tt.keys, tt.headers, tt.wher)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Match(rec); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterOnNonJSONValueDropsTheRecord(t *testing.T) {
	f, _ := ParseFilter(nil, nil, []string{"advertiser=adv-7"})
	for _, v := range [][]byte{nil, []byte("not json"), []byte(`[1,2]`)} {
		if f.Match(&Record{Value: v}) {
			t.Errorf("value %q matched a JSON field filter", v)
		}
	}
}

func TestParseFilterRejects(t *testing.T) {
	for _, c := range []struct{ keys, headers, where []string }{
		{keys: []string{""}},
		{headers: []string{"=v"}},
		{where: []string{"advertiser"}},
		{where: []string{"=adv"}},
		{where: []string{"geo.=DE"}},
	} {
		if _, err := ParseFilter(c.keys, c.headers, c.where); !errors.Is(err, ErrBadFilter) {
			t.Errorf("%+v: got %v, want ErrBadFilter", c, err)
		}
	}
}

func TestKeepPercentIsStableAndProportional(t *testing.T) {
	kept := 0
	for i := range 20000 {
		r := &Record{Key: fmt.Appendf(nil, "camp-%d", i)}
		k := KeepPercent(r, 25)
		if k != KeepPercent(&Record{Key: fmt.Appendf(nil, "camp-%d", i)}, 25) {
			t.Fatal("same key, different choice")
		}
		if k && !KeepPercent(r, 60) {
			t.Fatalf("key %s kept at 25%% but not at 60%%: selections must nest", r.Key)
		}
		if k {
			kept++
		}
	}
	if kept < 4700 || kept > 5300 {
		t.Fatalf("kept %d of 20000 keys at 25%%", kept)
	}
	// Pinned: the choice must not change between builds, or a recording
	// replayed by two versions of hotpair would select different keys.
	var got []int
	for i := range 12 {
		if KeepPercent(&Record{Key: fmt.Appendf(nil, "camp-%d", i)}, 50) {
			got = append(got, i)
		}
	}
	if fmt.Sprint(got) != "[0 2 3]" {
		t.Fatalf("50%% of camp-0..camp-11 keeps %v, pinned [0 2 3]", got)
	}
	if !KeepPercent(&Record{Key: []byte("camp-1")}, 100) {
		t.Fatal("100% must keep every key")
	}
}
