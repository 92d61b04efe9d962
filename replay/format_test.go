package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testRecords returns n varied records: keys over `keys` campaigns, a nil
// key every 7th, a tombstone every 11th, headers on some.
func testRecords(n, keys int, start time.Time, every time.Duration) []*Record {
	out := make([]*Record, n)
	for i := range out {
		r := &Record{
			Timestamp: start.Add(time.Duration(i) * every),
			Key:       fmt.Appendf(nil, "camp-%d", i%keys),
			Value:     fmt.Appendf(nil, `{"v":1,"id":"e%d","campaign":"camp-%d","advertiser":"adv-%d","price_micros":%d}`, i, i%keys, i%keys%5, 1000+i),
			Partition: int32(i % 3),
			Offset:    int64(i / 3),
		}
		if i%7 == 0 {
			r.Key = nil
		}
		if i%11 == 0 {
			r.Value = nil
		}
		if i%2 == 0 {
			r.Headers = []Header{{Key: "source", Value: []byte("ads-1")}, {Key: "empty", Value: []byte{}}}
		}
		out[i] = r
	}
	return out
}

func writeFile(t *testing.T, path string, recs []*Record, opts ...WriterOption) *Writer {
	t.Helper()
	w, err := Create(path, Meta{Topic: "ad-events", Partitions: 3, RecordedAt: time.Now()}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func readAll(t *testing.T, path string) ([]*Record, Status) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Status()
		}
		if err != nil {
			t.Fatalf("reading record %d: %v", len(out), err)
		}
		out = append(out, rec)
	}
}

func sameRecord(a, b *Record) error {
	switch {
	case !a.Timestamp.Equal(b.Timestamp):
		return fmt.Errorf("timestamp %v != %v", a.Timestamp, b.Timestamp)
	case (a.Key == nil) != (b.Key == nil) || !bytes.Equal(a.Key, b.Key):
		return fmt.Errorf("key %q != %q", a.Key, b.Key)
	case (a.Value == nil) != (b.Value == nil) || !bytes.Equal(a.Value, b.Value):
		return fmt.Errorf("value %q != %q", a.Value, b.Value)
	case a.Partition != b.Partition || a.Offset != b.Offset:
		return fmt.Errorf("position %d/%d != %d/%d", a.Partition, a.Offset, b.Partition, b.Offset)
	case len(a.Headers) != len(b.Headers):
		return fmt.Errorf("%d headers != %d", len(a.Headers), len(b.Headers))
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return fmt.Errorf("header %d differs", i)
		}
	}
	return nil
}

