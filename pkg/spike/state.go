package spike

import (
	"encoding/binary"
	"math"
	"time"
)

// The state the hub keeps in SQL: what the detector cannot rebuild from
// the hour and minute counts analytics keep (a week of hours, a day of
// minutes) — its records and the totals of the days of its memory. Little
// endian:
//
//	version  byte (stateVersion)
//	spans    byte
//	measures byte
//	memory   uint16 (days)
//	first    int64 (Unix seconds: the earliest step or hour known)
//	last     int64 (Unix seconds: the last step the state covers)
//	then memory+1 day slots: day int32, sum float32, steps float32,
//	  spans×measures maxima float32 (−Inf for none)
const stateVersion = 2

const (
	stateHeader = 1 + 1 + 1 + 2 + 8 + 8
)

func (d *Detector) slotBytes() int { return 4 + 4 + 4 + 4*len(d.spans)*measures }

// StateSize is the size of State's answer for a sensitivity's detector.
func (d *Detector) StateSize() int { return stateHeader + len(d.slots)*d.slotBytes() }

// State is what the detector knows that the hub's counts cannot rebuild,
// for the hub to keep in SQL. A new leader seeds the hours, restores the
// state, then replays the last hours of minutes: records are maxima, so
// the steps the state already holds change nothing.
func (d *Detector) State() []byte {
	out := make([]byte, d.StateSize())
	out[0], out[1], out[2] = stateVersion, byte(len(d.spans)), measures
	binary.LittleEndian.PutUint16(out[3:], uint16(len(d.slots)-1))
	var first, last int64
	if !d.first.IsZero() {
		first = d.first.Unix()
	}
	if l := later(d.last, d.covered); !l.IsZero() {
		last = l.Unix()
	}
	binary.LittleEndian.PutUint64(out[5:], uint64(first))
	binary.LittleEndian.PutUint64(out[13:], uint64(last))
	at := stateHeader
	for _, s := range d.slots {
		day := int32(math.MinInt32)
		if s.day != noDay {
			day = int32(s.day)
		}
		binary.LittleEndian.PutUint32(out[at:], uint32(day))
		binary.LittleEndian.PutUint32(out[at+4:], math.Float32bits(float32(s.sum)))
		binary.LittleEndian.PutUint32(out[at+8:], math.Float32bits(float32(s.steps)))
		for i, m := range s.max {
			binary.LittleEndian.PutUint32(out[at+12+4*i:], math.Float32bits(float32(m)))
		}
		at += d.slotBytes()
	}
	return out
}

// SetState restores what State returned for a detector of the same
// sensitivity and step; anything else (a state of another shape, of an
// earlier version, damaged) is ignored and changes nothing. Call it after
// seeding the hours and before replaying steps.
func (d *Detector) SetState(b []byte) {
	if len(b) != d.StateSize() || b[0] != stateVersion || int(b[1]) != len(d.spans) || b[2] != measures ||
		int(binary.LittleEndian.Uint16(b[3:])) != len(d.slots)-1 {
		return
	}
	first := int64(binary.LittleEndian.Uint64(b[5:]))
	last := int64(binary.LittleEndian.Uint64(b[13:]))
	if first < 0 || last < first {
		return
	}
	type slot struct {
		day        int64
		sum, steps float64
		max        []float64
	}
	var slots []slot
	at := stateHeader
	for range d.slots {
		day := int64(int32(binary.LittleEndian.Uint32(b[at:])))
		s := slot{day: day, sum: float64(math.Float32frombits(binary.LittleEndian.Uint32(b[at+4:]))),
			steps: float64(math.Float32frombits(binary.LittleEndian.Uint32(b[at+8:])))}
		if !finite(s.sum) || !finite(s.steps) || s.sum < 0 || s.steps < 0 {
			return
		}
		for i := range len(d.spans) * measures {
			m := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[at+12+4*i:])))
			if math.IsNaN(m) || math.IsInf(m, 1) {
				return
			}
			s.max = append(s.max, m)
		}
		at += d.slotBytes()
		if day != math.MinInt32 {
			slots = append(slots, s)
		}
	}
	for _, s := range slots {
		ds := d.slot(s.day)
		if ds == nil {
			continue
		}
		ds.sum, ds.steps = s.sum, s.steps
		for i, m := range s.max {
			ds.max[i] = math.Max(ds.max[i], m)
		}
	}
	d.prevFor = noDay
	if first > 0 {
		if f := time.Unix(first, 0).UTC(); d.first.IsZero() || f.Before(d.first) {
			d.first = f
		}
	}
	if last > 0 {
		d.covered = time.Unix(last, 0).UTC()
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
