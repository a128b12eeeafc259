package terms

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/pkg/termq"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/hashtab"
)

// Bounds of one increment's analytics: the increment travels to the hub
// until acknowledged, so its size must not grow with the comments it
// counts.
const (
	// TopTermsPerIncrement is how many terms of each hour an increment
	// carries; the occurrences of the rest travel as one "other" count.
	TopTermsPerIncrement = 32
	// CandidatesPerIncrement is how many query candidates it carries.
	CandidatesPerIncrement = 16
	// SketchPrecision is the HyperLogLog precision of the author sketches:
	// 2^12 registers, about 1.6 % standard error, 4 KiB dense (small
	// sets stay sparse and far smaller).
	SketchPrecision = 12
	// unknownEngagement scores a sighting whose source gives no
	// engagement counts.
	unknownEngagement = 0.5
)

// Engagement scores a comment by its reposts and likes as loklak's
// PriorityKaizen harvester does: α = 5·reposts + likes, score =
// α / (α + 10·e^(−0.01·α)), in [0, 1), rising with engagement but never
// letting one viral comment dwarf the rest. known false (the source gives
// no counts) scores 0.5.
func Engagement(reposts, likes int64, known bool) float64 {
	if !known {
		return unknownEngagement
	}
	a := float64(5*max(reposts, 0) + max(likes, 0))
	return a / (a + 10*math.Exp(-0.01*a))
}

// Builder gathers the analytics of one increment's comments. It is not
// safe for concurrent use.
type Builder struct {
	minutes map[time.Time]*minute
	last    *minute              // the minute of the last comment added, at lastAt
	lastAt  time.Time            // (comments come in batches fetched together)
	hours   []*hour              // few: a batch's comments are fetched within minutes
	cands   hashtab.Table[int32] // candidate terms → positions in cand
	cand    []candidate          // indexed by cands, in order of first sighting
	tk      tokenizer
	seq     int32 // the comment being added, to count each term once in it
	spare   []*hour
	// first holds the comment of an increment added with AddSet while it
	// is the only one, not yet counted (hasFirst): Build makes its
	// analytics from what the comment's item shares (buildOne). Most
	// increments of a spawn with many subscribers hold one comment.
	first    sighting
	hasFirst bool
	best     termq.Top[termq.Item] // Build's best candidates
	top      termq.Top[int32]      // topTerms' best tallies, of many
	order    []int32               // topTerms' scratch
}

// sighting is a comment as the builder counts it.
type sighting struct {
	at      time.Time // when fetched, UTC
	author  string
	matched []string
	score   float64
	set     *Set
	mood    int8 // the comment's sentiment: 1 positive, -1 negative, 0 otherwise
}

// moodOf is the mood of a sighting of a comment with sentiment s.
func moodOf(s *api.Sentiment) int8 {
	switch api.SentimentLabel(s) {
	case api.SentimentPositive:
		return 1
	case api.SentimentNegative:
		return -1
	}
	return 0
}

type minute struct {
	comments           int64
	positive, negative int64
	authors            *hyperloglog.Sketch
}

// hour is the term counts of one hour: tallies indexed by index, so
// counting a term seen before allocates nothing and building the
// increment walks a slice rather than a map.
type hour struct {
	at      time.Time
	index   hashtab.Table[int32] // terms → positions in tallies
	tallies []tally
}

// tally is a term's count in an hour and the last comment that counted it.
type tally struct {
	term string
	key  uint64 // prefixKey(term)
	n    int64
	last int32
}

type candidate struct {
	termq.Item
	last int32
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{minutes: map[time.Time]*minute{}}
}

// Reset empties the builder for another increment, keeping its maps'
// and slices' room: a builder reused batch after batch does not grow them
// again.
func (b *Builder) Reset() {
	clear(b.minutes)
	b.last, b.lastAt = nil, time.Time{}
	for _, h := range b.hours {
		h.index.Reset()
		clear(h.tallies) // drop the terms' strings
		h.tallies = h.tallies[:0]
		b.spare = append(b.spare, h)
	}
	clear(b.hours)
	b.hours = b.hours[:0]
	b.cands.Reset()
	clear(b.cand)
	b.cand = b.cand[:0]
	b.seq = 0
	b.first, b.hasFirst = sighting{}, false
}

