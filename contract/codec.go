package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// MaxValueBytes is the largest record value a decoder accepts.
const MaxValueBytes = 1 << 20

// Reason says why a record is bad. Each kind of bad record has its own reason;
// it becomes the hotpair-reason header of the dead letter and the reason label
// of hotpair_dead_letters_total.
type Reason string

// Reasons of bad records.
const (
	ReasonEmptyValue         Reason = "empty_value"            // no bytes at all (a tombstone on a stream)
	ReasonValueTooLarge      Reason = "value_too_large"        // over MaxValueBytes
	ReasonInvalidJSON        Reason = "invalid_json"           // not parseable as JSON
	ReasonNotObject          Reason = "not_object"             // JSON, but not an object
	ReasonUnsupportedVersion Reason = "unsupported_version"    // "v" is not SchemaVersion
	ReasonMissingField       Reason = "missing_field"          // a required field is absent or null
	ReasonWrongType          Reason = "wrong_type"             // a field has the wrong JSON type or overflows
	ReasonNegativeAmount     Reason = "negative_amount"        // money or a count below zero
	ReasonInvalidEnum        Reason = "invalid_enum"           // e.g. type is neither impression nor click
	ReasonInvalidTimestamp   Reason = "invalid_timestamp"      // not RFC 3339
	ReasonTimestampRange     Reason = "timestamp_out_of_range" // before 2000 or after 2200
	ReasonInvalidID          Reason = "invalid_id"             // an id with forbidden characters or length
	ReasonInvalidSpendID     Reason = "invalid_spend_id"       // a SpendEvent id that is not campaign/window_start_ms[/late/event]
	ReasonInvalidWindow      Reason = "invalid_window"         // window_end not after window_start
	ReasonInvalidTimezone    Reason = "invalid_timezone"       // not an IANA zone name this host knows
	ReasonOutOfRange         Reason = "out_of_range"           // a rate or multiplier outside its bounds
	ReasonKeyMismatch        Reason = "key_mismatch"           // record key differs from the campaign field
	ReasonFutureTimestamp    Reason = "timestamp_in_future"    // event time too far ahead of the receiver's clock
)

// DecodeError is returned by every decoder for a bad record.
type DecodeError struct {
	Reason Reason
	Field  string // the offending field, "" when the whole value is bad
	Detail string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Reason, e.Detail)
	}
	return fmt.Sprintf("%s: field %q: %s", e.Reason, e.Field, e.Detail)
}

// ReasonOf returns the Reason of a *DecodeError in err's chain, or "" when
// err is not a decode error.
func ReasonOf(err error) Reason {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return ""
}

func badRecord(r Reason, field, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: r, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// checkValue rejects what no decoder reads: an empty value, one over the
// size limit, and JSON that is not an object.
func checkValue(b []byte) error {
	switch {
	case len(b) == 0:
		return badRecord(ReasonEmptyValue, "", "value is empty")
	case len(b) > MaxValueBytes:
		return badRecord(ReasonValueTooLarge, "", "value has %d bytes, limit %d", len(b), MaxValueBytes)
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		if !json.Valid(b) {
			return badRecord(ReasonInvalidJSON, "", "value is not valid JSON")
		}
		return badRecord(ReasonNotObject, "", "value is JSON but not an object")
	}
	return nil
}

// scanRecord is decodeObject without reflection: see scanObject.
func scanRecord(b []byte, fields []wireField, toks []token) error {
	if err := checkValue(b); err != nil {
		return err
	}
	return scanObject(b, fields, toks)
}

// decodeObject unmarshals b into the wire struct w, mapping each failure to
// its reason.
func decodeObject(b []byte, w any) error {
	if err := checkValue(b); err != nil {
		return err
	}
	err := json.Unmarshal(b, w)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return badRecord(ReasonInvalidJSON, "", "value is not valid JSON: %v", err)
	case errors.As(err, &te):
		return badRecord(ReasonWrongType, te.Field, "want %s, got JSON %s", te.Type, te.Value)
	default:
		// A field's own UnmarshalJSON (the lag histogram) rejected its value.
		return badRecord(ReasonWrongType, "", "%v", err)
	}
}

// fields validates the fields of one wire struct; after the first failure
// every method is a no-op, and err returns that first failure.
type fields struct{ err *DecodeError }

func (f *fields) fail(r Reason, field, format string, args ...any) {
	if f.err == nil {
		f.err = badRecord(r, field, format, args...)
	}
}

func (f *fields) present(name string, isNil bool) bool {
	if f.err != nil {
		return false
	}
	if isNil {
		f.fail(ReasonMissingField, name, "required field is missing")
		return false
	}
	return true
}

