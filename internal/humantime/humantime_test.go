package humantime

import (
	"testing"
	"time"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{44999998708 * time.Nanosecond, "45s"},
		{90*time.Second - 300*time.Microsecond, "1m30s"},
		{2017 * time.Millisecond, "2.02s"},
		{1200*time.Millisecond + 3*time.Microsecond, "1.2s"},
		{999999 * time.Microsecond, "1s"},
		{437*time.Millisecond + 12*time.Microsecond, "437ms"},
		{12*time.Second + 345*time.Millisecond, "12.3s"},
		{10*time.Minute + 400*time.Millisecond, "10m0s"},
		{-44999998708 * time.Nanosecond, "-45s"},
		{0, "0s"},
	} {
		if got := String(tc.d); got != tc.want {
			t.Errorf("String(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
