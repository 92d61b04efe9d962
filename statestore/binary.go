package statestore

import (
	"encoding/binary"
	"errors"
	"math"
)

// The states are encoded by hand: they are read and written for every input
// record, and JSON cost a third of a stage's CPU. Every encoding starts with
// a layout version of its own, so a field can be added later.

var errShort = errors.New("statestore: state value is truncated")

type enc []byte

func (e enc) varint(v int64) enc   { return binary.AppendVarint(e, v) }
func (e enc) uvarint(v uint64) enc { return binary.AppendUvarint(e, v) }
func (e enc) str(s string) enc     { return append(e.uvarint(uint64(len(s))), s...) }
func (e enc) float(f float64) enc  { return binary.BigEndian.AppendUint64(e, math.Float64bits(f)) }
func (e enc) flag(b bool) enc {
	if b {
		return append(e, 1)
	}
	return append(e, 0)
}

type dec struct {
	b   []byte
	err error
}

func (d *dec) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = errShort
		return 0
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return f
}

func (d *dec) flag() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 {
		d.err = errShort
		return false
	}
	f := d.b[0] == 1
	d.b = d.b[1:]
	return f
}

// count reads a length, bounded by the bytes left so that a corrupt value
// cannot make the decoder allocate without limit.
func (d *dec) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errShort
		return 0
	}
	return int(n)
}

const windowsLayout, campaignLayout = 1, 1

// MarshalBinary encodes the aggregator state.
func (w *Windows) MarshalBinary() ([]byte, error) {
	return w.AppendBinary(make([]byte, 0, w.sizeHint()))
}

func (w *Windows) sizeHint() int { return 48 + 24*len(w.Panes) }

// AppendBinary appends the encoding of the aggregator state to b.
func (w *Windows) AppendBinary(b []byte) ([]byte, error) {
	e := enc(b).uvarint(windowsLayout).
		varint(w.ClosedThroughMs).varint(w.NextOffset).varint(w.LatenessMs).varint(w.SizeMs).varint(w.Late).
		uvarint(uint64(len(w.Panes)))
	for _, p := range w.Panes {
		e = e.varint(p.StartMs).str(p.Advertiser).varint(p.Micros).varint(p.Events)
	}
	return e, nil
}

// UnmarshalBinary decodes the aggregator state.
func (w *Windows) UnmarshalBinary(b []byte) error {
	d := &dec{b: b}
	if d.uvarint() != windowsLayout && d.err == nil {
		return errors.New("statestore: unknown Windows layout")
	}
	w.ClosedThroughMs, w.NextOffset, w.LatenessMs, w.SizeMs, w.Late = d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
	n := d.count()
	w.Panes = nil
	if n > 0 {
		w.Panes = make([]Pane, n)
	}
	for i := range w.Panes {
		w.Panes[i] = Pane{StartMs: d.varint(), Advertiser: d.str(), Micros: d.varint(), Events: d.varint()}
	}
	return d.err
}

// MarshalBinary encodes a service's campaign state.
func (c *Campaign) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, c.sizeHint()))
}

func (c *Campaign) sizeHint() int { return 96 }

// AppendBinary appends the encoding of a service's campaign state to b.
func (c *Campaign) AppendBinary(b []byte) ([]byte, error) {
	l := &c.Ledger
	e := enc(b).uvarint(campaignLayout).
		str(l.Day).varint(l.SpentToday).varint(l.SpentLifetime).varint(l.Through).
		varint(l.Applied).varint(l.Duplicates).uvarint(uint64(len(l.Late)))
	for _, id := range l.Late {
		e = e.str(id)
	}
	e = e.str(c.Status).varint(c.NextDayMs).flag(c.Budget != nil)
	if b := c.Budget; b != nil {
		e = e.str(b.Advertiser).varint(b.DailyMicros).varint(b.LifetimeMicros).str(b.Timezone)
	}
	e = e.flag(c.Pacer != nil)
	if p := c.Pacer; p != nil {
		e = e.float(p.Rate).float(p.DemandPerSec)
	}
	e = e.flag(c.Bidder != nil)
	if b := c.Bidder; b != nil {
		e = e.float(b.Multiplier).varint(b.LastMs)
	}
	return e, nil
}

// UnmarshalBinary decodes a service's campaign state.
func (c *Campaign) UnmarshalBinary(b []byte) error {
	d := &dec{b: b}
	if d.uvarint() != campaignLayout && d.err == nil {
		return errors.New("statestore: unknown Campaign layout")
	}
	l := &c.Ledger
	l.Day, l.SpentToday, l.SpentLifetime, l.Through = d.str(), d.varint(), d.varint(), d.varint()
	l.Applied, l.Duplicates = d.varint(), d.varint()
	l.Late = nil
	if n := d.count(); n > 0 {
		l.Late = make([]string, n)
		for i := range l.Late {
			l.Late[i] = d.str()
		}
	}
	c.Status, c.NextDayMs = d.str(), d.varint()
	c.Budget, c.Pacer, c.Bidder = nil, nil, nil
	if d.flag() {
		c.Budget = &BudgetRow{Advertiser: d.str(), DailyMicros: d.varint(), LifetimeMicros: d.varint(), Timezone: d.str()}
	}
	if d.flag() {
		c.Pacer = &Pacer{Rate: d.float(), DemandPerSec: d.float()}
	}
	if d.flag() {
		c.Bidder = &Bidder{Multiplier: d.float(), LastMs: d.varint()}
	}
	return d.err
}
