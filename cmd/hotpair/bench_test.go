package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hotpair/hotpair/pipeline/pipebench"
)

// Bad arguments to hotpair bench print the usage and exit 2, before any
// cluster starts.
func TestBenchBadUsage(t *testing.T) {
	checkBadUsage(t, map[string]usageCase{
		"bench alone":         {[]string{"bench"}, "usage: hotpair bench SUBCOMMAND"},
		"bench unknown":       {[]string{"bench", "monitor"}, `unknown subcommand "monitor"`},
		"no campaigns":        {[]string{"bench", "pipeline", "--campaigns", "0"}, "--campaigns must be at least 1"},
		"fewer events":        {[]string{"bench", "pipeline", "--campaigns", "10", "--events", "5"}, "--events must be at least --campaigns"},
		"too many partitions": {[]string{"bench", "pipeline", "--partitions", "5000"}, "--partitions must be between 1 and 1000"},
		"steady load above 1": {[]string{"bench", "pipeline", "--steady-load", "1.5"}, "--steady-load must be in (0,1]"},
		"event rate 0.5":      {[]string{"bench", "pipeline", "--event-rate", "0.5"}, "--event-rate must be between 1 and 1000000"},
		"no probes":           {[]string{"bench", "pipeline", "--probes", "0"}, "--probes must be at least 1"},
		"positional argument": {[]string{"bench", "pipeline", "now"}, "unexpected argument"},
		"unknown flag":        {[]string{"bench", "pipeline", "--campains", "10"}, "flag provided but not defined"},
		"sandbox instances":   {[]string{"sandbox", "--instances", "0"}, "--instances must be between 1 and 16"},
		"sandbox partitions":  {[]string{"sandbox", "--partitions", "100"}, "--partitions between 1 and 64"},
		"dark binary alone":   {[]string{"sandbox", "--dark-binary", "/bin/true"}, "--dark-binary and --dark-multiplier need --dark"},
		"dark multiplier 0":   {[]string{"sandbox", "--dark", "--dark-multiplier", "0"}, "--dark-multiplier must be in (0, 10]"},
		"pipeline dark name":  {[]string{"pipeline", "--side", "primary", "--brokers", "127.0.0.1:9", "--role", "dark"}, "dark_name: role: dark needs the name"},
	})
}

// The record floor's rows show only when it was measured, with the
// pipeline's share of it per second and per CPU-second.
func TestBenchTextShowsTheFloorWhenMeasured(t *testing.T) {
	r := pipebench.Result{Goka: pipebench.Rate{EventsPerSec: 400}, Pipeline: pipebench.Rate{EventsPerSec: 100, EventsPerCPUSec: 60}, Ratio: 0.25}
	var without strings.Builder
	writeBenchText(&without, r)
	if strings.Contains(without.String(), "record floor") {
		t.Errorf("no floor measured, but the text shows one:\n%s", without.String())
	}
	r.Floor = &pipebench.RecordFloor{Rate: pipebench.Rate{EventsPerSec: 200, EventsPerCPUSec: 80}, Passed: 7, Ratio: 0.5}
	var with strings.Builder
	writeBenchText(&with, r)
	for _, want := range []string{`record floor: its records only\s+200\s+80`, `record floor / bare goka\s+0\.50`,
		`pipeline / record floor\s+0\.50\s+0\.75`, `7 records passed between them`} {
		if !regexp.MustCompile(want).MatchString(with.String()) {
			t.Errorf("the text lacks %q:\n%s", want, with.String())
		}
	}
}
