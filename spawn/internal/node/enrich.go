package node

import (
	"log/slog"
	"sync/atomic"
	"time"

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
	// loaded is set once the detector's models are loaded.
	loaded atomic.Bool
}

// modelsWait bounds how long the first item without a language waits for
// the detector's models, which start loading when the node is built (a
// few seconds): an item that comes sooner, in a spawn's first moments,
// waits rather than getting no language. Past it, languages are left
// unknown until the models are in.
const modelsWait = 30 * time.Second

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

// detect detects the language of text, waiting for the detector's models
// the first time.
func (e *enricher) detect(text string) (string, bool) {
	if !e.loaded.Load() {
		select {
		case <-e.langs.Ready():
		case <-time.After(modelsWait):
		}
		e.loaded.Store(true)
	}
	return e.langs.Detect(text)
}

// of works out the language and sentiment of an item's text, lang being
// the one its source says.
func (e *enricher) of(text, lang string) (outLang string, detected bool, s *api.Sentiment) {
	if lang == "" {
		if l, ok := e.detect(text); ok {
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

// testsEnrichment reports whether a query tests an item's language or
// sentiment.
func testsEnrichment(q *query.Query) bool {
	for _, a := range q.Atoms() {
		if a.Kind == query.Lang || a.Kind == query.Sentiment {
			return true
		}
	}
	return false
}

// enrichBeforeMatch returns items enriched when a subscriber of ds tests
// what enrichment finds, and items unchanged otherwise. The source's
// slice is left as it was: enriched items are copies.
func (n *Node) enrichBeforeMatch(ds *dataSource, items []source.Item) []source.Item {
	if n.enrich == nil || !ds.enrichFirst.Load() {
		return items
	}
	out := make([]source.Item, len(items))
	copy(out, items)
	for i := range out {
		n.enrich.item(&out[i])
	}
	return out
}

// enrichComments enriches the comments that were not enriched before
// matching, once per item: the comments of one item, made for each
// subscriber it matched, are adjacent.
func (n *Node) enrichComments(ps []pending) {
	if n.enrich == nil {
		return
	}
	for i := range ps {
		p := &ps[i]
		if p.enriched {
			continue
		}
		if i > 0 && ps[i-1].enriched && ps[i-1].comment.ID == p.comment.ID && ps[i-1].comment.Text == p.comment.Text {
			prev := &ps[i-1].comment
			p.comment.Lang, p.comment.LangDetected, p.comment.Sentiment = prev.Lang, prev.LangDetected, prev.Sentiment
		} else {
			p.comment.Lang, p.comment.LangDetected, p.comment.Sentiment = n.enrich.of(p.comment.Text, p.comment.Lang)
		}
		p.enriched = true
	}
}