func TestFormatRoundTripKeepsEveryField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.hpr")
	recs := testRecords(5000, 50, time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC), 3*time.Millisecond)
	w := writeFile(t, path, recs, WithBlockBytes(16<<10))
	if err := w.Close(StoppedDuration); err != nil {
		t.Fatal(err)
	}
	got, st := readAll(t, path)
	if len(got) != len(recs) {
		t.Fatalf("read %d records, wrote %d", len(got), len(recs))
	}
	for i := range recs {
		if err := sameRecord(got[i], recs[i]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if !st.Complete || st.Problem != nil || st.Trailer.Records != 5000 || st.Trailer.Stopped != StoppedDuration {
		t.Fatalf("status %+v, want complete with 5000 records stopped by duration", st)
	}
	if st.Blocks < 10 {
		t.Fatalf("%d blocks: 16 KiB blocks were not cut", st.Blocks)
	}
	if st.Bytes >= st.RawBytes {
		t.Fatalf("file %d bytes is not smaller than raw %d: not compressed", st.Bytes, st.RawBytes)
	}
}

// An interrupted recording stays readable: every block the recorder wrote
// before it was killed reads back, and the reader reports how the file ends.
func TestInterruptedRecordingStaysReadable(t *testing.T) {
	recs := testRecords(3000, 20, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)
	dir := t.TempDir()

	// The recorder stopped without closing: complete blocks, no end marker.
	unfinished := filepath.Join(dir, "unfinished.hpr")
	w := writeFile(t, unfinished, recs[:1000], WithBlockBytes(8<<10))
	if err := w.Abandon(); err != nil {
		t.Fatal(err)
	}
	got, st := readAll(t, unfinished)
	if len(got) != 1000 || st.Complete || !errors.Is(st.Problem, ErrUnfinished) {
		t.Fatalf("unfinished: read %d, status %+v; want 1000 records and ErrUnfinished", len(got), st)
	}

	// Killed in the middle of writing a block: cut the file at every byte of
	// its last block; every earlier block must read, then a clean stop.
	full := filepath.Join(dir, "full.hpr")
	w = writeFile(t, full, recs, WithBlockBytes(8<<10))
	if err := w.Close(StoppedDuration); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	_, fullSt := readAll(t, full)
	blockEnds := blockBoundaries(t, data)
	lastData := blockEnds[len(blockEnds)-2] // end of the last data block; then the end marker
	prevData := blockEnds[len(blockEnds)-3]
	for _, cut := range []int{prevData + 1, prevData + blockHeaderLen - 1, prevData + blockHeaderLen + 5, lastData - 1} {
		torn := filepath.Join(dir, fmt.Sprintf("torn-%d.hpr", cut))
		if err := os.WriteFile(torn, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		got, st := readAll(t, torn)
		want := fullSt.Records - lastBlockRecords(t, data, prevData)
		if int64(len(got)) != want || !errors.Is(st.Problem, ErrTornTail) || st.TornBytes != int64(cut-prevData) {
			t.Fatalf("cut at %d: read %d records (want %d), status %+v", cut, len(got), want, st)
		}
		for i := range got {
			if err := sameRecord(got[i], recs[i]); err != nil {
				t.Fatalf("cut at %d, record %d: %v", cut, i, err)
			}
		}
	}

	// A crash that left garbage (zeros) after the last complete block.
	garbage := filepath.Join(dir, "garbage.hpr")
	if err := os.WriteFile(garbage, append(bytes.Clone(data[:lastData]), make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	got, st = readAll(t, garbage)
	if int64(len(got)) != fullSt.Records || !errors.Is(st.Problem, ErrTornTail) {
		t.Fatalf("garbage tail: read %d of %d, status %+v", len(got), fullSt.Records, st)
	}
}

// A damaged block in the middle is corruption, not a torn tail: the reader
// must not silently skip the rest of the file.
func TestCorruptBlockInTheMiddleIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.hpr")
	w := writeFile(t, path, testRecords(3000, 20, time.Unix(1.7e9, 0), time.Millisecond), WithBlockBytes(8<<10))
	if err := w.Close(""); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	ends := blockBoundaries(t, data)
	data[ends[1]+blockHeaderLen+3] ^= 0xff // inside the second block's payload
	os.WriteFile(path, data, 0o644)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("read to the end of a file with a corrupt block in the middle")
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			return
		}
	}
}

func TestOpenRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"empty":   nil,
		"json":    []byte(`{"v":1}` + "\n"),
		"version": append([]byte(magic), 0, 9, 0, 0, 0, 2, '{', '}', 0, 0, 0, 0),
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		_, err := Open(p)
		want := ErrNotRecording
		if name == "version" {
			want = ErrUnsupportedFormat
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
}

// blockBoundaries returns the offsets at which each frame after the header ends,
// the first entry being the end of the header.
func blockBoundaries(t *testing.T, data []byte) []int {
	t.Helper()
	metaLen := int(data[len(magic)+2])<<24 | int(data[len(magic)+3])<<16 | int(data[len(magic)+4])<<8 | int(data[len(magic)+5])
	pos := len(magic) + 6 + metaLen + 4
	ends := []int{pos}
	for pos < len(data) {
		plen := int(data[pos+2])<<24 | int(data[pos+3])<<16 | int(data[pos+4])<<8 | int(data[pos+5])
		pos += blockHeaderLen + plen
		ends = append(ends, pos)
	}
	return ends
}

func lastBlockRecords(t *testing.T, data []byte, at int) int64 {
	t.Helper()
	return int64(data[at+6])<<24 | int64(data[at+7])<<16 | int64(data[at+8])<<8 | int64(data[at+9])
}
