package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// RetimeOptions configure Retime.
type RetimeOptions struct {
	Input, Output string
	// QPS is the fixed rate: record i gets timestamp Start + i/QPS.
	QPS float64
	// Start is the first record's new timestamp (zero: its old one).
	Start time.Time
}

// RetimeResult says what Retime wrote.
type RetimeResult struct {
	Records int64
	First   time.Time
	Last    time.Time
	// Problem is set when the input was not closed (its readable records
	// were retimed).
	Problem error
}

// Retime rewrites the timestamps of a recording to a fixed rate, keeping
// the records, their order and everything else about them. The output is
// written to a temporary file beside it and renamed into place at the end.
func Retime(o RetimeOptions) (RetimeResult, error) {
	if o.QPS <= 0 || math.IsInf(o.QPS, 0) || math.IsNaN(o.QPS) {
		return RetimeResult{}, fmt.Errorf("replay: retime rate %v must be positive", o.QPS)
	}
	in, err := Open(o.Input)
	if err != nil {
		return RetimeResult{}, err
	}
	defer in.Close()
	meta := in.Meta()
	meta.RetimedQPS, meta.Origin = o.QPS, filepath.Base(o.Input)
	tmp := o.Output + ".tmp"
	out, err := Create(tmp, meta)
	if err != nil {
		return RetimeResult{}, err
	}
	res, err := retimeAll(in, out, o)
	if err == nil {
		err = out.Close("")
	} else {
		out.Abandon()
	}
	if err == nil {
		err = os.Rename(tmp, o.Output)
	}
	if err != nil {
		os.Remove(tmp)
		return RetimeResult{}, err
	}
	res.Problem = in.Status().Problem
	return res, nil
}

func retimeAll(in *Reader, out *Writer, o RetimeOptions) (RetimeResult, error) {
	var res RetimeResult
	start := o.Start
	step := float64(time.Second) / o.QPS
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			return res, nil
		} else if err != nil {
			return res, err
		}
		if res.Records == 0 {
			if start.IsZero() {
				start = rec.Timestamp
			}
			res.First = start.UTC()
		}
		rec.Timestamp = start.Add(time.Duration(math.Round(float64(res.Records) * step))).UTC()
		res.Last = rec.Timestamp
		if err := out.Write(rec); err != nil {
			return res, err
		}
		res.Records++
	}
}
