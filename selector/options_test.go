package selector

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	for name, c := range map[string]struct {
		servers []string
		opts    []Option
	}{
		"no servers":            {nil, nil},
		"unset default side":    {[]string{"x:1"}, []Option{WithDefaultSide(0)}},
		"no services":           {[]string{"x:1"}, []Option{WithServices()}},
		"unknown service":       {[]string{"x:1"}, []Option{WithServices(Service(9))}},
		"duplicate service":     {[]string{"x:1"}, []Option{WithServices(Budget, Budget)}},
		"short session timeout": {[]string{"x:1"}, []Option{WithSessionTimeout(10 * time.Millisecond)}},
		"inverted backoff":      {[]string{"x:1"}, []Option{WithRetryBackoff(time.Second, time.Millisecond)}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(c.servers, c.opts...); !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("err = %v, want ErrInvalidOption", err)
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	for _, svc := range Services() {
		if got, err := ParseService(svc.String()); err != nil || got != svc {
			t.Errorf("ParseService(%s) = %v, %v", svc, got, err)
		}
	}
	if _, err := ParseService("aggregator"); !errors.Is(err, ErrUnknownService) {
		t.Errorf("ParseService(aggregator): %v; the read side does not select the aggregator", err)
	}
	for _, s := range []Side{Primary, Standby} {
		if got, err := ParseSide(s.String()); err != nil || got != s || got.Other() == s {
			t.Errorf("ParseSide(%s) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseSide("both"); !errors.Is(err, ErrUnknownSide) {
		t.Errorf("ParseSide(both): %v", err)
	}
}

func TestRunTwice(t *testing.T) {
	sel, _ := offlineSelector(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sel.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sel.Run(ctx); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run: %v", err)
	}
}
