package alert

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// Term rules watch the hourly term counts the hub keeps (term_counts, 8
// days): a term in the crawler's top terms of the last hours that was not
// among its top terms of the week before, and whose count is far above
// the week's own rate for it (the spike detector's test and thresholds,
// counts at least Poisson).
const (
	// termEvery is how often term rules are evaluated.
	termEvery = 5 * time.Minute
	// termTop is how many top terms a term must be among.
	termTop = 10
	// termBaseline is the history a term is compared with.
	termBaseline = 7 * 24 * time.Hour
	// termMinHistory is the history a rule's crawlers need before a term
	// can be called rising.
	termMinHistory = 24 * time.Hour
)

// termLoop evaluates the term rules every termEvery until ctx ends.
func (s *Service) termLoop(ctx context.Context, term uint64) {
	for {
		if err := s.EvaluateTerms(ctx, term); err != nil {
			if errors.Is(err, sqlstore.ErrFenced) || ctx.Err() != nil {
				return
			}
			s.logger.Warn("term evaluation failed", "err", err)
		}
		if !sleepUntil(ctx, s.cfg.Now().Add(termEvery), s.cfg.Now()) {
			return
		}
	}
}

// EvaluateTerms fires an alert for each term that rose into a term rule's
// crawlers' top terms, at most once a day per term and rule.
func (s *Service) EvaluateTerms(ctx context.Context, term uint64) error {
	start := time.Now()
	defer func() { s.metrics.evaluation.WithLabelValues(api.AlertTerm).Observe(time.Since(start).Seconds()) }()
	s.termMu.Lock()
	defer s.termMu.Unlock()
	rules, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return err
	}
	var owners *owners
	now := s.cfg.Now().UTC()
	for _, r := range rules {
		if r.Kind != api.AlertTerm {
			continue
		}
		if owners == nil {
			if owners, err = s.readOwners(ctx); err != nil {
				return err
			}
		}
		if err := s.evaluateTerm(ctx, term, r, owners, now); err != nil {
			if errors.Is(err, sqlstore.ErrFenced) || ctx.Err() != nil {
				return err
			}
			s.logger.Warn("term rule not evaluated", "rule_id", r.ID, "err", err)
		}
	}
	return nil
}

// termRatio is how many times its baseline a rising term must reach, by
// sensitivity: a term's count over an hour or two is judged once, not
// against records as a spike's minutes are.
var termRatio = map[string]float64{spike.Low: 3, spike.Medium: 2, spike.High: 1.5}

func (s *Service) evaluateTerm(ctx context.Context, term uint64, r sqlstore.AlertRule, owners *owners, now time.Time) error {
	ids, created := owners.targets(r)
	th, err := spike.ThresholdsOf(r.Sensitivity)
	if err != nil || len(ids) == 0 {
		return err
	}
	// The window: the hour before this one and this one so far.
	windowStart := now.Truncate(time.Hour).Add(-time.Hour)
	baseStart := later(windowStart.Add(-termBaseline), created.UTC().Truncate(time.Hour).Add(time.Hour))
	history := windowStart.Sub(baseStart)
	if history < termMinHistory {
		return nil // too new to know what is usual
	}
	top, err := s.store.TermTotals(ctx, ids, nil, windowStart, now.Add(time.Hour), termTop)
	if err != nil || len(top) == 0 {
		return err
	}
	usual, err := s.store.TermTotals(ctx, ids, nil, baseStart, windowStart, termTop)
	if err != nil {
		return err
	}
	terms := make([]string, len(top))
	for i, t := range top {
		terms[i] = t.Term
	}
	base, err := s.store.TermTotals(ctx, ids, terms, baseStart, windowStart, 0)
	if err != nil {
		return err
	}
	baseCount := map[string]int64{}
	for _, t := range base {
		baseCount[t.Term] = t.Count
	}
	window := now.Sub(windowStart)
	for _, t := range top {
		if slices.ContainsFunc(usual, func(u api.TermCount) bool { return u.Term == t.Term }) {
			continue // among the usual top terms: not rising into them
		}
		expected := float64(baseCount[t.Term]) * float64(window) / float64(history)
		observed := float64(t.Count)
		p := spike.PoissonUpperTail(observed, max(expected, 0.5))
		if observed < th.MinVolume || observed < termRatio[cmp.Or(r.Sensitivity, spike.DefaultSensitivity)]*max(expected, 1) || p >= th.PValue {
			continue
		}
		c := content{RuleID: r.ID, Kind: api.AlertTerm, CrawlerID: r.CrawlerID, UserID: r.UserID, At: now, Observed: observed,
			Expected: expected, TopTerms: top[:min(len(top), topTermsShown)], Term: t.Term}
		c.UserID = owners.userOf(r)
		key := "term:" + t.Term + ":" + now.Format("2006-01-02")
		if len(key) > 200 {
			key = key[:200]
		}
		if err := s.fire(ctx, term, r, sqlstore.Alert{RuleID: r.ID, Key: key, Kind: api.AlertTerm, CrawlerID: c.CrawlerID,
			UserID: c.UserID, At: now, Observed: observed, Expected: expected, CreatedAt: s.cfg.Now()}, c, nil, nil); err != nil {
			return err
		}
	}
	return nil
}
