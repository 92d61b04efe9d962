// Package humantime rounds durations for output read by people: reasons,
// status lines, timelines. "45s" and "1m30s", never "44.999998708s".
package humantime

import "time"

// Round keeps about three significant figures: milliseconds below a
// second, 10 ms below 10 s, 100 ms below a minute, whole seconds above.
func Round(d time.Duration) time.Duration {
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case a < time.Second:
		return d.Round(time.Millisecond)
	case a < 10*time.Second:
		return d.Round(10 * time.Millisecond)
	case a < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// String is Round(d).String().
func String(d time.Duration) string { return Round(d).String() }
