package spike

import (
	"math"
	"time"
)

// dayOf numbers the UTC day of t.
func dayOf(t time.Time) int64 { return int64(math.Floor(float64(t.Unix()) / 86400)) }

// slot returns the day slot of day, emptying it if it held an older day.
func (d *Detector) slot(day int64) *daySlot {
	n := int64(len(d.slots))
	s := &d.slots[((day%n)+n)%n]
	if s.day != day {
		if s.day > day {
			return nil // a day older than the memory
		}
		s.day, s.sum, s.steps = day, 0, 0
		for i := range s.max {
			s.max[i] = math.Inf(-1)
		}
		d.prevFor = noDay
	}
	return s
}

// records returns the max of each span and measure over the memory's days
// before today; with today's own maxima the caller has the record.
func (d *Detector) records(day int64) []float64 {
	if d.prevFor == day {
		return d.prevMax
	}
	for i := range d.prevMax {
		d.prevMax[i] = math.Inf(-1)
	}
	for _, s := range d.slots {
		if s.day == noDay || s.day >= day || s.day < day-int64(d.th.Memory) {
			continue
		}
		for i, m := range s.max {
			d.prevMax[i] = math.Max(d.prevMax[i], m)
		}
	}
	d.prevFor = day
	return d.prevMax
}

// meanLevel is the mean step over the memory's days, or false when they
// hold nothing.
func (d *Detector) meanLevel(day int64) (float64, bool) {
	var sum, steps float64
	for _, s := range d.slots {
		if s.day != noDay && s.day <= day && s.day >= day-int64(d.th.Memory) {
			sum += s.sum
			steps += s.steps
		}
	}
	if steps == 0 {
		return 0, false
	}
	return sum / steps, true
}

// SeedHour records an hour of an earlier day the detector did not see
// step by step: sum over steps steps starting at hour. The hub seeds a
// week of hourly counts this way when it starts; seeded hours give the
// daily cycle, the mean level and the count records of the spans made of
// whole hours. Hours must be seeded in time order, before any step.
func (d *Detector) SeedHour(hour time.Time, sum float64, steps int) {
	if steps <= 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return
	}
	hour = hour.UTC()
	h := d.hour(hour)
	h.sum += sum
	h.n += int32(steps)
	d.medDay = noDay
	if d.first.IsZero() || hour.Before(d.first) {
		d.first = hour
	}
	day := dayOf(hour)
	s := d.slot(day)
	if s == nil {
		return
	}
	s.sum += sum
	s.steps += float64(steps)
	if time.Duration(steps)*d.step != time.Hour {
		return
	}
	if n := len(d.seeded); n > 0 && !hour.Equal(d.seeded[n-1].at.Add(time.Hour)) {
		d.seeded = d.seeded[:0]
	}
	d.seeded = append(d.seeded, seededHour{at: hour, sum: sum})
	if len(d.seeded) > 24 {
		d.seeded = d.seeded[1:]
	}
	for i, k := range d.spans {
		hours := int(time.Duration(k) * d.step / time.Hour)
		if time.Duration(k)*d.step%time.Hour != 0 || hours < 1 || hours > len(d.seeded) {
			continue
		}
		var v float64
		for _, sh := range d.seeded[len(d.seeded)-hours:] {
			v += sh.sum
		}
		m := &s.max[i*measures+measureCount]
		*m = math.Max(*m, v)
	}
}

// hour returns the statistics of the hour that holds t, creating its day.
func (d *Detector) hour(t time.Time) *hourStat {
	day := dayOf(t)
	hs := d.days[day]
	if hs == nil {
		hs = &[24]hourStat{}
		d.days[day] = hs
		for k := range d.days {
			if k < day-DefaultDays {
				delete(d.days, k)
			}
		}
	}
	return &hs[t.UTC().Hour()]
}

// seasonalHour is the median over the earlier days of the mean step of
// hour h of day, and whether enough days had it.
func (d *Detector) seasonalHour(day int64, h int) (float64, bool) {
	cached := day == d.medDay
	if cached && d.medOK[h] != 0 {
		return d.med[h], d.medOK[h] > 0
	}
	vals := d.scratch[:0]
	for k := day - DefaultDays; k < day; k++ {
		if hs := d.days[k]; hs != nil && hs[h].n > 0 {
			vals = append(vals, hs[h].sum/float64(hs[h].n))
		}
	}
	d.scratch = vals
	v, ok := 0.0, len(vals) >= minSeasonDays
	if ok {
		v = median(vals)
	}
	if cached {
		d.med[h], d.medOK[h] = v, -1
		if ok {
			d.medOK[h] = 1
		}
	}
	return v, ok
}

// seasonal is the seasonal expectation at t: the hours' medians
// interpolated linearly between the middles of the hours, so a ramp does
// not turn into steps.
func (d *Detector) seasonal(t time.Time) (float64, bool) {
	if today := dayOf(t); today != d.medDay {
		d.medDay, d.medOK = today, [24]int8{}
	}
	shifted := t.UTC().Add(-30 * time.Minute)
	h0 := shifted.Truncate(time.Hour)
	w := float64(shifted.Sub(h0)) / float64(time.Hour)
	h1 := h0.Add(time.Hour)
	a, okA := d.seasonalHour(dayOf(h0), h0.Hour())
	b, okB := d.seasonalHour(dayOf(h1), h1.Hour())
	switch {
	case okA && okB:
		return a*(1-w) + b*w, true
	case okA:
		return a, true
	case okB:
		return b, true
	}
	return 0, false
}

// expected is what the detector expects of a step at t, before seeing
// it, and the seasonal expectation (NaN when earlier days do not know
// the hour): the mean of the last hour scaled by how the same time of day
// compared with the last hour's times on earlier days, and never below
// what the same time held on earlier days.
func (d *Detector) expected(at time.Time) (expected, seasonal float64) {
	seasonal = math.NaN()
	n := min(d.filled, d.level)
	if n == 0 {
		return 0, seasonal
	}
	level := d.levelSum / float64(n)
	expected = level
	now, ok := d.seasonal(at)
	if !ok {
		return expected, seasonal
	}
	seasonal = now
	if d.seasN > 0 && d.seasSum > 0 {
		factor := now / (d.seasSum / float64(d.seasN))
		factor = math.Max(1/float64(maxCycleFactor), math.Min(maxCycleFactor, factor))
		expected = level * factor
	}
	return math.Max(expected, now), seasonal
}
