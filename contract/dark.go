package contract

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dark canary: the shared vocabulary of dark pipelines, the dispatcher that
// feeds them a copy of live traffic, and the comparator that judges them
// (docs/dark.md).

// DarkStrategy is how a dispatcher sizes the copy it sends to a dark target.
type DarkStrategy string

const (
	// DarkRelative sends the campaigns whose hash falls under
	// multiplier × dark instances / live instances (the counts read from the
	// registry and followed live), so each dark instance carries the load of
	// one live instance.
	DarkRelative DarkStrategy = "relative"
	// DarkIdentical sends the campaigns whose hash falls under multiplier,
	// whatever the instance counts: every identical target with the same
	// multiplier receives exactly the same records.
	DarkIdentical DarkStrategy = "identical"
	// DarkConstant sends the sampled campaigns' records at a fixed rate
	// (records per second), for load tests.
	DarkConstant DarkStrategy = "constant"
)

// DarkStrategies lists the strategies, for messages.
func DarkStrategies() []string {
	return []string{string(DarkRelative), string(DarkIdentical), string(DarkConstant)}
}

var darkNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ValidDarkName reports whether name may name a dark target: lower-case
// letters, digits and dashes, at most 40, starting with a letter or digit.
// The name is part of topic names, consumer groups and znode paths.
func ValidDarkName(name string) bool { return darkNameRE.MatchString(name) }

// DarkPrefix is the prefix of every topic and consumer group of the dark
// pipelines of target name: "dark.<name>.".
func DarkPrefix(name string) string { return "dark." + name + "." }

// IsDarkTopic reports whether topic (or a consumer group) belongs to some
// dark target, that is, carries a "dark.<name>." prefix.
func IsDarkTopic(topic string) bool {
	rest, ok := strings.CutPrefix(topic, "dark.")
	if !ok {
		return false
	}
	name, _, ok := strings.Cut(rest, ".")
	return ok && ValidDarkName(name)
}

