package replay

import (
	"testing"
	"time"
)

func TestSetJSONTime(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 4, 5, 6, time.UTC)
	tests := []struct{ in, want string }{
		{`{"v":1,"ts":"2020-01-01T00:00:00Z","campaign":"c"}`, `{"v":1,"ts":"2026-11-30T03:04:05.000000006Z","campaign":"c"}`},
		{`{ "ts" : "x", "n": {"ts": "inner"} }`, `{ "ts" : "2026-11-30T03:04:05.000000006Z", "n": {"ts": "inner"} }`},
		{`{"n":{"ts":"inner"},"ts":"2020-01-01T00:00:00Z"}`, `{"n":{"ts":"inner"},"ts":"2026-11-30T03:04:05.000000006Z"}`},
	}
	for _, tt := range tests {
		got, ok := setJSONTime([]byte(tt.in), "ts", at)
		if !ok || string(got) != tt.want {
			t.Errorf("setJSONTime(%s) = %s, %v; want %s", tt.in, got, ok, tt.want)
		}
	}
	for _, in := range []string{`{"v":1}`, `[1]`, `not json`, ``, `{"n":{"ts":"inner"}}`} {
		if got, ok := setJSONTime([]byte(in), "ts", at); ok || string(got) != in {
			t.Errorf("setJSONTime(%s) = %s, %v; want it unchanged", in, got, ok)
		}
	}
}
