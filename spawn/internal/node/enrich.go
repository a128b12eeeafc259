package node

import (
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/langid"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/sentiment"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Enrichment: an item whose source names no language gets the one
// detected in its text, and an item in a language the product scores gets
// its sentiment. Both are worked out once per item, shared by every
// subscriber's comment of it: before matching when a subscriber's query
// tests them (lang:, sentiment:), otherwise only for the items that
// become comments, after matching, outside the node lock.

// enricher detects languages and scores sentiment; nil when the node
// does neither (Config.NoSentiment).
type enricher struct {
	scorer *sentiment.Scorer
	langs  *langid.Detector
}

// newEnricher builds the node's enricher, nil when it is off or its
// model cannot be read (which the tests of package sentiment rule out).
func newEnricher(cfg Config, logger *slog.Logger) *enricher {
	if cfg.NoSentiment {
		return nil
	}
	s, err := sentiment.Default()
	if err != nil {
		logger.Error("sentiment scorer unavailable", "err", err)
		return nil
	}
	return &enricher{scorer: s, langs: langid.Default()}
}

// of works out the language and sentiment of an item's text, lang being
// the one its source says.
func (e *enricher) of(text, lang string) (outLang string, detected bool, s *api.Sentiment) {
	if lang == "" {
		if l, ok := e.langs.Detect(text); ok {
			lang, detected = l, true
		}
	}
	if sc, ok := e.scorer.Score(text, lang); ok {
		s = &sc
	}
	return lang, detected, s
}

// item enriches one item.
func (e *enricher) item(it *source.Item) {
	if it.Enriched {
		return
	}
	it.Lang, it.LangDetected, it.Sentiment = e.of(it.Text, it.Lang)
	it.Enriched = true
}

// enrichFirst says what a data source's subscribers' queries test of
// what enrichment finds, which is then worked out before matching.
type enrichFirst uint32

const (
	// firstLang: a lang: atom. Items whose source names no language are
	// enriched before matching; the others keep the language their
	// source says and are scored after matching.
	firstLang enrichFirst = 1 << iota
	// firstSentiment: a sentiment: atom. Every item is enriched before
	// matching.
	firstSentiment
)

// testsEnrichment reports what a query tests of an item's language and
// sentiment.
func testsEnrichment(q *query.Query) enrichFirst {
	var f enrichFirst
	for _, a := range q.Atoms() {
		switch a.Kind {
		case query.Lang:
			f |= firstLang
		case query.Sentiment:
			f |= firstSentiment
		}
	}
	return f
}

// enrichBeforeMatch returns items enriched as far as a subscriber of ds
// tests what enrichment finds, and items unchanged otherwise. The
// source's slice is left as it was: enriched items are copies.
func (n *Node) enrichBeforeMatch(ds *dataSource, items []source.Item) []source.Item {
	first := enrichFirst(ds.enrichFirst.Load())
	if n.enrich == nil || first == 0 {
		return items
	}
	all := first&firstSentiment != 0
	if !all && !slices.ContainsFunc(items, func(it source.Item) bool { return it.Lang == "" && !it.Enriched }) {
		return items
	}
	out := make([]source.Item, len(items))
	copy(out, items)
	inParallel(len(out), func(i int) {
		if all || out[i].Lang == "" {
			n.enrich.item(&out[i])
		}
	})
	return out
}

// enrichComments enriches the comments that were not enriched before
// matching, once per item: the comments of one item, made for each
// subscriber it matched, are adjacent, and take the findings of the
// first. Items are enriched in parallel when there are enough of them.
func (n *Node) enrichComments(ps []pending) {
	if n.enrich == nil {
		return
	}
	// heads are the first comment of each item to enrich. A source
	// that hands over one item at a time has one, worked out here
	// without a goroutine or an allocation.
	var hbuf [8]int
	heads := hbuf[:0]
	for i := range ps {
		if !ps[i].enriched && !sameAsPrevious(ps, i) {
			heads = append(heads, i)
		}
	}
	if len(heads) == 0 {
		return
	}
	if len(heads) == 1 {
		c := &ps[heads[0]].comment
		lang, detected, s := n.enrich.of(c.Text, c.Lang)
		n.enrichGroup(ps, heads[0], lang, detected, s)
		return
	}
	hs := slices.Clone(heads)
	found := make([]struct {
		lang     string
		detected bool
		s        *api.Sentiment
	}, len(hs))
	inParallel(len(hs), func(k int) {
		c, f := &ps[hs[k]].comment, &found[k]
		f.lang, f.detected, f.s = n.enrich.of(c.Text, c.Lang)
	})
	for k, h := range hs {
		n.enrichGroup(ps, h, found[k].lang, found[k].detected, found[k].s)
	}
}

// enrichGroup gives the comments of ps's item whose first comment is
// ps[h] what enrichment found of it.
func (n *Node) enrichGroup(ps []pending, h int, lang string, detected bool, s *api.Sentiment) {
	end := h + 1
	for end < len(ps) && !ps[end].enriched && sameItem(&ps[h].comment, &ps[end].comment) {
		end++
	}
	for i := h; i < end; i++ {
		c := &ps[i].comment
		c.Lang, c.LangDetected, c.Sentiment = lang, detected, s
		ps[i].enriched = true
	}
}

// sameAsPrevious reports whether ps[i] is a comment of the same item as
// the one before it, in the same state.
func sameAsPrevious(ps []pending, i int) bool {
	return i > 0 && ps[i-1].enriched == ps[i].enriched && sameItem(&ps[i-1].comment, &ps[i].comment)
}

// parallelMin is the fewest items worth a goroutine of their own:
// detecting a language and scoring sentiment each take some ten to
// thirty microseconds a post.
const parallelMin = 8

// inParallel calls fn for 0..n-1 from up to GOMAXPROCS goroutines, and
// returns when every call has.
func inParallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+parallelMin-1)/parallelMin)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
