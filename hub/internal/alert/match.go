package alert

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Match rules read the new comments of their crawlers from the store,
// through a live spawn (the node API's export read, as the hub's own
// comment export does), and test each with the rule's query, as the
// spawns do (query.Query.Match). A rule's cursor in SQL says up to which
// fetch time it has read; an alert and the cursor move in one transaction,
// so a new leader neither skips nor repeats a batch.
const (
	// matchSettle is how long after its fetch a comment is read: the
	// spawn stores it within a second or two.
	matchSettle = 15 * time.Second
	// matchLookback is how far before the cursor the read starts, by
	// published time: a comment published longer before it was fetched
	// (an old item of a feed seen for the first time) does not alert.
	matchLookback = 15 * time.Minute
	// matchPages bounds the pages one rule reads per pass; a burst beyond
	// them is counted up to there and the cursor moves on.
	matchPages = 20
	// nodeReadTimeout bounds one page read through a spawn.
	nodeReadTimeout = 30 * time.Second
	// nodeReadAttempts is how many spawns one page is asked of.
	nodeReadAttempts = 2
)

// readComments reads a page of a crawler's stored comments through a live
// spawn.
func (s *Service) readComments(ctx context.Context, crawlerID int64, q api.ExportQuery) (api.CommentPage, error) {
	if s.cfg.ReadComments != nil {
		return s.cfg.ReadComments(ctx, crawlerID, q)
	}
	_, hub, err := s.leading()
	if err != nil {
		return api.CommentPage{}, err
	}
	nodes := hub.Nodes()
	if len(nodes) == 0 {
		return api.CommentPage{}, errors.New("no spawn node is live to read the store")
	}
	var errs []error
	for _, n := range nodes[:min(len(nodes), nodeReadAttempts)] {
		client := api.NewNodeClient(n.URL, api.NodeOptions{Token: s.cfg.NodeToken, HTTPClient: s.cfg.NodeHTTPClient,
			Timeouts: api.NodeTimeouts{Comments: nodeReadTimeout}})
		page, err := client.ExportComments(ctx, crawlerID, q)
		if err == nil {
			return page, nil
		}
		errs = append(errs, fmt.Errorf("spawn %s: %w", n.ID, err))
	}
	return api.CommentPage{}, errors.Join(errs...)
}

// matchLoop evaluates the match rules every MatchEvery until ctx ends.
func (s *Service) matchLoop(ctx context.Context, term uint64) {
	for {
		if err := s.EvaluateMatches(ctx, term); err != nil {
			if errors.Is(err, sqlstore.ErrFenced) || ctx.Err() != nil {
				return
			}
			s.logger.Warn("match evaluation failed", "err", err)
		}
		if !sleepUntil(ctx, s.cfg.Now().Add(s.cfg.MatchEvery), s.cfg.Now()) {
			return
		}
	}
}

// EvaluateMatches reads each match rule's new comments and fires one alert
// per rule for those that match.
func (s *Service) EvaluateMatches(ctx context.Context, term uint64) error {
	start := time.Now()
	defer func() { s.metrics.evaluation.WithLabelValues(api.AlertMatch).Observe(time.Since(start).Seconds()) }()
	s.matchMu.Lock()
	defer s.matchMu.Unlock()
	rules, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return err
	}
	var owners *owners
	for _, r := range rules {
		if r.Kind != api.AlertMatch {
			continue
		}
		if owners == nil {
			if owners, err = s.readOwners(ctx); err != nil {
				return err
			}
		}
		if err := s.evaluateMatch(ctx, term, r, owners); err != nil {
			if errors.Is(err, sqlstore.ErrFenced) || ctx.Err() != nil {
				return err
			}
			s.logger.Warn("match rule not evaluated", "rule_id", r.ID, "err", err)
		}
	}
	return nil
}

func (s *Service) evaluateMatch(ctx context.Context, term uint64, r sqlstore.AlertRule, owners *owners) error {
	upto := s.cfg.Now().UTC().Add(-matchSettle)
	if r.CursorAt == nil {
		// A new rule alerts on comments from now on, not on the past.
		return s.store.AdvanceRuleCursor(ctx, term, r.ID, upto)
	}
	from := r.CursorAt.UTC()
	if !upto.After(from) {
		return nil
	}
	q, err := query.Parse(r.Query)
	if err != nil {
		return fmt.Errorf("rule %d's query: %w", r.ID, err)
	}
	ids, _ := owners.targets(r)
	var matched []api.Comment
	count := 0
	for _, id := range ids {
		eq := api.ExportQuery{Since: from.Add(-matchLookback), Limit: api.MaxExportLimit}
		for page := 0; page < matchPages; page++ {
			p, err := s.readComments(ctx, id, eq)
			if err != nil {
				return fmt.Errorf("read comments of crawler %d: %w", id, err)
			}
			for _, c := range p.Comments {
				if !c.FetchedAt.After(from) || c.FetchedAt.After(upto) {
					continue
				}
				if _, ok := q.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang, Sentiment: api.SentimentLabel(c.Sentiment)}); ok {
					count++
					matched = append(matched, c)
				}
			}
			if p.NextCursor == "" {
				break
			}
			eq.Cursor = p.NextCursor
		}
	}
	if count == 0 {
		return s.store.AdvanceRuleCursor(ctx, term, r.ID, upto)
	}
	c := content{RuleID: r.ID, Kind: api.AlertMatch, CrawlerID: r.CrawlerID, UserID: r.UserID, At: upto, Observed: float64(count), Query: r.Query}
	c.UserID = owners.userOf(r)
	// The newest matches show.
	for i := len(matched) - 1; i >= 0 && len(c.Sample) < sampleSize; i-- {
		c.Sample = append(c.Sample, sampleOf(matched[i]))
	}
	tctx, cancel := context.WithTimeout(ctx, enrichTimeout)
	if r.CrawlerID != nil {
		c.TopTerms, _ = s.store.TermsSince(tctx, *r.CrawlerID, upto.Add(-time.Hour), topTermsShown)
	} else if r.UserID != nil {
		c.TopTerms, _ = s.store.UserTermsSince(tctx, *r.UserID, upto.Add(-time.Hour), topTermsShown)
	}
	cancel()
	return s.fire(ctx, term, r, sqlstore.Alert{RuleID: r.ID, Key: "match:" + upto.Format(time.RFC3339Nano), Kind: api.AlertMatch,
		CrawlerID: c.CrawlerID, UserID: c.UserID, At: upto, Observed: float64(count), CreatedAt: s.cfg.Now()}, c, nil, &upto)
}
