package selector

import (
	"context"
	"net/http"

	"github.com/hotpair/hotpair/contract"
)

// TagHeader is the HTTP header that carries a Tag from the ads server to the
// retriever.
const TagHeader = "Hotpair-Selection"

// tagVersion is the first byte of every encoded tag. A tag with another
// version does not parse (the retriever then uses its own snapshot).
const tagVersion = '1'

// maxTagLen bounds what ParseTag reads: version, three groups of a dot, a side
// letter and up to 19 digits.
const maxTagLen = 1 + contract.NumServices*(2+19)

// Tag is a whole selection snapshot in a few bytes: every service's side and
// the epoch of the decision it came from. The ads server attaches it to a
// request so that every retriever shard answers the request from the same
// sides, even while a switch propagates.
//
// Encoded, a tag is the version "1" followed by one group per service in tag
// order (budget, pacer, bidder): a dot, the side's letter (p or s) and the
// decision epoch in decimal, which is absent when the side is the
// configured default rather than read from ZooKeeper. For example
// "1.p12.s3.p" is budget on primary at epoch 12, pacer on standby at epoch
// 3, bidder on primary by default.
//
// The zero Tag is invalid: it has no sides.
type Tag struct {
	sides  [contract.NumServices]contract.Side
	epochs [contract.NumServices]int64 // -1: the side is a default, not read
}

// Side returns the service's side (unset for an invalid tag or service).
func (t Tag) Side(svc contract.Service) contract.Side {
	if !svc.Valid() {
		return 0
	}
	return t.sides[svc-1]
}

// Epoch returns the service's decision epoch; ok is false when the side is
// the default, not read from ZooKeeper.
func (t Tag) Epoch(svc contract.Service) (epoch int64, ok bool) {
	if !svc.Valid() || t.epochs[svc-1] < 0 {
		return 0, false
	}
	return t.epochs[svc-1], true
}

// WithSide returns the tag with svc set to side at epoch; a negative epoch
// marks the side as a default.
func (t Tag) WithSide(svc contract.Service, side contract.Side, epoch int64) Tag {
	if svc.Valid() {
		t.sides[svc-1], t.epochs[svc-1] = side, max(epoch, -1)
	}
	return t
}

// Valid reports whether every service has a side.
func (t Tag) Valid() bool {
	for _, s := range t.sides {
		if !s.Valid() {
			return false
		}
	}
	return true
}

// AppendTo appends the encoded tag to dst. It does not allocate when dst
// has room. An invalid tag encodes as "" (nothing is appended).
func (t Tag) AppendTo(dst []byte) []byte {
	if !t.Valid() {
		return dst
	}
	dst = append(dst, tagVersion)
	for i, s := range t.sides {
		c := byte('p')
		if s == contract.Standby {
			c = 's'
		}
		dst = append(dst, '.', c)
		if e := t.epochs[i]; e >= 0 {
			dst = appendUint(dst, uint64(e))
		}
	}
	return dst
}

// String returns the encoded tag ("" for an invalid tag).
func (t Tag) String() string {
	var b [maxTagLen]byte
	return string(t.AppendTo(b[:0]))
}

func appendUint(dst []byte, v uint64) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// ParseTag parses an encoded tag. It does not allocate. Any deviation from
// the format, including another version, is ErrBadTag.
func ParseTag(s string) (Tag, error) {
	var t Tag
	if len(s) < 1 || len(s) > maxTagLen || s[0] != tagVersion {
		return Tag{}, ErrBadTag
	}
	i := 1
	for n := range contract.NumServices {
		if i+1 >= len(s) || s[i] != '.' {
			return Tag{}, ErrBadTag
		}
		switch s[i+1] {
		case 'p':
			t.sides[n] = contract.Primary
		case 's':
			t.sides[n] = contract.Standby
		default:
			return Tag{}, ErrBadTag
		}
		i += 2
		start, e := i, int64(0)
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			d := int64(s[i] - '0')
			if e > (1<<63-1-d)/10 {
				return Tag{}, ErrBadTag // overflows int64
			}
			e = e*10 + d
		}
		switch {
		case i == start:
			e = -1
		case s[start] == '0' && i-start > 1:
			return Tag{}, ErrBadTag // leading zero: one tag, one spelling
		}
		t.epochs[n] = e
	}
	if i != len(s) {
		return Tag{}, ErrBadTag
	}
	return t, nil
}

// SetHeader sets the tag on outgoing request headers.
func SetHeader(h http.Header, t Tag) {
	h[TagHeader] = []string{t.String()}
}

// TagFromHeader parses the tag of an incoming request: ErrNoTag when there is
// none, ErrBadTag when it does not parse.
func TagFromHeader(h http.Header) (Tag, error) {
	v := h.Values(TagHeader)
	if len(v) == 0 {
		return Tag{}, ErrNoTag
	}
	return ParseTag(v[0])
}

type tagKey struct{}

// ContextWithTag returns a context that carries the tag.
func ContextWithTag(ctx context.Context, t Tag) context.Context {
	return context.WithValue(ctx, tagKey{}, t)
}

// TagFromContext returns the tag ContextWithTag put in ctx.
func TagFromContext(ctx context.Context) (Tag, bool) {
	t, ok := ctx.Value(tagKey{}).(Tag)
	return t, ok
}
