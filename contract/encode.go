package contract

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
)

// Encode marshals a record value. Every record type marshals to the same
// bytes on every host: struct field order is fixed and times are UTC. The
// records written for every input record (SpendEvent, BudgetStatus,
// Pacing, BidMultiplier) are appended by hand, byte for byte what
// json.Marshal writes (a test holds them to it), without its reflection.
func Encode(v any) ([]byte, error) {
	b := make([]byte, 0, 256)
	switch r := v.(type) {
	case SpendEvent:
		return r.appendJSON(b)
	case BudgetStatus:
		return r.appendJSON(b)
	case Pacing:
		return r.appendJSON(b)
	case BidMultiplier:
		return r.appendJSON(b)
	}
	return json.Marshal(v)
}

func (e SpendEvent) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = strconv.AppendInt(append(b, `{"v":`...), int64(e.V), 10)
	b = appendString(append(b, `,"id":`...), e.ID)
	b = appendString(append(b, `,"campaign":`...), e.Campaign)
	b = appendString(append(b, `,"advertiser":`...), e.Advertiser)
	b = strconv.AppendInt(append(b, `,"spend_micros":`...), e.SpendMicros, 10)
	b = strconv.AppendInt(append(b, `,"events":`...), e.Events, 10)
	b = appendTime(append(b, `,"window_start":`...), e.WindowStart, &err)
	b = appendTime(append(b, `,"window_end":`...), e.WindowEnd, &err)
	b = appendTimeOmitZero(b, `,"due_at":`, e.DueAt, &err)
	b = appendTime(append(b, `,"emitted_at":`...), e.EmittedAt, &err)
	return append(b, '}'), err
}

func (s BudgetStatus) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = strconv.AppendInt(append(b, `{"v":`...), int64(s.V), 10)
	b = appendString(append(b, `,"campaign":`...), s.Campaign)
	b = appendString(append(b, `,"status":`...), s.Status)
	b = appendString(append(b, `,"day":`...), s.Day)
	b = strconv.AppendInt(append(b, `,"spent_today_micros":`...), s.SpentTodayMicros, 10)
	b = strconv.AppendInt(append(b, `,"spent_lifetime_micros":`...), s.SpentLifetimeMicros, 10)
	b = appendTimeOmitZero(b, `,"last_window_start":`, s.LastWindowStart, &err)
	b = appendTime(append(b, `,"updated_at":`...), s.UpdatedAt, &err)
	return append(b, '}'), err
}

func (p Pacing) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = strconv.AppendInt(append(b, `{"v":`...), int64(p.V), 10)
	b = appendString(append(b, `,"campaign":`...), p.Campaign)
	b = appendFloat(append(b, `,"rate":`...), p.Rate, &err)
	b = strconv.AppendInt(append(b, `,"target_micros":`...), p.TargetMicros, 10)
	b = strconv.AppendInt(append(b, `,"actual_micros":`...), p.ActualMicros, 10)
	b = appendTimeOmitZero(b, `,"last_window_start":`, p.LastWindowStart, &err)
	b = appendTime(append(b, `,"updated_at":`...), p.UpdatedAt, &err)
	return append(b, '}'), err
}

func (m BidMultiplier) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = strconv.AppendInt(append(b, `{"v":`...), int64(m.V), 10)
	b = appendString(append(b, `,"campaign":`...), m.Campaign)
	b = appendFloat(append(b, `,"multiplier":`...), m.Multiplier, &err)
	b = appendTimeOmitZero(b, `,"last_window_start":`, m.LastWindowStart, &err)
	b = appendTime(append(b, `,"updated_at":`...), m.UpdatedAt, &err)
	return append(b, '}'), err
}

// appendString appends s as json.Marshal does: printable ASCII other than
// the characters it escapes is copied, anything else goes through it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds); times that are not UTC or outside years 0 to 9999 go
// through MarshalJSON itself. It sets *err once for a time it rejects.
// appendTimeOmitZero appends key and t, as appendTime does, unless t is
// zero (the field's omitzero).
func appendTimeOmitZero(b []byte, key string, t time.Time, err *error) []byte {
	if t.IsZero() {
		return b
	}
	return appendTime(append(b, key...), t, err)
}

func appendTime(b []byte, t time.Time, err *error) []byte {
	if y := t.Year(); y >= 0 && y <= 9999 && t.Location() == time.UTC {
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	q, e := t.MarshalJSON()
	if e != nil && *err == nil {
		*err = e
	}
	return append(b, q...)
}

// appendFloat appends f as json.Marshal does; it sets *err once for NaN
// and infinities, which JSON cannot hold.
func appendFloat(b []byte, f float64, err *error) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if *err == nil {
			*err = errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
		}
		return append(b, `null`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