// Add counts one comment, at its fetch time (now when it has none). Its
// terms count once each; its hashtags and phrases that are not among the
// query terms it matched become query candidates.
func (b *Builder) Add(c *api.Comment, now time.Time) {
	b.flush()
	sg := sightingOf(c, nil, now)
	h := b.begin(sg)
	seq, score := b.seq, sg.score
	b.tk.scan(c.Text, c.Lang, func(term []byte, kind Kind, hash uint64) bool {
		i, ok := h.index.GetBytes(hash, term) // no allocation for a term seen before
		if !ok {
			i = int32(len(h.tallies))
			h.tallies = append(h.tallies, tally{term: string(term), key: prefixKey(string(term))})
			h.index.Put(hash, h.tallies[i].term, i)
		} else if h.tallies[i].last == seq {
			return false
		}
		t := &h.tallies[i]
		t.n++
		t.last = seq
		if kind == Hashtag || kind == Phrase {
			b.sight(c.Matched, t.term, hash, score)
		}
		return true
	})
}

// AddSet is Add for a comment whose terms were extracted beforehand
// (Extract of its text and language, shared by every comment made of one
// item): it counts exactly what Add would, without reading the text.
func (b *Builder) AddSet(c *api.Comment, set *Set, now time.Time) {
	sg := sightingOf(c, set, now)
	if b.seq == 0 && !b.hasFirst {
		b.first, b.hasFirst = sg, true
		return
	}
	b.flush()
	b.count(sg)
}

// sightingOf is a comment to count, with the terms set.
func sightingOf(c *api.Comment, set *Set, now time.Time) sighting {
	at := c.FetchedAt
	if at.IsZero() {
		at = now
	}
	return sighting{at: at.UTC(), author: c.Author, matched: c.Matched, score: Engagement(c.Engagement.Counts()), set: set,
		mood: moodOf(c.Sentiment)}
}

// flush counts the comment held in first into the maps.
func (b *Builder) flush() {
	if b.hasFirst {
		b.hasFirst = false
		b.count(b.first)
		b.first = sighting{}
	}
}

// count counts a comment whose terms were extracted.
func (b *Builder) count(sg sighting) {
	sg.set.Extract()
	h := b.begin(sg)
	seq := b.seq
	set := sg.set
	for _, sp := range set.terms {
		term := set.textOf(sp)
		i, ok := h.index.Get(sp.hash, term)
		if !ok {
			i = int32(len(h.tallies))
			h.tallies = append(h.tallies, tally{term: term, key: prefixKey(term)})
			h.index.Put(sp.hash, term, i)
		}
		t := &h.tallies[i]
		t.n++
		t.last = seq
		if sp.kind == Hashtag || sp.kind == Phrase {
			b.sight(sg.matched, term, sp.hash, sg.score)
		}
	}
}

// begin counts a comment in its minute and returns the term counts of its
// hour, the comment numbered in b.seq.
func (b *Builder) begin(sg sighting) *hour {
	at := sg.at
	key := at.Truncate(time.Minute)
	m := b.last
	if m == nil || b.lastAt != key { // the map's own comparison
		m = b.minutes[key]
		if m == nil {
			m = &minute{}
			b.minutes[key] = m
		}
		b.last, b.lastAt = m, key
	}
	m.comments++
	switch sg.mood {
	case 1:
		m.positive++
	case -1:
		m.negative++
	}
	if sg.author != "" {
		if m.authors == nil {
			m.authors, _ = hyperloglog.NewSketch(SketchPrecision, true)
		}
		m.authors.Insert([]byte(sg.author))
	}
	b.seq++
	return b.hour(at.Truncate(time.Hour))
}

// hour returns the term counts of the hour at.
func (b *Builder) hour(at time.Time) *hour {
	for _, h := range b.hours {
		if h.at.Equal(at) {
			return h
		}
	}
	var h *hour
	if n := len(b.spare); n > 0 {
		h, b.spare = b.spare[n-1], b.spare[:n-1]
	} else {
		h = &hour{}
	}
	h.at = at
	b.hours = append(b.hours, h)
	return h
}

// sight counts a hashtag or phrase of the comment being added as a query
// candidate, unless it contains a query term the comment matched.
func (b *Builder) sight(matchedTerms []string, term string, hash uint64, score float64) {
	i, ok := b.cands.Get(hash, term)
	if !ok {
		if len(matchedTerms) > 0 && matched(matchedTerms, term) {
			return
		}
		i = int32(len(b.cand))
		b.cand = append(b.cand, candidate{Item: termq.Item{Term: term}})
		b.cands.Put(hash, term, i)
	}
	cd := &b.cand[i]
	if cd.last == b.seq {
		return
	}
	if cd.Count > 0 && len(matchedTerms) > 0 && matched(matchedTerms, cd.Term) {
		return
	}
	cd.last = b.seq
	cd.Score += score
	cd.Count++
}

