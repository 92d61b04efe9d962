package statestore

import (
	"encoding"
	"encoding/binary"
	"fmt"
)

// State values are stored in an envelope:
//
//	byte 0     format (1)
//	bytes 1-8  wake time, unix milliseconds, big endian; 0 = no wake-up
//	bytes 9-   the state's binary encoding (binary.go)
//
// The wake time sits in a fixed place so that the store can index it on every
// write (see Wakeups) without decoding the state.
const (
	envelopeFormat = 1
	headerLen      = 9
)

// State is a per-key state that may ask to be woken at a wall-clock time
// (a window closing, the campaign's midnight).
type State interface {
	// WakeAtMs returns when the key needs a timer action, in unix
	// milliseconds, or 0 for never.
	WakeAtMs() int64
	encoding.BinaryMarshaler
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
	// sizeHint is about how many bytes the encoding takes.
	sizeHint() int
}

// Codec is the goka codec of a state type S (used as *S in goka).
type Codec[S any, PS interface {
	*S
	State
}] struct{}

// Encode writes the envelope of a *S, in one allocation.
func (Codec[S, PS]) Encode(v any) ([]byte, error) {
	s, ok := v.(PS)
	if !ok {
		return nil, fmt.Errorf("statestore: cannot encode %T", v)
	}
	b := make([]byte, headerLen, headerLen+s.sizeHint())
	b[0] = envelopeFormat
	binary.BigEndian.PutUint64(b[1:headerLen], uint64(s.WakeAtMs()))
	return s.AppendBinary(b)
}

// Decode reads an envelope into a new *S.
func (Codec[S, PS]) Decode(b []byte) (any, error) {
	if len(b) < headerLen || b[0] != envelopeFormat {
		return nil, fmt.Errorf("statestore: value is not a state envelope (%d bytes)", len(b))
	}
	s := PS(new(S))
	if err := s.UnmarshalBinary(b[headerLen:]); err != nil {
		return nil, fmt.Errorf("statestore: decoding state: %w", err)
	}
	return s, nil
}

// WakeAtOf reads the wake time of an encoded state without decoding it.
func WakeAtOf(b []byte) int64 {
	if len(b) < headerLen || b[0] != envelopeFormat {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b[1:headerLen]))
}
