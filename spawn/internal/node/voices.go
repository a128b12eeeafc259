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
// comments.
type voiceTally struct {
	authors map[voiceKey]*api.AuthorTally
	langs   map[voiceKey]int64
}

type voiceKey struct {
	at  time.Time
	key string
}

func (t *voiceTally) add(c *api.Comment, now time.Time) {
	at := fetchHour(c, now)
	if t.langs == nil {
		t.authors, t.langs = map[voiceKey]*api.AuthorTally{}, map[voiceKey]int64{}
	}
	t.langs[voiceKey{at, c.Lang}]++
	if c.Author == "" && c.AuthorID == "" {
		return
	}
	k := voiceKey{at, cmp.Or(c.AuthorID, c.Author)}
	a := t.authors[k]
	if a == nil {
		a = &api.AuthorTally{AuthorID: c.AuthorID}
		t.authors[k] = a
	}
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
	var authors []api.HourAuthors
	var langs []api.HourLangs
	hourOf := func(at time.Time) int {
		i := slices.IndexFunc(authors, func(h api.HourAuthors) bool { return h.At.Equal(at) })
		if i < 0 {
			authors = append(authors, api.HourAuthors{At: at})
			i = len(authors) - 1
		}
		return i
	}
	for k, a := range t.authors {
		i := hourOf(k.at)
		authors[i].Authors = append(authors[i].Authors, *a)
	}
	for k, n := range t.langs {
		i := slices.IndexFunc(langs, func(h api.HourLangs) bool { return h.At.Equal(k.at) })
		if i < 0 {
			langs = append(langs, api.HourLangs{At: k.at})
			i = len(langs) - 1
		}
		langs[i].Langs = append(langs[i].Langs, api.LangTally{Lang: k.key, Comments: n})
	}
	slices.SortFunc(authors, func(a, b api.HourAuthors) int { return a.At.Compare(b.At) })
	for _, h := range authors {
		slices.SortFunc(h.Authors, func(a, b api.AuthorTally) int {
			return cmp.Compare(cmp.Or(a.AuthorID, a.Author), cmp.Or(b.AuthorID, b.Author))
		})
	}
	slices.SortFunc(langs, func(a, b api.HourLangs) int { return a.At.Compare(b.At) })
	for _, h := range langs {
		slices.SortFunc(h.Langs, func(a, b api.LangTally) int { return cmp.Compare(a.Lang, b.Lang) })
	}
	return authors, langs
}
