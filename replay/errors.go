package replay

import "errors"

var (
	// ErrNotRecording is returned when a file does not start with the
	// recording magic: it is not a hotpair recording.
	ErrNotRecording = errors.New("replay: not a hotpair recording (bad magic)")
	// ErrUnsupportedFormat is returned for a recording whose format version or
	// block codec this build does not read.
	ErrUnsupportedFormat = errors.New("replay: unsupported recording format")
	// ErrCorrupt is returned when a block inside a recording fails its checksum
	// or does not decode, and more data follows it (a torn tail is not an error).
	ErrCorrupt = errors.New("replay: corrupt recording")
	// ErrTornTail describes (through Reader.Status) a recording whose last
	// block was cut short, as a killed recorder leaves it; every complete block
	// before it was read.
	ErrTornTail = errors.New("replay: recording ends in a torn block")
	// ErrUnfinished describes (through Reader.Status) a recording that ends
	// after a complete block but without the end marker: the recorder stopped
	// without closing the file.
	ErrUnfinished = errors.New("replay: recording was not closed (no end marker)")
	// ErrNoTopic is returned when a topic to record from or play into does not exist.
	ErrNoTopic = errors.New("replay: topic does not exist")
	// ErrBadTarget is returned for a target that is not BROKERS/TOPIC.
	ErrBadTarget = errors.New("replay: bad target")
	// ErrBadFilter is returned for a filter expression that does not parse.
	ErrBadFilter = errors.New("replay: bad filter")
	// ErrDelivery is returned by Player.Run when some records could not be
	// delivered to some target; the report counts them per target.
	ErrDelivery = errors.New("replay: records failed delivery")
	// ErrRegression is returned by Verify when the candidate differs from the
	// baseline beyond the thresholds.
	ErrRegression = errors.New("replay: candidate regressed against baseline")
)
