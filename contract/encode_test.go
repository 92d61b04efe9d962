package contract

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// The hand-written encoders write exactly what json.Marshal writes, for
// every field (a field added to a record type and not to its encoder fails
// here) and for awkward values.
func TestEncodeMatchesJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"c1", "", "a<b>&c", "quote\"back\\slash", "tab\t", "\u2028", "é", "\xff", "camp-000123/1796032800000/late/e7"}
	floats := []float64{0, 1, 0.5, 1e-7, 1e21, 123456.789, -2.5e-9, math.SmallestNonzeroFloat64, 1.0 / 3}
	times := []time.Time{time.Time{}, time.UnixMilli(1796032800123).UTC(), time.Unix(0, 1).UTC(),
		time.Date(2026, 11, 30, 10, 0, 0, 120, time.FixedZone("x", 3600)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, proto := range []any{SpendEvent{}, BudgetStatus{}, Pacing{}, BidMultiplier{}} {
		for range 500 {
			v := reflect.New(reflect.TypeOf(proto)).Elem()
			for i := range v.NumField() {
				f := v.Field(i)
				switch f.Kind() {
				case reflect.String:
					f.SetString(strs[rng.IntN(len(strs))])
				case reflect.Int, reflect.Int64:
					f.SetInt(rng.Int64N(1<<40) - 1<<39)
				case reflect.Float64:
					f.SetFloat(floats[rng.IntN(len(floats))])
				case reflect.Struct:
					f.Set(reflect.ValueOf(times[rng.IntN(len(times))]))
				default:
					t.Fatalf("%T.%s: a field kind the test does not fill", proto, v.Type().Field(i).Name)
				}
			}
			got, gerr := Encode(v.Interface())
			want, werr := json.Marshal(v.Interface())
			if (gerr == nil) != (werr == nil) || gerr == nil && string(got) != string(want) {
				t.Fatalf("%T:\nEncode:       %s (%v)\njson.Marshal: %s (%v)", proto, got, gerr, want, werr)
			}
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := Encode(Pacing{Rate: f}); err == nil {
			t.Errorf("rate %v encoded; json.Marshal rejects it", f)
		}
	}
}
