package replay

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// maxDiffLines is how many output differences the text summary lists (the
// JSON report has them all).
const maxDiffLines = 30

// WriteText prints the verification for a human.
func (r *VerifyReport) WriteText(w io.Writer) {
	verdict := "PASS"
	switch {
	case r.Error != "":
		verdict = "ERROR"
	case !r.Passed:
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "verify %s: candidate %s against baseline %s on %s (%v)\n", verdict, r.Candidate, r.Baseline, r.Recording, r.Elapsed.Round(time.Second))
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	if r.Play.Mode != "" {
		fmt.Fprintf(w, "  played %d records (%s) into both at %.1f/s; %d budget rows loaded\n",
			r.Play.Released, r.Play.Mode, r.Play.AchievedRate, r.Budgets)
	}
	if r.BaselineKeys != nil {
		for _, o := range slices.Sorted(maps.Keys(r.BaselineKeys)) {
			fmt.Fprintf(w, "  %-16s %6d campaigns (baseline), %6d (candidate)\n", o, r.BaselineKeys[o], r.CandidateKeys[o])
		}
	}
	if len(r.Diffs) == 0 && r.BaselineKeys != nil {
		fmt.Fprintln(w, "  outputs: equal within tolerances")
	}
	if len(r.Diffs) > 0 {
		fmt.Fprintf(w, "  outputs DIFFER for %d campaigns: %s\n", len(r.DifferingKeys), keyList(r.DifferingKeys, 20))
		for i, d := range r.Diffs {
			if i == maxDiffLines {
				fmt.Fprintf(w, "    ... %d more differences in the JSON report\n", len(r.Diffs)-i)
				break
			}
			fmt.Fprintf(w, "    %s %s %s: baseline %s, candidate %s", d.Output, d.Key, d.Field, d.Baseline, d.Candidate)
			if d.Detail != "" {
				fmt.Fprintf(w, " (%s)", d.Detail)
			}
			fmt.Fprintln(w)
		}
	}
	if r.BaselinePerf.Events > 0 {
		fmt.Fprintln(w, "  performance            baseline    candidate")
		b, c := r.BaselinePerf, r.CandidatePerf
		fmt.Fprintf(w, "    throughput (ev/s) %12.1f %12.1f\n", b.Throughput, c.Throughput)
		fmt.Fprintf(w, "    drain time        %12v %12v\n", b.DrainTime.Round(time.Millisecond), c.DrainTime.Round(time.Millisecond))
		for _, st := range slices.Sorted(maps.Keys(c.LagP99)) {
			fmt.Fprintf(w, "    lag p99 %-10s %11.3fs %11.3fs\n", st, b.LagP99[st], c.LagP99[st])
		}
		fmt.Fprintf(w, "    spend events      %12d %12d\n", b.SpendEvents, c.SpendEvents)
		fmt.Fprintf(w, "    dead letters      %12d %12d\n", b.DeadLetters, c.DeadLetters)
		fmt.Fprintf(w, "    CPU seconds       %12.2f %12.2f\n", b.CPUSeconds, c.CPUSeconds)
		fmt.Fprintf(w, "    peak RSS (MiB)    %12.1f %12.1f\n", float64(b.PeakRSS)/(1<<20), float64(c.PeakRSS)/(1<<20))
	}
	for _, p := range r.PerfRegressions {
		fmt.Fprintf(w, "  REGRESSION %s: %s\n", p.Metric, p.Detail)
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "  logs and state kept in %s\n", r.WorkDir)
	}
}
