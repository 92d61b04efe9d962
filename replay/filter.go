package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Filter keeps the records that match every condition given; several values
// for the same key pattern, header or field are alternatives. The zero Filter
// keeps everything.
type Filter struct {
	keys    []string            // exact keys, or prefixes ending in '*'
	headers map[string][]string // header key -> accepted values (empty: any value)
	fields  map[string][]string // dotted JSON path -> accepted values
	exprs   []string
}

// ParseFilter builds a Filter from command-line expressions:
//   - keys: "adv-7" (exact) or "camp-1*" (prefix);
//   - headers: "k" (header present) or "k=v";
//   - where: "field=value" on the record value as a JSON object, "a.b=value"
//     for a nested field. Strings compare unquoted, numbers as written,
//     booleans as true/false, null as null.
func ParseFilter(keys, headers, where []string) (Filter, error) {
	f := Filter{keys: slices.Clone(keys)}
	for _, k := range keys {
		if k == "" {
			return Filter{}, fmt.Errorf("%w: empty key", ErrBadFilter)
		}
		f.exprs = append(f.exprs, "key="+k)
	}
	for _, h := range headers {
		k, v, hasValue := strings.Cut(h, "=")
		if k == "" {
			return Filter{}, fmt.Errorf("%w: header %q: want NAME or NAME=VALUE", ErrBadFilter, h)
		}
		if f.headers == nil {
			f.headers = map[string][]string{}
		}
		if hasValue {
			f.headers[k] = append(f.headers[k], v)
		} else if _, ok := f.headers[k]; !ok {
			f.headers[k] = nil
		}
		f.exprs = append(f.exprs, "header:"+h)
	}
	for _, w := range where {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") {
			return Filter{}, fmt.Errorf("%w: where %q: want FIELD=VALUE (FIELD may be a.b for nested objects)", ErrBadFilter, w)
		}
		if f.fields == nil {
			f.fields = map[string][]string{}
		}
		f.fields[k] = append(f.fields[k], v)
		f.exprs = append(f.exprs, "where:"+w)
	}
	return f, nil
}

// Empty reports whether the filter keeps everything.
func (f Filter) Empty() bool { return len(f.exprs) == 0 }

// Exprs returns the filter's expressions as given, for a recording's meta.
func (f Filter) Exprs() []string { return slices.Clone(f.exprs) }

// Match reports whether r passes the filter.
func (f Filter) Match(r *Record) bool {
	return f.keyMatches(r.Key) && f.headersMatch(r.Headers) && f.fieldsMatch(r.Value)
}

func (f Filter) keyMatches(key []byte) bool {
	if len(f.keys) == 0 {
		return true
	}
	for _, k := range f.keys {
		if p, ok := strings.CutSuffix(k, "*"); ok {
			if bytes.HasPrefix(key, []byte(p)) {
				return true
			}
		} else if string(key) == k {
			return true
		}
	}
	return false
}

func (f Filter) headersMatch(hs []Header) bool {
	for k, values := range f.headers {
		if !slices.ContainsFunc(hs, func(h Header) bool {
			return h.Key == k && (len(values) == 0 || slices.Contains(values, string(h.Value)))
		}) {
			return false
		}
	}
	return true
}

func (f Filter) fieldsMatch(value []byte) bool {
	if len(f.fields) == 0 {
		return true
	}
	var obj map[string]any
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	if d.Decode(&obj) != nil {
		return false
	}
	for path, values := range f.fields {
		got, ok := lookupField(obj, path)
		if !ok || !slices.Contains(values, got) {
			return false
		}
	}
	return true
}

// lookupField returns the value at a dotted path as a string, false when the
// path does not lead to a scalar.
func lookupField(obj map[string]any, path string) (string, bool) {
	var cur any = obj
	for part := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[part]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	case nil:
		return "null", true
	}
	return "", false
}
