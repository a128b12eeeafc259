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
	hours   map[time.Time]map[string]int64
	cands   map[string]*termq.Item
}

type minute struct {
	comments int64
	authors  *hyperloglog.Sketch
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{minutes: map[time.Time]*minute{}, hours: map[time.Time]map[string]int64{}, cands: map[string]*termq.Item{}}
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
		counts = map[string]int64{}
		b.hours[hour] = counts
	}
	score := Engagement(0, 0, false)
	for _, t := range Terms(c.Text, c.Lang) {
		counts[t.Text]++
		if t.Kind != Hashtag && t.Kind != Phrase || matched(c.Matched, t.Text) {
			continue
		}
		it := b.cands[t.Text]
		if it == nil {
			it = &termq.Item{Term: t.Text}
			b.cands[t.Text] = it
		}
		it.Score += score
		it.Count++
	}
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
		for term, n := range counts {
			if d, ok := q.Add(term, float64(n), n); ok {
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
