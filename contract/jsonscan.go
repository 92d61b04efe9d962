package contract

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The two decoders on the hot path (AdEvent in the aggregator, SpendEvent in
// every service) read JSON with this scanner instead of encoding/json's
// reflection, which cost a third of a stage's CPU. It accepts and rejects
// exactly what json.Unmarshal into the pointer wire structs did (a fuzz
// test holds the two to the same results): the whole value must be valid
// JSON; member names match the fields exactly or else case-insensitively; a
// field's last occurrence wins and null clears it; the first value of the
// wrong type (in document order) makes the record wrong_type.

// fieldKind is the JSON type a wire field wants.
type fieldKind uint8

const (
	kindString fieldKind = 1 + iota
	kindInt              // an integer that fits in int64
)

// wireField is one field of a wire struct.
type wireField struct {
	name string
	kind fieldKind
}

// token is a field's raw JSON value, valid while the scanned bytes are.
type token struct {
	raw     []byte // the value's bytes, quotes included for strings
	present bool   // seen and not null
	escaped bool   // a string with escapes or non-ASCII bytes
	n       int64  // an integer's value
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// scanObject validates b as one JSON object and sets toks[i] to the last
// value of fields[i]. It returns a *DecodeError: invalid_json for bad
// syntax anywhere, wrong_type for the first field value of the wrong type.
func scanObject(b []byte, fields []wireField, toks []token) error {
	s := scanner{b: b}
	s.ws()
	if !s.eat('{') {
		return badRecord(ReasonInvalidJSON, "", "value is not valid JSON")
	}
	var typeErr *DecodeError
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, kesc := s.str()
			s.ws()
			if s.err || !s.eat(':') {
				return s.syntaxError()
			}
			s.ws()
			start, vesc := s.i, false
			if s.i < len(b) && b[s.i] == '"' {
				_, vesc = s.str()
			} else {
				s.skipValue(2)
			}
			if s.err {
				return s.syntaxError()
			}
			if i := fieldIndex(fields, key, kesc); i >= 0 && typeErr == nil {
				typeErr = setToken(&toks[i], fields[i], b[start:s.i], vesc)
			}
			s.ws()
			if s.eat('}') {
				break
			}
			if !s.eat(',') {
				return s.syntaxError()
			}
		}
	}
	s.ws()
	if s.i != len(b) {
		return s.syntaxError()
	}
	if typeErr != nil {
		return typeErr
	}
	return nil
}

// setToken checks a field's value and keeps it as the field's last;
// escaped says whether a string value has escapes or bytes outside
// printable ASCII.
func setToken(t *token, f wireField, v []byte, escaped bool) *DecodeError {
	switch {
	case v[0] == 'n': // null
		*t = token{}
		return nil
	case f.kind == kindString && v[0] == '"':
		*t = token{raw: v, present: true, escaped: escaped}
		return nil
	case f.kind == kindInt && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return badRecord(ReasonWrongType, f.name, "want int64, got JSON number %s", v)
		}
		*t = token{raw: v, present: true, n: n}
		return nil
	}
	want := map[fieldKind]string{kindString: "string", kindInt: "int64"}[f.kind]
	return badRecord(ReasonWrongType, f.name, "want %s, got JSON %s", want, jsonType(v[0]))
}

func jsonType(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// fieldIndex finds the field a member name sets: an exact match first, then
// a case-insensitive one (as encoding/json does); -1 for unknown members.
func fieldIndex(fields []wireField, key []byte, escaped bool) int {
	if escaped {
		var k string
		if json.Unmarshal(key, &k) != nil {
			return -1
		}
		key = []byte(k)
	} else {
		key = key[1 : len(key)-1]
	}
	for i, f := range fields {
		if string(key) == f.name {
			return i
		}
	}
	for i, f := range fields {
		if bytes.EqualFold(key, []byte(f.name)) {
			return i
		}
	}
	return -1
}

// str returns a string field's value and whether it is present.
func (t token) str() (string, bool) {
	switch {
	case !t.present:
		return "", false
	case !t.escaped:
		return string(t.raw[1 : len(t.raw)-1]), true
	}
	var s string
	_ = json.Unmarshal(t.raw, &s) // the scanner validated the token
	return s, true
}

// int64 returns an int field's value and whether it is present.
func (t token) int64() (int64, bool) {
	if !t.present {
		return 0, false
	}
	return t.n, true
}

// scanner checks JSON syntax; err is set at the first error.
type scanner struct {
	b   []byte
	i   int
	err bool
}

func (s *scanner) syntaxError() error {
	return badRecord(ReasonInvalidJSON, "", "value is not valid JSON: syntax error at byte %d", s.i)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string token and reports whether it needs unquoting.
func (s *scanner) str() ([]byte, bool) {
	start := s.i
	if !s.eat('"') {
		s.err = true
		return nil, false
	}
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start:s.i], escaped
		case c == '\\':
			escaped = true
			if !s.escape() {
				s.err = true
				return nil, false
			}
		case c < 0x20:
			s.err = true
			return nil, false
		default:
			if c >= 0x80 {
				escaped = true
			}
			s.i++
		}
	}
	s.err = true
	return nil, false
}

// escape reads one escape sequence at a backslash.
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// number reads a JSON number.
func (s *scanner) number() {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		s.err = true
		return
	}
	if s.eat('.') && !s.digits() {
		s.err = true
		return
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if !s.digits() {
			s.err = true
		}
	}
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) literal(lit string) {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.err = true
		return
	}
	s.i += len(lit)
}

// skipValue reads one JSON value; depth is the nesting level it has if it
// is an object or an array.
func (s *scanner) skipValue(depth int) {
	if s.i >= len(s.b) {
		s.err = true
		return
	}
	c := s.b[s.i]
	if (c == '{' || c == '[') && depth > maxDepth {
		s.err = true
		return
	}
	switch {
	case c == '"':
		s.str()
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return
		}
		for !s.err {
			s.ws()
			s.str()
			s.ws()
			if s.err || !s.eat(':') {
				s.err = true
				return
			}
			s.ws()
			s.skipValue(depth + 1)
			s.ws()
			if s.eat('}') {
				return
			}
			if !s.eat(',') {
				s.err = true
			}
		}
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return
		}
		for !s.err {
			s.ws()
			s.skipValue(depth + 1)
			s.ws()
			if s.eat(']') {
				return
			}
			if !s.eat(',') {
				s.err = true
			}
		}
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	default:
		s.number()
	}
}
