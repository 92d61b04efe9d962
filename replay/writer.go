package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"
)

// DefaultBlockBytes is the raw size at which the writer closes a block.
const DefaultBlockBytes = 256 << 10

// Writer writes a recording. It is not safe for concurrent use. Records are
// buffered into a block until the block reaches its size or Flush is called;
// each block reaches the underlying writer in one Write, so whatever happens
// to the process, the file holds every flushed block intact.
type Writer struct {
	w          io.Writer
	closer     io.Closer // closed by Close when the Writer opened the file
	enc        *zstd.Encoder
	blockBytes int

	raw     []byte // records of the open block
	pending int    // records in raw
	frame   []byte // reused output buffer

	trailer Trailer
	closed  bool
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithBlockBytes sets the raw size at which a block is closed (default 256 KiB).
func WithBlockBytes(n int) WriterOption { return func(w *Writer) { w.blockBytes = max(n, 1) } }

// NewWriter writes the file header with meta to w and returns a Writer.
func NewWriter(w io.Writer, meta Meta, opts ...WriterOption) (*Writer, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, fmt.Errorf("replay: zstd: %w", err)
	}
	wr := &Writer{w: w, enc: enc, blockBytes: DefaultBlockBytes}
	for _, o := range opts {
		o(wr)
	}
	hdr, err := encodeHeader(meta)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("replay: writing header: %w", err)
	}
	return wr, nil
}

// Create creates (or truncates) the file at path and returns a Writer whose
// Close also closes the file.
func Create(path string, meta Meta, opts ...WriterOption) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	w, err := NewWriter(f, meta, opts...)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.closer = f
	return w, nil
}

// Write appends r to the open block, and writes the block out when it is full.
func (w *Writer) Write(r *Record) error {
	if w.closed {
		return fmt.Errorf("replay: write after close")
	}
	w.raw = appendRecord(w.raw, r)
	w.pending++
	if w.trailer.Records == 0 && w.pending == 1 {
		w.trailer.FirstTS = r.Timestamp.UTC()
	}
	w.trailer.LastTS = r.Timestamp.UTC()
	if len(w.raw) >= w.blockBytes {
		return w.Flush()
	}
	return nil
}

// Records returns the number of records written so far (flushed or not).
func (w *Writer) Records() int64 { return w.trailer.Records + int64(w.pending) }

// Flush writes the open block, if it holds any record.
func (w *Writer) Flush() error {
	if w.pending == 0 {
		return nil
	}
	payload := w.enc.EncodeAll(w.raw, nil)
	w.frame = appendBlock(w.frame[:0], kindBlock, codecZstd, w.pending, len(w.raw), payload)
	if _, err := w.w.Write(w.frame); err != nil {
		return fmt.Errorf("replay: writing block: %w", err)
	}
	w.trailer.Records += int64(w.pending)
	w.trailer.Blocks++
	w.raw, w.pending = w.raw[:0], 0
	return nil
}

// Close flushes the open block and writes the end marker; stopped says why
// the recording ended (see Trailer.Stopped). It closes the file if Create
// opened it.
func (w *Writer) Close(stopped string) error {
	if w.closed {
		return nil
	}
	err := w.Flush()
	if err == nil {
		w.trailer.ClosedAt = time.Now().UTC()
		w.trailer.Stopped = stopped
		tj, _ := json.Marshal(w.trailer)
		w.frame = appendBlock(w.frame[:0], kindEnd, codecNone, 0, len(tj), tj)
		if _, werr := w.w.Write(w.frame); werr != nil {
			err = fmt.Errorf("replay: writing end marker: %w", werr)
		}
	}
	w.closed = true
	w.enc.Close()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("replay: %w", cerr)
		}
	}
	return err
}

// Abandon closes the underlying file without the end marker, flushing what
// is buffered: the file reads as unfinished. It is what a crash leaves,
// minus the torn block; tests and the recorder's error path use it.
func (w *Writer) Abandon() error {
	if w.closed {
		return nil
	}
	err := w.Flush()
	w.closed = true
	w.enc.Close()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
