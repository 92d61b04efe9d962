package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/hotpair/hotpair/canary/outdiff"
)

// WriteText prints the report for a human: the verdict, then per target
// why, the fields and the resources.
func (r Report) WriteText(w io.Writer) {
	targets := fmt.Sprintf("%d targets", len(r.Targets))
	if len(r.Targets) == 1 {
		targets = "1 target"
	}
	fmt.Fprintf(w, "dark canary: %s (%s, over the last %s, at %s)\n", strings.ToUpper(r.Verdict.String()), targets,
		r.Rules.Horizon, r.At.Format("2006-01-02 15:04:05Z"))
	if len(r.Targets) == 0 {
		fmt.Fprintln(w, "  no dark target is configured (hotpair dark set, or targets: in the comparator's config)")
	}
	for _, t := range r.Targets {
		fmt.Fprintf(w, "\ntarget %s (copy of %s): %s — %d campaigns compared; points", t.Name, t.Source, strings.ToUpper(t.Verdict.String()), t.Campaigns)
		for _, o := range outputs {
			fmt.Fprintf(w, " %s %d", o, t.Points[o])
		}
		fmt.Fprintf(w, "; sampled %d", t.Sampled)
		if t.Held > 0 || t.Withdrawn > 0 {
			fmt.Fprintf(w, "; differences held %d (counted after %s), withdrawn %d (a gap in the copy)", t.Held, r.Rules.Hold, t.Withdrawn)
		}
		if n := t.Missing[outdiff.BudgetStatus] + t.Missing[outdiff.Pacing] + t.Missing[outdiff.BidMultipliers]; n > 0 {
			fmt.Fprintf(w, "; missing on dark")
			for _, o := range outputs {
				fmt.Fprintf(w, " %s %d", o, t.Missing[o])
			}
		}
		fmt.Fprintln(w)
		for _, reason := range t.Reasons {
			fmt.Fprintf(w, "  ! %s\n", reason)
		}
		fmt.Fprintf(w, "  %-16s %-22s %-18s %-20s %-20s\n", "output", "field", "verdict", "dark≠live", "primary≠standby")
		for _, f := range t.Fields {
			var withdrawn string
			if f.Withdrawn > 0 {
				withdrawn = fmt.Sprintf(" (%d withdrawn)", f.Withdrawn)
			}
			fmt.Fprintf(w, "  %-16s %-22s %-18s %-20s %-20s%s\n", f.Output, f.Field, f.Verdict,
				fmt.Sprintf("%d/%d %.1f%%", f.RawDiffs, f.RawPoints, 100*f.RawRate), fmt.Sprintf("%d/%d %.1f%%", f.NoiseDiffs, f.NoisePoints, 100*f.NoiseRate), withdrawn)
		}
		fmt.Fprintf(w, "  resources: %s\n", t.Resources.Verdict)
		for _, reason := range t.Resources.Reasons {
			fmt.Fprintf(w, "    %s\n", reason)
		}
		if len(t.Resources.Rows) > 0 {
			fmt.Fprintf(w, "    %-11s %-26s %18s %18s %10s %s\n", "stage", "metric", "live", "dark", "p", "verdict")
		}
		for _, row := range t.Resources.Rows {
			fmt.Fprintf(w, "    %-11s %-26s %18s %18s %10.4f %s\n", row.Stage, row.Metric, fmtFigure(row.Metric, row.Live), fmtFigure(row.Metric, row.Dark), row.P, row.Verdict)
		}
	}
}
