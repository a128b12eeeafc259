package terms

import (
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// buildOne is Build for an increment of one comment, most increments
// of a spawn with many subscribers: each of its terms counts once, so the
// best are the first by text, and so are its candidates, all of one score.
// What it holds of the comment's item is made once per item and shared:
// the whole of it when the comment's matched query terms filter none of
// the candidates.
func buildOne(sg sighting) *api.IncrementAnalytics {
	set := sg.set
	if set.filters(sg.matched) {
		return makeOne(sg, set.firstCandidates(sg.matched, sg.score))
	}
	// The same for every subscriber's comment of the item, or nearly.
	m := set.sort()
	at := sg.at.Truncate(time.Minute)
	m.mu.Lock()
	if a := m.shared; a != nil && m.sharedAt.Equal(at) && m.sharedBy == sg.author && m.sharedScore == sg.score && m.sharedMood == sg.mood {
		m.mu.Unlock()
		return a
	}
	m.mu.Unlock()
	a := makeOne(sg, set.firstCandidates(nil, sg.score))
	m.mu.Lock()
	m.shared, m.sharedAt, m.sharedBy, m.sharedScore, m.sharedMood = a, at, sg.author, sg.score, sg.mood
	m.mu.Unlock()
	return a
}

// makeOne builds the analytics of an increment of one comment, whose
// candidates are cands.
func makeOne(sg sighting, cands []api.Suggestion) *api.IncrementAnalytics {
	set := sg.set
	one := &struct { // one allocation for the analytics and its minute and hour
		a api.IncrementAnalytics
		m [1]api.MinuteActivity
		h [1]api.HourTerms
	}{}
	out := &one.a
	one.m[0] = api.MinuteActivity{At: sg.at.Truncate(time.Minute), Comments: 1, Authors: set.authors(sg.author)}
	switch sg.mood {
	case 1:
		one.m[0].Positive = 1
	case -1:
		one.m[0].Negative = 1
	}
	out.Minutes = one.m[:]
	if terms, other := set.oneTerms(); len(terms) > 0 {
		one.h[0] = api.HourTerms{At: sg.at.Truncate(time.Hour), Terms: terms, Other: other}
		out.Terms = one.h[:]
	}
	out.Candidates = cands
	return out
}

// One returns the analytics of an increment of one comment, whose terms
// are set (extracted or not; nil extracts them from the comment's text),
// fetched at now when it says no fetch time: what a Builder given only
// that comment builds. Parts of it are shared with the analytics of other
// comments made of the same item, and must not be modified.
func One(c *api.Comment, set *Set, now time.Time) *api.IncrementAnalytics {
	if set == nil {
		set = NewSet(c.Text, c.Lang)
	}
	return buildOne(sightingOf(c, set, now))
}
