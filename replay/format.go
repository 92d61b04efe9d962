package replay

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"
)

// The recording file format, version 1 (docs/replay.md has the full layout).
//
//	file    = header block* [end]
//	header  = magic "HPREPLAY" | u16 version | u32 len | meta JSON | u32 crc32c(version..meta)
//	block   = u8 kind 'B' | u8 codec | u32 payload len | u32 records | u32 raw len | u32 crc32c | payload
//	end     = u8 kind 'E' | u8 codec 0 | u32 len | u32 0 | u32 len | u32 crc32c | trailer JSON
//
// Integers are big-endian. A block's crc32c (Castagnoli) covers its first 14
// header bytes and its payload. A data block's payload, once decompressed
// (codec 1 = zstd, 0 = none), is its records one after the other:
//
//	record  = varint ts_unix_nanos | varint partition | varint offset
//	          | uvarint len(key)+1 | key | uvarint len(value)+1 | value   (0 = null)
//	          | uvarint header count | (uvarint len(hkey) | hkey | uvarint len(hval)+1 | hval)*
//
// Blocks are written whole with one write each, so a recorder killed at any
// moment leaves every earlier block readable; a reader stops at a torn tail.
const (
	magic         = "HPREPLAY"
	formatVersion = 1

	kindBlock = 'B'
	kindEnd   = 'E'

	codecNone = 0
	codecZstd = 1

	blockHeaderLen = 18
	// maxPayload bounds a block a reader accepts, so a corrupt length cannot
	// make it allocate gigabytes.
	maxPayload = 256 << 20
	// maxMetaLen bounds the header's meta JSON.
	maxMetaLen = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Meta describes a recording; it is the JSON of the file header.
type Meta struct {
	// Format is the file format version (1).
	Format int `json:"format"`
	// Topic is the topic the records came from.
	Topic string `json:"topic,omitempty"`
	// Partitions is the source topic's partition count when recorded.
	Partitions int32 `json:"partitions,omitempty"`
	// RecordedAt is when the recording started (wall clock of the recorder).
	RecordedAt time.Time `json:"recorded_at"`
	// Since and Until bound a past window that was recorded (zero when live).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Filters are the filters applied while recording, as given.
	Filters []string `json:"filters,omitempty"`
	// RetimedQPS is the fixed rate the timestamps were rewritten to by
	// retime, 0 when they are the original ones.
	RetimedQPS float64 `json:"retimed_qps,omitempty"`
	// Origin is the file this one was derived from by retime.
	Origin string `json:"origin,omitempty"`
	// Build is the hotpair build that wrote the file.
	Build string `json:"build,omitempty"`
}

// Trailer is the JSON of the end marker, written when a recording is closed.
type Trailer struct {
	Records  int64     `json:"records"`
	Blocks   int64     `json:"blocks"`
	FirstTS  time.Time `json:"first_ts,omitzero"`
	LastTS   time.Time `json:"last_ts,omitzero"`
	ClosedAt time.Time `json:"closed_at"`
	// Stopped says why the recorder stopped: "duration", "window", "limit",
	// "interrupted" (a signal), or "" for a file written by retime.
	Stopped string `json:"stopped,omitempty"`
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one recorded Kafka record.
type Record struct {
	Timestamp time.Time
	Key       []byte // nil for a record without key
	Value     []byte // nil for a tombstone
	Headers   []Header
	Partition int32 // the source partition
	Offset    int64 // the source offset
}

func encodeHeader(meta Meta) ([]byte, error) {
	meta.Format = formatVersion
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("replay: encoding meta: %w", err)
	}
	b := make([]byte, 0, len(magic)+2+4+len(mj)+4)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(mj)))
	b = append(b, mj...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[len(magic):], castagnoli)), nil
}

// appendBlock appends one framed block to dst.
func appendBlock(dst []byte, kind, codec byte, records, rawLen int, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, kind, codec)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(records))
	dst = binary.BigEndian.AppendUint32(dst, uint32(rawLen))
	crc := crc32.Update(crc32.Checksum(dst[start:], castagnoli), castagnoli, payload)
	dst = binary.BigEndian.AppendUint32(dst, crc)
	return append(dst, payload...)
}

// appendRecord appends the encoding of r to dst.
func appendRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, r.Timestamp.UnixNano())
	dst = binary.AppendVarint(dst, int64(r.Partition))
	dst = binary.AppendVarint(dst, r.Offset)
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendUvarint(dst, uint64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullable(dst, h.Value)
	}
	return dst
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

// recordDecoder reads records from a decompressed block. The records' byte
// slices point into the block, which is never reused.
type recordDecoder struct {
	b   []byte
	err error
}

func (d *recordDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint in block", ErrCorrupt)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad uvarint in block", ErrCorrupt)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: field of %d bytes overruns its block", ErrCorrupt, n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) nullable() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	return d.bytes(n - 1)
}

func (d *recordDecoder) record() (*Record, error) {
	r := &Record{}
	r.Timestamp = time.Unix(0, d.varint()).UTC()
	r.Partition = int32(d.varint())
	r.Offset = d.varint()
	r.Key = d.nullable()
	r.Value = d.nullable()
	nh := d.uvarint()
	if nh > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: %d headers overrun their block", ErrCorrupt, nh)
	}
	if d.err == nil && nh > 0 {
		r.Headers = make([]Header, nh)
		for i := range r.Headers {
			r.Headers[i].Key = string(d.bytes(d.uvarint()))
			r.Headers[i].Value = d.nullable()
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}
