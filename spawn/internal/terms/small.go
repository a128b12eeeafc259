package terms

import (
	"math/bits"
	"slices"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/termq"
)

// buildSmall is Build for an increment of a few comments whose terms were
// extracted (b.small): instead of counting terms in maps, it merges the
// comments' terms, each comment's sorted by text once per item, and reads
// the counts off the merge. It builds exactly what counting them would.
func (b *Builder) buildSmall() *api.IncrementAnalytics {
	sgs := b.small
	if len(sgs) == 1 {
		return buildOne(sgs[0])
	}
	out := &api.IncrementAnalytics{Minutes: make([]api.MinuteActivity, 0, 1)}
	for i, sg := range sgs {
		at := sg.at.Truncate(time.Minute)
		if slices.ContainsFunc(out.Minutes, func(m api.MinuteActivity) bool { return m.At.Equal(at) }) {
			continue
		}
		ma := api.MinuteActivity{At: at}
		var authors *hyperloglog.Sketch
		for _, o := range sgs[i:] { // in the order Add would count them
			if !o.at.Truncate(time.Minute).Equal(at) {
				continue
			}
			ma.Comments++
			if o.author != "" {
				if authors == nil {
					authors, _ = hyperloglog.NewSketch(SketchPrecision, true)
				}
				authors.Insert([]byte(o.author))
			}
		}
		if authors != nil {
			ma.Authors, _ = authors.MarshalBinary()
		}
		out.Minutes = append(out.Minutes, ma)
	}
	slices.SortFunc(out.Minutes, func(a, b api.MinuteActivity) int { return a.At.Compare(b.At) })

	top := b.top[:0]
	for i, sg := range sgs {
		at := sg.at.Truncate(time.Hour)
		if slices.ContainsFunc(out.Terms, func(h api.HourTerms) bool { return h.At.Equal(at) }) {
			continue
		}
		lists := b.lists[:0]
		for _, o := range sgs[i:] {
			if o.at.Truncate(time.Hour).Equal(at) {
				lists = append(lists, sortedList{o.set.all, o.set.sort().byText})
			}
		}
		// Counts in order of the terms' text; the best are the most
		// counted, of equal counts the smaller term (termq.Compare).
		ents, most := b.ents[:0], 0
		merge(lists, b.pos[:len(lists)], func(term string, in uint32) {
			n := bits.OnesCount32(in)
			most = max(most, n)
			ents = append(ents, entry{term, n})
		})
		ht := api.HourTerms{At: at}
		if len(ents) > 0 {
			ht.Terms = make([]api.TermCount, 0, min(len(ents), TopTermsPerIncrement))
		}
		for n := most; n > 0; n-- {
			for _, e := range ents {
				if e.n != n {
					continue
				}
				if len(ht.Terms) < TopTermsPerIncrement {
					ht.Terms = append(ht.Terms, api.TermCount{Term: e.term, Count: int64(n)})
				} else {
					ht.Other += int64(n)
				}
			}
		}
		clear(ents)
		b.ents = ents[:0]
		clear(lists)
		b.lists = lists[:0]
		if len(ht.Terms) > 0 || ht.Other > 0 {
			out.Terms = append(out.Terms, ht)
		}
	}
	slices.SortFunc(out.Terms, func(a, b api.HourTerms) int { return a.At.Compare(b.At) })

	// Candidates: a comment sights a hashtag or phrase unless it contains
	// a query term the comment matched; scores add up in comment order.
	lists := b.lists[:0]
	for _, sg := range sgs {
		lists = append(lists, sortedList{sg.set.all, sg.set.sort().cands})
	}
	merge(lists, b.pos[:len(lists)], func(term string, in uint32) {
		it := termq.Item{Term: term}
		for j, sg := range sgs {
			if in&(1<<j) == 0 || len(sg.matched) > 0 && matched(sg.matched, term) {
				continue
			}
			it.Score += sg.score
			it.Count++
		}
		if it.Count > 0 {
			top, _ = best(top, CandidatesPerIncrement, it)
		}
	})
	clear(lists)
	b.lists = lists[:0]
	if len(top) > 0 {
		sortBest(top)
		out.Candidates = make([]api.Suggestion, len(top))
		for i, it := range top {
			out.Candidates[i] = api.Suggestion{Term: it.Term, Score: it.Score, Count: it.Count}
		}
	}
	clear(top)
	b.top = top[:0]
	return out
}

// entry is a term and how many comments of an hour hold it.
type entry struct {
	term string
	n    int
}

// merge calls f with each term of lists, each sorted by text without
// duplicates, in order of text, and the lists holding it (bit j for
// lists[j]). pos is the lists' positions, as many as lists, at most 32.
func merge(lists []sortedList, pos []int, f func(term string, in uint32)) {
	if len(lists) == 1 {
		l := lists[0]
		for _, sp := range l.spans {
			f(l.all[sp.start:sp.end], 1)
		}
		return
	}
	clear(pos)
	for {
		least, found := "", false
		for j, l := range lists {
			if pos[j] < len(l.spans) {
				if t := l.text(pos[j]); !found || t < least {
					least, found = t, true
				}
			}
		}
		if !found {
			return
		}
		var in uint32
		for j, l := range lists {
			if pos[j] < len(l.spans) && l.text(pos[j]) == least {
				in |= 1 << j
				pos[j]++
			}
		}
		f(least, in)
	}
}

// sortedList is a set's terms, or candidates, in order of their text.
type sortedList struct {
	all   string
	spans []span
}

// text is the text of the i-th term.
func (l sortedList) text(i int) string { return l.all[l.spans[i].start:l.spans[i].end] }

// buildOne is buildSmall for an increment of one comment, most increments
// of a spawn with many subscribers: each of its terms counts once, so the
// best are the first by text, and so are its candidates, all of one score.
func buildOne(sg sighting) *api.IncrementAnalytics {
	set := sg.set
	sorted := set.sort()
	one := &struct { // one allocation for the analytics and its minute and hour
		a api.IncrementAnalytics
		m [1]api.MinuteActivity
		h [1]api.HourTerms
	}{}
	out := &one.a
	one.m[0] = api.MinuteActivity{At: sg.at.Truncate(time.Minute), Comments: 1, Authors: set.authors(sg.author)}
	out.Minutes = one.m[:]
	if n := len(sorted.byText); n > 0 {
		k := min(n, TopTermsPerIncrement)
		one.h[0] = api.HourTerms{At: sg.at.Truncate(time.Hour), Terms: make([]api.TermCount, k), Other: int64(n - k)}
		for i, sp := range sorted.byText[:k] {
			one.h[0].Terms[i] = api.TermCount{Term: set.textOf(sp), Count: 1}
		}
		out.Terms = one.h[:]
	}
	for _, sp := range sorted.cands {
		if len(out.Candidates) == CandidatesPerIncrement {
			break
		}
		term := set.textOf(sp)
		if len(sg.matched) > 0 && matched(sg.matched, term) {
			continue
		}
		if out.Candidates == nil {
			out.Candidates = make([]api.Suggestion, 0, min(len(sorted.cands), CandidatesPerIncrement))
		}
		out.Candidates = append(out.Candidates, api.Suggestion{Term: term, Score: sg.score, Count: 1})
	}
	return out
}
