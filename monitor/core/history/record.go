package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/core"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// RecordStats counts what was read from a file of the decision record.
type RecordStats struct {
	Lines int // non-blank lines
	// Bad and UnknownVersion count the lines skipped: not an entry, or an
	// entry of a version this reader does not know.
	Bad, UnknownVersion int
}

// ReadRecordJSONLines reads the decision record as JSON lines, one entry
// per line: the topic's values as `kcat -C -t hotpair-decisions -e` or
// `hotpair history --windows --json` print them. A line that is not an
// entry, or one of an unknown version, is skipped and counted, never an
// error. Entries are merged (each id once) in time order.
func ReadRecordJSONLines(r io.Reader) ([]decisions.Entry, RecordStats, error) {
	var st RecordStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), contract.MaxValueBytes+4096)
	var out []decisions.Entry
	for sc.Scan() {
		b := trimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		st.Lines++
		e, err := decisions.Decode(b)
		switch {
		case errors.Is(err, decisions.ErrUnknownVersion):
			st.UnknownVersion++
		case err != nil:
			st.Bad++
		default:
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, st, fmt.Errorf("history: reading: %w", err)
	}
	return decisions.Merge(out), st, nil
}

// WriteRecordJSONLines writes entries in the format ReadRecordJSONLines reads.
func WriteRecordJSONLines(w io.Writer, entries []decisions.Entry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		b, err := decisions.Encode(e)
		if err == nil {
			_, err = bw.Write(append(b, '\n'))
		}
		if err != nil {
			return fmt.Errorf("history: writing: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("history: writing: %w", err)
	}
	return nil
}

// RecordedWindows turns the record's window entries into what
// core.ReplayVerdicts replays; other entries are left out. A window whose
// selection cannot be continued from (StateFromSelection refuses it) is
// skipped and counted.
func RecordedWindows(entries []decisions.Entry) (windows []core.RecordedWindow, skipped int) {
	for _, e := range entries {
		if e.Kind != decisions.KindWindow || e.Window == nil {
			continue
		}
		st, err := core.StateFromSelection(e.Selection)
		if err != nil {
			skipped++
			continue
		}
		w := core.RecordedWindow{Service: e.Service, Start: e.Window.Start, End: e.Window.End, State: st,
			Verdicts: map[contract.Side]core.RecordedVerdict{}, Stagger: e.Selection.StaggerViolation != ""}
		for side, v := range e.Window.Verdicts {
			w.Verdicts[side] = core.RecordedVerdict{Healthy: v.Healthy, Reasons: v.Reasons, CatchingUp: v.CatchingUp, QPS: v.QPS,
				LagP99Ms: v.LagP99Ms, AggregatorLagP99Ms: v.AggregatorLagP99Ms, Build: v.Build}
		}
		windows = append(windows, w)
	}
	return windows, skipped
}
