// Package history loads recorded health histories for core.Simulate: from a
// JSON-lines file (one HealthSample per line, optionally with the time the
// monitor received it) or from the hotpair-health topics of both clusters.
// Unlike package core, it does I/O.
package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/core"
)

// ErrBadLine is wrapped by ReadJSONLines for a line that is not a valid sample.
var ErrBadLine = errors.New("history: bad line")

// line is the JSON-lines format: a HealthSample with one more field.
type line struct {
	contract.HealthSample
	ReceivedAt *time.Time `json:"received_at,omitempty"`
}

// ReadJSONLines reads one HealthSample per line, each optionally with
// "received_at" (RFC 3339); blank lines are skipped. A line that is not a
// valid sample is an error naming its line number.
func ReadJSONLines(r io.Reader) ([]core.Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), contract.MaxValueBytes+4096)
	var out []core.Record
	for n := 1; sc.Scan(); n++ {
		b := sc.Bytes()
		if len(trimSpace(b)) == 0 {
			continue
		}
		s, err := contract.DecodeHealthSample(b)
		if err != nil {
			return nil, fmt.Errorf("%w %d: %v", ErrBadLine, n, err)
		}
		var extra struct {
			ReceivedAt *time.Time `json:"received_at"`
		}
		if err := json.Unmarshal(b, &extra); err != nil {
			return nil, fmt.Errorf("%w %d: received_at: %v", ErrBadLine, n, err)
		}
		rec := core.Record{Sample: s}
		if extra.ReceivedAt != nil {
			rec.ReceivedAt = extra.ReceivedAt.UTC()
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: reading: %w", err)
	}
	return out, nil
}

// WriteJSONLines writes records in the format ReadJSONLines reads.
func WriteJSONLines(w io.Writer, recs []core.Record) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range recs {
		l := line{HealthSample: recs[i].Sample}
		if !recs[i].ReceivedAt.IsZero() {
			t := recs[i].ReceivedAt.UTC()
			l.ReceivedAt = &t
		}
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("history: writing: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("history: writing: %w", err)
	}
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
