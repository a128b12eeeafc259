package terms

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/pkg/termq"
)

// TestBuilder_SameAsReference builds random increments with Add, with
// AddSet over Extract, and with refBuilder (the builder as it was, over a
// termq.Queue per hour and maps of pointers): all three must build the
// same analytics, increment after increment on one reused builder.
func TestBuilder_SameAsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`golang Golang rust the and release notes généric Übung café
		über naïve data 2025 go ai x_y foo_bar kubernetes docker cloud native open source`)
	signs := []string{"", "", "", "#", "@"}
	seps := []string{" ", " ", "  ", ", ", ". ", "\n", " https://x.example/a?b=c "}
	langs := []string{"", "en", "de", "fr", "pt-br", "ja"}
	text := func() string {
		var sb strings.Builder
		n := 1 + r.IntN(40)
		if r.IntN(20) == 0 {
			n = 300 // beyond maxTermsPerComment
		}
		for range n {
			w := words[r.IntN(len(words))]
			if r.IntN(4) == 0 {
				w += fmt.Sprint(r.IntN(60))
			}
			sb.WriteString(signs[r.IntN(len(signs))] + w + seps[r.IntN(len(seps))])
		}
		return sb.String()
	}
	base := time.Date(2025, 3, 1, 10, 58, 0, 0, time.UTC)
	got, set := NewBuilder(), NewBuilder()
	for inc := range 300 {
		ref := newRefBuilder()
		n := 1 + r.IntN(6)
		if inc%2 == 0 {
			n = 1 // most increments of a spawn with many subscribers
		}
		if inc%15 == 0 {
			n = 400
		}
		for range n {
			c := api.Comment{Text: text(), Lang: langs[r.IntN(len(langs))], Author: fmt.Sprint("a", r.IntN(30))}
			if r.IntN(8) == 0 {
				c.Author = ""
			}
			if r.IntN(3) > 0 {
				c.FetchedAt = base.Add(time.Duration(r.IntN(240)) * time.Second)
			}
			if r.IntN(2) == 0 {
				c.Matched = []string{words[r.IntN(len(words))], `"release notes"`}
			}
			if r.IntN(2) == 0 {
				c.Engagement = &api.Engagement{Reposts: int64(r.IntN(50)), Likes: int64(r.IntN(500))}
			}
			ref.Add(&c, base)
			got.Add(&c, base)
			set.AddSet(&c, Extract(c.Text, c.Lang), base)
		}
		want := ref.Build()
		for name, b := range map[string]*Builder{"Add": got, "AddSet": set} {
			if a := b.Build(); !reflect.DeepEqual(a, want) {
				t.Fatalf("increment %d, %s: built\n%+v\nwant\n%+v", inc, name, a, want)
			}
			b.Reset()
		}
	}
}

// TestExtract_AsTerms extracts what Terms returns.
func TestExtract_AsTerms(t *testing.T) {
	for _, text := range []string{"", "the and", "#golang Go golang generics landed, golang generics", "@a @a #b release  notes"} {
		s := Extract(text, "en")
		var got []Term
		for _, sp := range s.terms {
			got = append(got, Term{Text: s.textOf(sp), Kind: sp.kind})
		}
		if want := Terms(text, "en"); !slices.Equal(got, want) || s.Len() != len(want) {
			t.Fatalf("Extract(%q) = %v, want %v", text, got, want)
		}
	}
}

// refBuilder is Builder as it was before terms could be extracted once
// per item, kept to check that the builder counts the same.
type refBuilder struct {
	minutes map[time.Time]*refMinute
	hours   map[time.Time]map[string]*refTally
	cands   map[string]*refCandidate
	tk      tokenizer
	seq     int // the comment being added, to count each term once in it
	spare   []map[string]*refTally
}

type refMinute struct {
	comments int64
	authors  *hyperloglog.Sketch
}

// refTally is a term's count in an hour and the last comment that counted it.
type refTally struct {
	n    int64
	last int
}

type refCandidate struct {
	termq.Item
	last int
}

// refBuilderTerms sizes a builder's maps for a store batch's vocabulary, so
// they do not grow while counting.
const refBuilderTerms = 512

// newRefBuilder returns an empty builder.
func newRefBuilder() *refBuilder {
	return &refBuilder{minutes: map[time.Time]*refMinute{}, hours: map[time.Time]map[string]*refTally{}, cands: make(map[string]*refCandidate, refBuilderTerms/4)}
}

// Reset empties the builder for another increment, keeping its maps'
// room: a builder reused batch after batch does not grow them again.
func (b *refBuilder) Reset() {
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
func (b *refBuilder) Add(c *api.Comment, now time.Time) {
	at := c.FetchedAt
	if at.IsZero() {
		at = now
	}
	at = at.UTC()
	m := b.minutes[at.Truncate(time.Minute)]
	if m == nil {
		m = &refMinute{}
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
			counts = make(map[string]*refTally, refBuilderTerms)
		}
		b.hours[hour] = counts
	}
	b.seq++
	seq := b.seq
	score := Engagement(c.Engagement.Counts())
	b.tk.scan(c.Text, c.Lang, func(term []byte, kind Kind, _ uint64) bool {
		t := counts[string(term)] // no allocation for a term seen before
		if t == nil {
			t = &refTally{}
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
			if len(c.Matched) > 0 && refMatched(c.Matched, string(term)) {
				return true
			}
			cd = &refCandidate{Item: termq.Item{Term: string(term)}}
			b.cands[cd.Term] = cd
		} else if cd.last == seq {
			return true
		}
		if cd.Count > 0 && len(c.Matched) > 0 && refMatched(c.Matched, cd.Term) {
			return true
		}
		cd.last = seq
		cd.Score += score
		cd.Count++
		return true
	})
}

// matched reports whether a refCandidate adds nothing to the query: it
// contains, as a whole word, one of the query terms the comment matched
// (canonical atoms: lowercased, phrases quoted), so every comment it would
// match, the query matches already ("#golang" and "golang release" for a
// query golang).
func refMatched(matched []string, term string) bool {
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
func (b *refBuilder) Build() *api.IncrementAnalytics {
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
