package main

import (
	"strings"
	"testing"
)

// Bad arguments to hotpair bench print the usage and exit 2, before any
// cluster starts.
func TestBenchBadUsage(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"bench alone":         {[]string{"bench"}, "usage: hotpair bench SUBCOMMAND"},
		"bench unknown":       {[]string{"bench", "monitor"}, `unknown subcommand "monitor"`},
		"no campaigns":        {[]string{"bench", "pipeline", "--campaigns", "0"}, "--campaigns must be at least 1"},
		"fewer events":        {[]string{"bench", "pipeline", "--campaigns", "10", "--events", "5"}, "--events must be at least --campaigns"},
		"too many partitions": {[]string{"bench", "pipeline", "--partitions", "5000"}, "--partitions must be between 1 and 1000"},
		"steady load above 1": {[]string{"bench", "pipeline", "--steady-load", "1.5"}, "--steady-load must be in (0,1]"},
		"no probes":           {[]string{"bench", "pipeline", "--probes", "0"}, "--probes must be at least 1"},
		"positional argument": {[]string{"bench", "pipeline", "now"}, "unexpected argument"},
		"unknown flag":        {[]string{"bench", "pipeline", "--campains", "10"}, "flag provided but not defined"},
		"sandbox instances":   {[]string{"sandbox", "--instances", "0"}, "--instances must be between 1 and 16"},
		"sandbox partitions":  {[]string{"sandbox", "--partitions", "100"}, "--partitions between 1 and 64"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := opRun(tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "usage: hotpair") {
				t.Fatalf("stderr lacks %q and the usage:\n%s", tc.want, stderr)
			}
		})
	}
}
