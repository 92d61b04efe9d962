package pipeline

import (
	"errors"
	"reflect"
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