// matched reports whether a candidate adds nothing to the query: it
// contains, as a whole word, one of the query terms the comment matched
// (canonical atoms: lowercased, phrases quoted), so every comment it would
// match, the query matches already ("#golang" and "golang release" for a
// query golang).
func matched(matched []string, term string) bool {
	for _, m := range matched {
		m = strings.Trim(m, `"`)
		if m == term || query.ContainsWord(term, strings.TrimPrefix(m, "#")) {
			return true
		}
	}
	return false
}

// Build returns the analytics gathered, nil when no comment was added:
// minutes and hours in time order, each hour's top terms (the rest summed
// in Other) and the best candidates.
func (b *Builder) Build() *api.IncrementAnalytics {
	if b.hasFirst {
		return buildOne(b.first)
	}
	if len(b.minutes) == 0 {
		return nil
	}
	out := &api.IncrementAnalytics{}
	for at, m := range b.minutes {
		ma := api.MinuteActivity{At: at, Comments: m.comments, Positive: m.positive, Negative: m.negative}
		if m.authors != nil {
			ma.Authors, _ = m.authors.MarshalBinary()
		}
		out.Minutes = append(out.Minutes, ma)
	}
	slices.SortFunc(out.Minutes, func(a, b api.MinuteActivity) int { return a.At.Compare(b.At) })
	for _, h := range b.hours {
		ht := api.HourTerms{At: h.at}
		ht.Terms, ht.Other = b.topTerms(h.tallies)
		if len(ht.Terms) > 0 || ht.Other > 0 {
			out.Terms = append(out.Terms, ht)
		}
	}
	slices.SortFunc(out.Terms, func(a, b api.HourTerms) int { return a.At.Compare(b.At) })
	if len(b.cand) > 0 {
		b.best.Reset(CandidatesPerIncrement, rankBelow)
		for _, cd := range b.cand {
			if !math.IsNaN(cd.Score) && !math.IsInf(cd.Score, 0) {
				b.best.Offer(cd.Item)
			}
		}
		top := b.best.Items()
		termq.SortBest(top)
		out.Candidates = make([]api.Suggestion, len(top))
		for i, it := range top {
			out.Candidates[i] = api.Suggestion{Term: it.Term, Score: it.Score, Count: it.Count}
		}
		b.best.Reset(CandidatesPerIncrement, rankBelow) // drop the terms' strings
	}
	return out
}

// rankBelow orders candidates as termq.Queue does (termq.Compare).
func rankBelow(a, b termq.Item) bool { return termq.Compare(a, b) < 0 }

// topTerms returns the TopTermsPerIncrement most counted of an hour's
// tallies, most counted first and of equal counts the smaller term first
// (termq.Compare's order for a score that is the count), and the sum of
// the others' counts. Terms compare by their first eight bytes before
// their text, so that ordering the mostly equal counts of a few comments
// rarely reads the texts.
func (b *Builder) topTerms(tallies []tally) ([]api.TermCount, int64) {
	if len(tallies) == 0 {
		return nil, 0
	}
	before := func(i, j int32) int {
		a, c := &tallies[i], &tallies[j]
		if a.n != c.n {
			return cmp.Compare(c.n, a.n)
		}
		if a.key != c.key {
			return cmp.Compare(a.key, c.key)
		}
		return strings.Compare(a.term, c.term)
	}
	order := b.order[:0]
	k := TopTermsPerIncrement
	if len(tallies) <= 4*k {
		for i := range tallies {
			order = append(order, int32(i))
		}
	} else {
		// The k best of many, in a Top whose root is the worst kept.
		b.top.Reset(k, func(i, j int32) bool { return before(i, j) > 0 })
		for i := range tallies {
			b.top.Offer(int32(i))
		}
		order = append(order, b.top.Items()...)
	}
	slices.SortFunc(order, before)
	var other int64
	if len(order) > k {
		for _, i := range order[k:] {
			other += tallies[i].n
		}
		order = order[:k]
	}
	if len(tallies) > 4*k {
		for _, t := range tallies {
			other += t.n
		}
		for _, i := range order {
			other -= tallies[i].n
		}
	}
	out := make([]api.TermCount, len(order))
	for j, i := range order {
		out[j] = api.TermCount{Term: tallies[i].term, Count: tallies[i].n}
	}
	b.order = order[:0]
	return out, other
}

// prefixKey is a term's first eight bytes as a number that orders as the
// bytes do (shorter terms padded with zeros, which no term holds).
func prefixKey(term string) uint64 {
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(term) {
			k |= uint64(term[i])
		}
	}
	return k
}