// DarkTarget is the JSON document at /dark/<name> (Paths.Dark): one dark
// target and how the dispatchers feed it. Only the operator identity may
// write it; running dispatchers apply a change within a second.
type DarkTarget struct {
	V    int    `json:"v"`
	Name string `json:"name"`
	// Source is the live side whose input is copied.
	Source   Side         `json:"source"`
	Strategy DarkStrategy `json:"strategy"`
	// Multiplier scales the sampled fraction of campaigns (relative and
	// identical). Above 1, campaigns are cloned under derived ids
	// (DarkCloneID), so the dark side carries more load than live.
	Multiplier float64 `json:"multiplier,omitempty"`
	// Rate is the records per second of a constant target.
	Rate float64 `json:"rate,omitempty"`
	// Brokers are the dark target's Kafka bootstrap addresses.
	Brokers []string `json:"brokers"`
	// Prefix is the topic prefix on the target; always DarkPrefix(Name).
	Prefix  string `json:"prefix"`
	Enabled bool   `json:"enabled"`
	// Until, if set, is when the target stops receiving by itself.
	Until     *time.Time `json:"until,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// ActiveAt reports whether dispatchers should send to the target at now.
func (d DarkTarget) ActiveAt(now time.Time) bool {
	return d.Enabled && (d.Until == nil || now.Before(*d.Until))
}

// Validate checks the document; the error names the field and the fix.
func (d DarkTarget) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidDocument, fmt.Sprintf(format, a...))
	}
	switch {
	case d.V != ZNodeVersion:
		return bad("v=%d, want %d", d.V, ZNodeVersion)
	case !ValidDarkName(d.Name):
		return bad("name=%q: use lower-case letters, digits and dashes (at most 40)", d.Name)
	case !d.Source.Valid():
		return bad("source=%q: want one of %s", d.Source, strings.Join(SideNames(), ", "))
	case d.Prefix != DarkPrefix(d.Name):
		return bad("prefix=%q: a dark target's prefix is %q", d.Prefix, DarkPrefix(d.Name))
	case len(d.Brokers) == 0:
		return bad("brokers is empty: name the dark target's Kafka bootstrap addresses")
	}
	switch d.Strategy {
	case DarkRelative, DarkIdentical:
		if !(d.Multiplier > 0) || math.IsInf(d.Multiplier, 0) || d.Multiplier > MaxDarkMultiplier {
			return bad("multiplier=%v: a %s target needs 0 < multiplier <= %d", d.Multiplier, d.Strategy, MaxDarkMultiplier)
		}
	case DarkConstant:
		if !(d.Rate > 0) || math.IsInf(d.Rate, 0) {
			return bad("rate=%v: a constant target needs a rate above 0 (records per second)", d.Rate)
		}
		if d.Multiplier < 0 || d.Multiplier > MaxDarkMultiplier || math.IsNaN(d.Multiplier) {
			return bad("multiplier=%v: want 0 (all campaigns) to %d", d.Multiplier, MaxDarkMultiplier)
		}
	default:
		return bad("strategy=%q: want one of %s", d.Strategy, strings.Join(DarkStrategies(), ", "))
	}
	return nil
}

// MaxDarkMultiplier bounds the sampled fraction: at most this many copies of
// a campaign go dark.
const MaxDarkMultiplier = 16

// DecodeDarkTarget parses and validates a dark target document.
func DecodeDarkTarget(b []byte) (DarkTarget, error) {
	var d DarkTarget
	if err := strictUnmarshal(b, &d); err != nil {
		return DarkTarget{}, err
	}
	if err := d.Validate(); err != nil {
		return DarkTarget{}, err
	}
	return d, nil
}

// DarkHash places a campaign in [0, 1): FNV-1a 64 of its id, mixed by
// splitmix64's finalizer (FNV alone leaves the top bits of similar ids
// clustered), top 53 bits. The same campaign lands on the same point in
// every run, for every target and on every host.
func DarkHash(campaign string) float64 {
	h := fnv.New64a()
	h.Write([]byte(campaign))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// DarkCopies is how many copies of campaign go dark at sampled fraction f:
// copy k (0 is the campaign itself, k ≥ 1 a clone under DarkCloneID) goes
// when DarkHash(campaign) < f − k. So a fraction below 1 picks each
// campaign with probability f, always the same ones, a larger fraction's
// sample contains a smaller one's, and f = 2.5 sends every campaign once,
// every clone 1 and half of the clones 2.
func DarkCopies(campaign string, f float64) int {
	if !(f > 0) {
		return 0
	}
	u := DarkHash(campaign)
	n := int(math.Floor(f))
	if u < f-float64(n) {
		n++
	}
	return n
}

// darkCloneSep separates a campaign id from its clone number. Campaign ids
// never contain it on live input (the dispatcher dead-letters nothing: it
// only copies).
const darkCloneSep = "~dark"

// DarkCloneID is the id of clone k (k ≥ 1) of campaign; clone 0 is the
// campaign itself.
func DarkCloneID(campaign string, k int) string {
	if k == 0 {
		return campaign
	}
	return campaign + darkCloneSep + strconv.Itoa(k)
}

// DarkCampaignOf returns the live campaign and clone number of a dark
// campaign id (k = 0 for the original).
func DarkCampaignOf(id string) (campaign string, k int) {
	i := strings.LastIndex(id, darkCloneSep)
	if i < 0 {
		return id, 0
	}
	k, err := strconv.Atoi(id[i+len(darkCloneSep):])
	if err != nil || k < 1 {
		return id, 0
	}
	return id[:i], k
}

// HeaderDarkSource is the header of every copy the dispatcher writes to a
// dark target's ad-events: which live record, and which copy of it, it
// is (DarkSource). A dispatcher that takes over live partitions (a
// restart, a rebalance) reads it back from the target, so that what the
// target already has is not copied twice.
const HeaderDarkSource = "hotpair-dark-source"

// DarkSource is where a copy on a dark target comes from: copy K (0, or a
// clone's number) of the record at Offset of Partition of a live side's
// ad-events.
type DarkSource struct {
	Side      Side
	Partition int32
	Offset    int64
	K         int
}

// AppendDarkSource appends s as the header's value,
// "<side>/<partition>/<offset>/<copy>" (readable with kcat).
func AppendDarkSource(b []byte, s DarkSource) []byte {
	b = append(b, s.Side.String()...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(s.Partition), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, s.Offset, 10)
	b = append(b, '/')
	return strconv.AppendInt(b, int64(s.K), 10)
}

// ParseDarkSource parses a HeaderDarkSource value.
func ParseDarkSource(v []byte) (DarkSource, error) {
	parts := strings.Split(string(v), "/")
	if len(parts) != 4 {
		return DarkSource{}, fmt.Errorf("contract: dark source %q: want side/partition/offset/copy", v)
	}
	side, err := ParseSide(parts[0])
	if err != nil {
		return DarkSource{}, fmt.Errorf("contract: dark source %q: %w", v, err)
	}
	p, err1 := strconv.ParseInt(parts[1], 10, 32)
	off, err2 := strconv.ParseInt(parts[2], 10, 64)
	k, err3 := strconv.Atoi(parts[3])
	if err := errors.Join(err1, err2, err3); err != nil || p < 0 || off < 0 || k < 0 || k > MaxDarkMultiplier {
		return DarkSource{}, fmt.Errorf("contract: dark source %q: partition, offset and copy must be numbers in range", v)
	}
	return DarkSource{Side: side, Partition: int32(p), Offset: off, K: k}, nil
}

// HeaderDarkRow is the header of every budget row the dispatcher writes to a
// dark target's budgets topic: why it sent it (DarkRowReason). The
// comparator needs to know a gap in a campaign's copy from a row sent again
// for another reason (docs/dark.md, "Replicas").
const HeaderDarkRow = "hotpair-dark-row"

// DarkRowReason is a HeaderDarkRow value.
type DarkRowReason string

const (
	// DarkRowSample: the campaign entered the target's sample (a new
	// target, a larger multiplier) or a dispatcher replica started. Sent
	// again unchanged, the row means nothing new: another replica may have
	// sent it already.
	DarkRowSample DarkRowReason = "sample"
	// DarkRowUpdate: the live row changed (or was deleted).
	DarkRowUpdate DarkRowReason = "update"
	// DarkRowGap: the campaign's copy had a gap just before: the target
	// was paused and resumed, or the live partition holding the campaign
	// was not copied for a while (a dispatcher restart, a crashed
	// replica whose partitions moved after the group's session timeout).
	DarkRowGap DarkRowReason = "gap"
)

// ParseDarkRowReason parses a HeaderDarkRow value.
func ParseDarkRowReason(v []byte) (DarkRowReason, error) {
	switch r := DarkRowReason(v); r {
	case DarkRowSample, DarkRowUpdate, DarkRowGap:
		return r, nil
	}
	return "", fmt.Errorf("contract: dark row reason %q: want sample, update or gap", v)
}
