package node

import (
	"cmp"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Voices: every increment's analytics also say who wrote its comments and
// in which language, per hour of their fetch time, in full (the hub sums
// them into exact top authors and language breakdowns). An increment's
// comments are few, so these are small.

// withVoices gives each increment of out the authors and languages of its
// fresh comments in batch. An analytics value of out may be shared with
// other increments (terms.One), so each is copied before it is added to.
func withVoices(batch []pending, isFresh func(int) bool, out map[uint64]*api.IncrementAnalytics, now time.Time) {
	var many map[uint64]*voiceTally // increments of several comments
	runs := make(map[uint64]int, len(out))
	for k := range batch {
		if isFresh(k) {
			runs[batch[k].comment.IncSeq]++
		}
	}
	for k := range batch {
		if !isFresh(k) {
			continue
		}
		c := &batch[k].comment
		a := out[c.IncSeq]
		if a == nil {
			continue
		}
		if runs[c.IncSeq] == 1 {
			out[c.IncSeq] = oneVoice(a, c, now)
			continue
		}
		if many == nil {
			many = map[uint64]*voiceTally{}
		}
		t := many[c.IncSeq]
		if t == nil {
			t = &voiceTally{}
			many[c.IncSeq] = t
		}
		t.add(c, now)
	}
	for seq, t := range many {
		cp := *out[seq]
		cp.Authors, cp.Langs = t.build()
		out[seq] = &cp
	}
}

// fetchHour is the hour a comment's analytics count it in: its fetch
// time's, now's when it has none (as the terms builder does).
func fetchHour(c *api.Comment, now time.Time) time.Time {
	at := c.FetchedAt
	if at.IsZero() {
		at = now
	}
	return at.UTC().Truncate(time.Hour)
}

// oneVoice is a copy of a, an increment of the one comment c, with c's
// author and language, in one allocation.
func oneVoice(a *api.IncrementAnalytics, c *api.Comment, now time.Time) *api.IncrementAnalytics {
	one := &struct {
		a  api.IncrementAnalytics
		h  [1]api.HourAuthors
		t  [1]api.AuthorTally
		l  [1]api.HourLangs
		lt [1]api.LangTally
	}{a: *a}
	at := fetchHour(c, now)
	if c.Author != "" || c.AuthorID != "" {
		reposts, likes, _ := c.Engagement.Counts()
		one.t[0] = api.AuthorTally{Author: c.Author, AuthorID: c.AuthorID, Comments: 1, Reposts: reposts, Likes: likes}
		one.h[0] = api.HourAuthors{At: at, Authors: one.t[:]}
		one.a.Authors = one.h[:]
	}
	one.lt[0] = api.LangTally{Lang: c.Lang, Comments: 1}
	one.l[0] = api.HourLangs{At: at, Langs: one.lt[:]}
	one.a.Langs = one.l[:]
	return &one.a
}

// voiceTally gathers the authors and languages of an increment of several
// comments, per hour of their fetch time (a batch's comments are fetched
// within minutes: one hour, at most two).
type voiceTally struct {
	hours []*hourVoices
}

// hourVoices is one hour of a voiceTally: its authors by key (their id,
// else their name), in the order first seen, and its languages.
type hourVoices struct {
	at      time.Time
	index   map[string]int32 // author key → authors
	authors []api.AuthorTally
	langs   []api.LangTally
}

func (t *voiceTally) hour(at time.Time) *hourVoices {
	for _, h := range t.hours {
		if h.at.Equal(at) {
			return h
		}
	}
	h := &hourVoices{at: at, index: map[string]int32{}}
	t.hours = append(t.hours, h)
	return h
}

func (t *voiceTally) add(c *api.Comment, now time.Time) {
	h := t.hour(fetchHour(c, now))
	found := false
	for i := range h.langs {
		if h.langs[i].Lang == c.Lang {
			h.langs[i].Comments++
			found = true
			break
		}
	}
	if !found {
		h.langs = append(h.langs, api.LangTally{Lang: c.Lang, Comments: 1})
	}
	if c.Author == "" && c.AuthorID == "" {
		return
	}
	key := cmp.Or(c.AuthorID, c.Author)
	i, ok := h.index[key]
	if !ok {
		i = int32(len(h.authors))
		h.authors = append(h.authors, api.AuthorTally{AuthorID: c.AuthorID})
		h.index[key] = i
	}
	a := &h.authors[i]
	if c.Author != "" {
		a.Author = c.Author
	}
	reposts, likes, _ := c.Engagement.Counts()
	a.Comments++
	a.Reposts += reposts
	a.Likes += likes
}

// build returns the tallies per hour, hours and their entries in order.
func (t *voiceTally) build() ([]api.HourAuthors, []api.HourLangs) {
	slices.SortFunc(t.hours, func(a, b *hourVoices) int { return a.at.Compare(b.at) })
	var authors []api.HourAuthors
	langs := make([]api.HourLangs, 0, len(t.hours))
	for _, h := range t.hours {
		if len(h.authors) > 0 {
			slices.SortFunc(h.authors, func(a, b api.AuthorTally) int {
				return cmp.Compare(cmp.Or(a.AuthorID, a.Author), cmp.Or(b.AuthorID, b.Author))
			})
			authors = append(authors, api.HourAuthors{At: h.at, Authors: h.authors})
		}
		slices.SortFunc(h.langs, func(a, b api.LangTally) int { return cmp.Compare(a.Lang, b.Lang) })
		langs = append(langs, api.HourLangs{At: h.at, Langs: h.langs})
	}
	return authors, langs
}
