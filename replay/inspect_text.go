package replay

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// WriteText prints the inspection for a human.
func (in *Inspection) WriteText(w io.Writer) {
	m := in.Meta
	fmt.Fprintf(w, "recording %s (format %d", in.File, m.Format)
	if m.Build != "" {
		fmt.Fprintf(w, ", written by hotpair %s", m.Build)
	}
	fmt.Fprintln(w, ")")
	if m.Topic != "" {
		fmt.Fprintf(w, "  source: topic %s, %d partitions, recorded at %s", m.Topic, m.Partitions, m.RecordedAt.Format(time.RFC3339))
		if !m.Since.IsZero() {
			fmt.Fprintf(w, ", window %s .. %s", m.Since.Format(time.RFC3339), m.Until.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
	if len(m.Filters) > 0 {
		fmt.Fprintf(w, "  filters: %s\n", strings.Join(m.Filters, " "))
	}
	if m.RetimedQPS > 0 {
		fmt.Fprintf(w, "  retimed to %g/s from %s\n", m.RetimedQPS, m.Origin)
	}
	state := "complete (stopped: " + in.Stopped + ")"
	if !in.Complete {
		state = "INCOMPLETE: " + in.Problem
	}
	fmt.Fprintf(w, "  file: %s, %d blocks, %s\n", FormatBytes(in.FileBytes), in.Blocks, state)
	if in.Records == 0 {
		fmt.Fprintln(w, "  records: 0")
		return
	}
	fmt.Fprintf(w, "  records: %d (%s raw, %.1fx compressed)\n", in.Records, FormatBytes(in.RawBytes), ratio(in.RawBytes, in.FileBytes))
	fmt.Fprintf(w, "  time: %s .. %s (%v), mean %.2f/s\n", in.First.Format(time.RFC3339Nano), in.Last.Format(time.RFC3339Nano), in.Span, in.MeanRate)
	writeSpread(w, "  per second:", in.PerSecond)
	fmt.Fprintln(w, "  rate over time:")
	peak := 0.0
	for _, b := range in.RateOverTime {
		peak = max(peak, b.Rate)
	}
	for _, b := range in.RateOverTime {
		bar := 0
		if peak > 0 {
			bar = int(40 * b.Rate / peak)
		}
		fmt.Fprintf(w, "    %s +%-6v %10.2f/s %s\n", b.Start.Format("15:04:05"), b.Width, b.Rate, strings.Repeat("#", bar))
	}
	fmt.Fprintf(w, "  keys: %d distinct, %d records without key; top:", in.Keys.Distinct, in.Keys.Null)
	for _, k := range in.Keys.Top {
		fmt.Fprintf(w, " %s=%d", k.Key, k.Records)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "  partitions:")
	for _, p := range slices.Sorted(maps.Keys(in.Partitions)) {
		fmt.Fprintf(w, " %d=%d", p, in.Partitions[p])
	}
	fmt.Fprintln(w)
	if len(in.Headers) > 0 {
		fmt.Fprint(w, "  headers:")
		for _, h := range slices.Sorted(maps.Keys(in.Headers)) {
			fmt.Fprintf(w, " %s=%d", h, in.Headers[h])
		}
		fmt.Fprintln(w)
	}
	s := in.Sizes
	fmt.Fprintf(w, "  sizes: keys %s, values %s (min %d, mean %.0f, p99 <= %d, max %d bytes), headers %s\n",
		FormatBytes(s.KeyBytes), FormatBytes(s.ValueBytes), s.ValueMin, s.ValueMean, s.ValueP99, s.ValueMax, FormatBytes(s.HeaderBytes))
	o := in.OutOfOrder
	if o.Records == 0 {
		fmt.Fprintln(w, "  order: timestamps never go back")
		return
	}
	fmt.Fprintf(w, "  order: %d records are older than one before them (first at #%d, up to %v back); %d within a partition, %d offset regressions\n",
		o.Records, o.FirstIndex, o.MaxBehind, o.WithinPartition, o.OffsetRegressions)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// FormatBytes writes a byte count for people: "12.3 MiB".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
