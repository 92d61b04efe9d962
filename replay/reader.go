package replay

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
)

// Status says how a recording ended, once a Reader has reached its end.
type Status struct {
	// Complete is true when the end marker was read: the recording was closed.
	Complete bool
	// Trailer is the end marker's content (zero when not Complete).
	Trailer Trailer
	// Blocks and Records are what was read.
	Blocks  int64
	Records int64
	// Bytes is the size of everything read, header and complete blocks;
	// RawBytes the size of the data blocks' records once decompressed.
	Bytes    int64
	RawBytes int64
	// TornBytes is the size of the cut-short tail that was skipped.
	TornBytes int64
	// Problem is ErrTornTail or ErrUnfinished (wrapped with details) for an
	// incomplete recording, nil for a complete one.
	Problem error
}

// Reader reads a recording block by block; it never holds more than one
// block in memory.
type Reader struct {
	br     *bufio.Reader
	closer io.Closer
	dec    *zstd.Decoder
	meta   Meta

	block  recordDecoder
	left   int // records left in block
	status Status
	done   bool
}

// NewReader reads the file header from r.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	fixed := make([]byte, len(magic)+6)
	if _, err := io.ReadFull(br, fixed); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRecording, err)
	}
	if string(fixed[:len(magic)]) != magic {
		return nil, ErrNotRecording
	}
	if v := binary.BigEndian.Uint16(fixed[len(magic):]); v != formatVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrUnsupportedFormat, v, formatVersion)
	}
	n := binary.BigEndian.Uint32(fixed[len(magic)+2:])
	if n > maxMetaLen {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrCorrupt, n)
	}
	rest := make([]byte, n+4)
	if _, err := io.ReadFull(br, rest); err != nil {
		return nil, fmt.Errorf("%w: header cut short: %v", ErrCorrupt, err)
	}
	crc := crc32.Update(crc32.Checksum(fixed[len(magic):], castagnoli), castagnoli, rest[:n])
	if crc != binary.BigEndian.Uint32(rest[n:]) {
		return nil, fmt.Errorf("%w: header checksum mismatch", ErrCorrupt)
	}
	var meta Meta
	if err := json.Unmarshal(rest[:n], &meta); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPayload))
	if err != nil {
		return nil, fmt.Errorf("replay: zstd: %w", err)
	}
	rd := &Reader{br: br, dec: dec, meta: meta}
	rd.status.Bytes = int64(len(fixed) + len(rest))
	return rd, nil
}

// Open opens the recording at path; Close closes the file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	r, err := NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// Meta returns the recording's header.
func (r *Reader) Meta() Meta { return r.meta }

// Status returns how the recording ended; it is final once Next returned io.EOF.
func (r *Reader) Status() Status { return r.status }

// Close releases the reader (and the file, if Open opened it).
func (r *Reader) Close() error {
	r.dec.Close()
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// Next returns the next record, or io.EOF at the end of the recording —
// whether it was closed, unfinished or torn (Status says which). Any other
// error means the file is corrupt before its end.
func (r *Reader) Next() (*Record, error) {
	for r.left == 0 {
		if r.done {
			return nil, io.EOF
		}
		if err := r.nextBlock(); err != nil {
			return nil, err
		}
	}
	rec, err := r.block.record()
	if err != nil {
		return nil, err
	}
	r.left--
	r.status.Records++
	return rec, nil
}

// nextBlock reads the next frame: a data block (loaded into r.block), the
// end marker, or the file's end (clean or torn).
func (r *Reader) nextBlock() error {
	hdr := make([]byte, blockHeaderLen)
	n, err := io.ReadFull(r.br, hdr)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return r.finish(0, fmt.Errorf("%w after %d blocks", ErrUnfinished, r.status.Blocks))
	case err != nil:
		return r.torn(int64(n), err)
	}
	kind, codec := hdr[0], hdr[1]
	plen := binary.BigEndian.Uint32(hdr[2:])
	records := binary.BigEndian.Uint32(hdr[6:])
	rawLen := binary.BigEndian.Uint32(hdr[10:])
	if (kind != kindBlock && kind != kindEnd) || plen > maxPayload || rawLen > maxPayload {
		return r.badFrame(int64(n), fmt.Sprintf("bad block header (kind %q, %d bytes)", kind, plen))
	}
	payload := make([]byte, plen)
	if m, err := io.ReadFull(r.br, payload); err != nil {
		return r.torn(int64(n+m), err)
	}
	crc := crc32.Update(crc32.Checksum(hdr[:14], castagnoli), castagnoli, payload)
	if crc != binary.BigEndian.Uint32(hdr[14:]) {
		return r.badFrame(int64(n)+int64(plen), "block checksum mismatch")
	}
	raw, err := r.decompress(codec, payload, rawLen)
	if err != nil {
		return err
	}
	r.status.Bytes += int64(n) + int64(plen)
	if kind == kindEnd {
		r.status.Complete = true
		if err := json.Unmarshal(raw, &r.status.Trailer); err != nil {
			return fmt.Errorf("%w: end marker: %v", ErrCorrupt, err)
		}
		r.done = true
		return nil
	}
	r.status.Blocks++
	r.status.RawBytes += int64(len(raw))
	r.block = recordDecoder{b: raw}
	r.left = int(records)
	return nil
}

func (r *Reader) decompress(codec byte, payload []byte, rawLen uint32) ([]byte, error) {
	switch codec {
	case codecNone:
		return payload, nil
	case codecZstd:
		raw, err := r.dec.DecodeAll(payload, make([]byte, 0, rawLen))
		if err != nil {
			return nil, fmt.Errorf("%w: block %d: %v", ErrCorrupt, r.status.Blocks+1, err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("%w: block codec %d", ErrUnsupportedFormat, codec)
}

// badFrame handles a frame that fails its checks: at the very end of the file
// it is a torn tail (a write cut short, or a crash that extended the file with
// garbage), with data after it the file is corrupt.
//
// A tail of zero bytes after a frame also counts as torn: a file system
// may extend a file with zeros when the machine crashes mid-write.
func (r *Reader) badFrame(read int64, what string) error {
	var rest zeroCounter
	io.Copy(&rest, r.br)
	if rest.nonZero == 0 {
		n := read + rest.n
		return r.finish(n, fmt.Errorf("%w: %s in the last %d bytes", ErrTornTail, what, n))
	}
	return fmt.Errorf("%w: %s at byte %d, followed by %d more bytes", ErrCorrupt, what, r.status.Bytes, rest.n)
}

// zeroCounter counts the bytes written to it, and those that are not zero.
type zeroCounter struct{ n, nonZero int64 }

func (z *zeroCounter) Write(p []byte) (int, error) {
	z.n += int64(len(p))
	for _, b := range p {
		if b != 0 {
			z.nonZero++
		}
	}
	return len(p), nil
}

func (r *Reader) torn(read int64, err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("replay: reading: %w", err)
	}
	return r.finish(read, fmt.Errorf("%w: last %d bytes are an incomplete block (%v)", ErrTornTail, read, err))
}

func (r *Reader) finish(tornBytes int64, problem error) error {
	r.status.TornBytes = tornBytes
	r.status.Problem = problem
	r.done = true
	return nil
}
