package selector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

func TestNewValidates(t *testing.T) {
	for name, c := range map[string]struct {
		servers []string
		opts    []Option
	}{
		"no servers":            {nil, nil},
		"unset default side":    {[]string{"x:1"}, []Option{WithDefaultSide(0)}},
		"no services":           {[]string{"x:1"}, []Option{WithServices()}},
		"unknown service":       {[]string{"x:1"}, []Option{WithServices(contract.Service(9))}},
		"duplicate service":     {[]string{"x:1"}, []Option{WithServices(contract.ServiceBudget, contract.ServiceBudget)}},
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
	for _, svc := range contract.Services() {
		if got, err := contract.ParseService(svc.String()); err != nil || got != svc {
			t.Errorf("ParseService(%s) = %v, %v", svc, got, err)
		}
	}
	if _, err := contract.ParseService("aggregator"); !errors.Is(err, contract.ErrUnknownService) {
		t.Errorf("ParseService(aggregator): %v; the read side does not select the aggregator", err)
	}
	for _, s := range []contract.Side{contract.Primary, contract.Standby} {
		if got, err := contract.ParseSide(s.String()); err != nil || got != s || got.Other() == s {
			t.Errorf("ParseSide(%s) = %v, %v", s, got, err)
		}
	}
	if _, err := contract.ParseSide("both"); !errors.Is(err, contract.ErrUnknownSide) {
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
