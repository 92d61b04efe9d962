package contract

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fuzzDecoder checks a decoder on arbitrary bytes: it never panics, every
// failure is a *DecodeError with a reason, and every success survives a
// round trip through Encode unchanged.
func fuzzDecoder[T any](f *testing.F, decode func([]byte) (T, error)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("encoding a decoded value: %v", err)
		}
		again, err := decode(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if !reflect.DeepEqual(normalize(v), normalize(again)) {
			t.Fatalf("round trip changed the value:\n%+v\n%+v", v, again)
		}
	})
}

// normalize makes nil and empty partition lists equal.
func normalize(v any) any {
	if s, ok := v.(HealthSample); ok && len(s.Partitions) == 0 {
		s.Partitions = nil
		return s
	}
	return v
}

func FuzzDecodeAdEvent(f *testing.F)       { fuzzDecoder(f, DecodeAdEvent) }
func FuzzDecodeSpendEvent(f *testing.F)    { fuzzDecoder(f, DecodeSpendEvent) }
func FuzzDecodeBudget(f *testing.F)        { fuzzDecoder(f, DecodeBudget) }
func FuzzDecodeBudgetStatus(f *testing.F)  { fuzzDecoder(f, DecodeBudgetStatus) }
func FuzzDecodePacing(f *testing.F)        { fuzzDecoder(f, DecodePacing) }
func FuzzDecodeBidMultiplier(f *testing.F) { fuzzDecoder(f, DecodeBidMultiplier) }
func FuzzDecodeHealthSample(f *testing.F)  { fuzzDecoder(f, DecodeHealthSample) }

// The hot-path decoders scan JSON by hand; these hold them to the results of
// json.Unmarshal into the pointer wire structs they replaced (refDecode…).

func FuzzAdEventMatchesReflection(f *testing.F) {
	seedScanner(f)
	f.Fuzz(func(t *testing.T, b []byte) { sameDecoding(t, b, DecodeAdEvent, refDecodeAdEvent) })
}

func FuzzSpendEventMatchesReflection(f *testing.F) {
	seedScanner(f)
	f.Fuzz(func(t *testing.T, b []byte) { sameDecoding(t, b, DecodeSpendEvent, refDecodeSpendEvent) })
}

func sameDecoding[T any](t *testing.T, b []byte, fast, ref func([]byte) (T, error)) {
	got, gerr := fast(b)
	want, werr := ref(b)
	if ReasonOf(gerr) != ReasonOf(werr) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%q:\nscanner:    %v\nreflection: %v", b, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nscanner:    %+v\nreflection: %+v", b, got, want)
	}
}

func seedScanner(f *testing.F) {
	ad := `{"v":1,"id":"e1","type":"click","campaign":"c1","advertiser":"a1","price_micros":10,"ts":"2026-11-30T10:00:00Z"}`
	spend := `{"v":1,"id":"c1/1796032800000","campaign":"c1","advertiser":"a1","spend_micros":5,"events":1,"window_start":"2026-11-30T10:00:00Z","window_end":"2026-11-30T10:00:10Z","emitted_at":"2026-11-30T10:00:16Z"}`
	for _, s := range []string{
		ad, spend, "", " ", "{}", "[]", "null", `"x"`, "{", `{"v":1}`, `{"v":1.0}`, `{"v":1e0}`, `{"v":-0}`,
		`{"V":1,"ID":"e1","Type":"click","CAMPAIGN":"c1","advertiser":"a1","price_micros":10,"ts":"2026-11-30T10:00:00Z"}`,
		"{\"\\u0076\":1}", "{\"\u212a\":1}", `{"v":"1"}`, `{"v":null,"v":1}`, `{"v":1,"v":null}`, `{"v":"x","v":1}`,
		`{"v":1,"id":"e\u00e9"}`, `{"v":1,"id":"e\ud800"}`, "{\"id\":\"a\xffb\"}", `{"x":[1,{"y":[true,false,null]}],"v":1}`,
		`{"v":1} x`, `{"v":1,}`, `{"v":01}`, `{"v":99999999999999999999}`, `{"price_micros":-1}`, `{"v":[1]}`,
		`{"ts":"2026-11-30T10:00:00+02:00"}`, " \t{\"v\":1}\n", `{"v":1,"a":"\x01"}`, `{"a":"\q"}`, `{"a":tru}`,
	} {
		f.Add([]byte(s))
	}
}

// TestScannerNestingLimit: encoding/json rejects values nested deeper than
// 10,000 levels as invalid JSON; so does the scanner.
func TestScannerNestingLimit(t *testing.T) {
	for _, levels := range []int{9_999, 10_000, 10_001} {
		b := []byte(`{"x":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `,"v":1}`)
		sameDecoding(t, b, DecodeAdEvent, refDecodeAdEvent)
	}
}
