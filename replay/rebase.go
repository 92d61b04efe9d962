package replay

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// setJSONTime returns value with the top-level field replaced by t as an
// RFC 3339 string with nanoseconds (UTC). Everything else keeps its bytes.
// It reports false, and returns value unchanged, when value is not a JSON
// object or has no such field.
func setJSONTime(value []byte, field string, t time.Time) ([]byte, bool) {
	d := json.NewDecoder(bytes.NewReader(value))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return value, false
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return value, false
		}
		key, _ := tok.(string)
		start := d.InputOffset()
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return value, false
		}
		if key != field {
			continue
		}
		end := d.InputOffset()
		// InputOffset before the value points at the ':' or the space
		// before it; the value starts where its raw bytes begin.
		start = int64(bytes.Index(value[start:end], raw)) + start
		out := make([]byte, 0, len(value)+8)
		out = append(out, value[:start]...)
		out = strconv.AppendQuote(out, t.UTC().Format(time.RFC3339Nano))
		return append(out, value[end:]...), true
	}
	return value, false
}