func (f *fields) version(v *int) {
	n, ok := deref(v)
	f.versionOK(int64(n), ok)
}

func (f *fields) versionOK(v int64, ok bool) {
	if f.present("v", !ok) && v != SchemaVersion {
		f.fail(ReasonUnsupportedVersion, "v", "schema version %d is not supported (want %d)", v, SchemaVersion)
	}
}

// deref returns *p and whether p is set: the wire structs' pointer fields
// tell a missing field from a zero value.
func deref[T any](p *T) (T, bool) {
	if p == nil {
		var zero T
		return zero, false
	}
	return *p, true
}

// The validators below take a field's value and whether it is present (set
// and not null); their pointer forms serve the wire structs.

func (f *fields) str(name string, p *string) string {
	s, ok := deref(p)
	return f.strOK(name, s, ok)
}

func (f *fields) strOK(name, s string, ok bool) string {
	if !f.present(name, !ok) {
		return ""
	}
	return s
}

// id reads an identifier: 1 to 128 bytes of printable ASCII without spaces;
// slash is forbidden when noSlash (campaign ids, which are part of spend ids).
func (f *fields) id(name string, p *string, noSlash bool) string {
	s, ok := deref(p)
	return f.idOK(name, s, ok, noSlash)
}

func (f *fields) idOK(name, s string, ok, noSlash bool) string {
	s = f.strOK(name, s, ok)
	if f.err != nil {
		return ""
	}
	if len(s) == 0 || len(s) > 128 {
		f.fail(ReasonInvalidID, name, "length %d, want 1 to 128 bytes", len(s))
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || (noSlash && c == '/') {
			f.fail(ReasonInvalidID, name, "byte %d (%q) is not allowed", i, c)
			return ""
		}
	}
	return s
}

func (f *fields) nonNegative(name string, p *int64) int64 {
	n, ok := deref(p)
	return f.nonNegativeOK(name, n, ok)
}

func (f *fields) nonNegativeOK(name string, n int64, ok bool) int64 {
	if !f.present(name, !ok) {
		return 0
	}
	if n < 0 {
		f.fail(ReasonNegativeAmount, name, "%d is negative", n)
		return 0
	}
	return n
}

var (
	minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

func (f *fields) time(name string, p *string) time.Time {
	s, ok := deref(p)
	return f.timeOK(name, s, ok)
}

func (f *fields) timeOK(name, s string, ok bool) time.Time {
	s = f.strOK(name, s, ok)
	if f.err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		f.fail(ReasonInvalidTimestamp, name, "%q is not an RFC 3339 time", s)
		return time.Time{}
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		f.fail(ReasonTimestampRange, name, "%s is outside [2000, 2200)", s)
		return time.Time{}
	}
	return t.UTC()
}

// optionalTime reads a time that may be absent (or null): zero when it is.
func (f *fields) optionalTime(name string, p *string) time.Time {
	s, ok := deref(p)
	return f.optionalTimeOK(name, s, ok)
}

func (f *fields) optionalTimeOK(name, s string, ok bool) time.Time {
	if !ok {
		return time.Time{}
	}
	return f.timeOK(name, s, ok)
}

func (f *fields) unit(name string, p *float64, lo, hi float64) float64 {
	if !f.present(name, p == nil) {
		return 0
	}
	if math.IsNaN(*p) || *p < lo || *p > hi {
		f.fail(ReasonOutOfRange, name, "%v is outside [%v, %v]", *p, lo, hi)
		return 0
	}
	return *p
}

func (f *fields) oneOf(name string, p *string, allowed ...string) string {
	s, ok := deref(p)
	return f.oneOfOK(name, s, ok, allowed...)
}

func (f *fields) oneOfOK(name, s string, ok bool, allowed ...string) string {
	s = f.strOK(name, s, ok)
	if f.err != nil {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	f.fail(ReasonInvalidEnum, name, "%q is not one of %v", s, allowed)
	return ""
}

func (f *fields) result() error {
	if f.err == nil {
		return nil
	}
	return f.err
}

var zones sync.Map // name -> *time.Location

// LoadZone returns the IANA time zone name, cached: budget rows are read on
// every spend event and time.LoadLocation reads the zone database each call.
func LoadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time zone %q is not an IANA zone name", name)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

// CheckKey returns a key_mismatch error when a record's key is not the
// campaign it carries: records are partitioned by key, so a mismatch would put
// the campaign's state on the wrong partition.
func CheckKey(key, campaign string) error {
	if key != campaign {
		return badRecord(ReasonKeyMismatch, "campaign", "record key %q differs from campaign %q", key, campaign)
	}
	return nil
}
