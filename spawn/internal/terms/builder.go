package terms

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/pkg/termq"
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
// PriorityKaizen harvester does (seed 003): α = 5·reposts + likes, score =
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
	hours   map[time.Time]map[string]*tally
	cands   map[string]*candidate
	tk      tokenizer
	seq     int // the comment being added, to count each term once in it
	spare   []map[string]*tally
}

type minute struct {
	comments int64
	authors  *hyperloglog.Sketch
}

// tally is a term's count in an hour and the last comment that counted it.
type tally struct {
	n    int64
	last int
}

type candidate struct {
	termq.Item
	last int
}

// builderTerms sizes a builder's maps for a store batch's vocabulary, so
// they do not grow while counting.
const builderTerms = 512

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{minutes: map[time.Time]*minute{}, hours: map[time.Time]map[string]*tally{}, cands: make(map[string]*candidate, builderTerms/4)}
}

// Reset empties the builder for another increment, keeping its maps'
// room: a builder reused batch after batch does not grow them again.
func (b *Builder) Reset() {
	clear(b.minutes)
	for _, counts := range b.hours {
		clear(counts)
		b.spare = append(b.spare, counts)
	}
	clear(b.hours)
	clear(b.cands)
}

// Add counts one comment, at its fetch time (now when it has none). Its
// terms count once each; its hashtags and phrases that are not among the
// query terms it matched become query candidates.
func (b *Builder) Add(c *api.Comment, now time.Time) {
	at := c.FetchedAt
	if at.IsZero() {
		at = now
	}
	at = at.UTC()
	m := b.minutes[at.Truncate(time.Minute)]
	if m == nil {
		m = &minute{}
		b.minutes[at.Truncate(time.Minute)] = m
	}
	m.comments++
	if c.Author != "" {
		if m.authors == nil {
			m.authors, _ = hyperloglog.NewSketch(SketchPrecision, true)
		}
		m.authors.Insert([]byte(c.Author))
	}
	hour := at.Truncate(time.Hour)
	counts := b.hours[hour]
	if counts == nil {
		if n := len(b.spare); n > 0 {
			counts, b.spare = b.spare[n-1], b.spare[:n-1]
		} else {
			counts = make(map[string]*tally, builderTerms)
		}
		b.hours[hour] = counts
	}
	b.seq++
	seq := b.seq
	score := Engagement(c.Engagement.Counts())
	b.tk.scan(c.Text, c.Lang, func(term []byte, kind Kind) bool {
		t := counts[string(term)] // no allocation for a term seen before
		if t == nil {
			t = &tally{}
			counts[string(term)] = t
		} else if t.last == seq {
			return false
		}
		t.n++
		t.last = seq
		if kind != Hashtag && kind != Phrase {
			return true
		}
		cd := b.cands[string(term)]
		if cd == nil {
			if len(c.Matched) > 0 && matched(c.Matched, string(term)) {
				return true
			}
			cd = &candidate{Item: termq.Item{Term: string(term)}}
			b.cands[cd.Term] = cd
		} else if cd.last == seq {
			return true
		}
		if cd.Count > 0 && len(c.Matched) > 0 && matched(c.Matched, cd.Term) {
			return true
		}
		cd.last = seq
		cd.Score += score
		cd.Count++
		return true
	})
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
	if len(b.minutes) == 0 {
		return nil
	}
	out := &api.IncrementAnalytics{}
	for at, m := range b.minutes {
		ma := api.MinuteActivity{At: at, Comments: m.comments}
		if m.authors != nil {
			ma.Authors, _ = m.authors.MarshalBinary()
		}
		out.Minutes = append(out.Minutes, ma)
	}
	slices.SortFunc(out.Minutes, func(a, b api.MinuteActivity) int { return a.At.Compare(b.At) })
	for at, counts := range b.hours {
		ht := api.HourTerms{At: at}
		q := termq.New(TopTermsPerIncrement)
		for term, t := range counts {
			if d, ok := q.Add(term, float64(t.n), t.n); ok {
				ht.Other += d.Count
			}
		}
		for _, it := range q.Items() {
			ht.Terms = append(ht.Terms, api.TermCount{Term: it.Term, Count: it.Count})
		}
		if len(ht.Terms) > 0 || ht.Other > 0 {
			out.Terms = append(out.Terms, ht)
		}
	}
	slices.SortFunc(out.Terms, func(a, b api.HourTerms) int { return a.At.Compare(b.At) })
	if len(b.cands) > 0 {
		q := termq.New(CandidatesPerIncrement)
		for _, it := range b.cands {
			q.Add(it.Term, it.Score, it.Count)
		}
		for _, it := range q.Items() {
			out.Candidates = append(out.Candidates, api.Suggestion{Term: it.Term, Score: it.Score, Count: it.Count})
		}
	}
	return out
}
