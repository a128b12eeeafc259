package alert

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// Sentiment rules watch the share of negative comments (a crisis: the
// share far above what the last hours lead one to expect) with a
// spike.ShareDetector per rule, fed each completed minute's negative and
// total comments from the activity the hub already keeps in SQL
// (activity_minutes and activity_hours count the negative comments).
//
// A leader that takes a rule over restores the detector's state, saved in
// the rule's row with the minute it covers (once an hour, and at once
// after every alert), and catches up from that minute, firing what the
// minutes it replays fire: an alert the previous leader had not recorded
// is not lost, one it had is found by its key (the minute) and not told
// twice. A rule without a usable state is rebuilt from a week of hours and
// a day of minutes without firing, so a new leader never fires on its
// first minute for a crisis already under way.
const (
	// shareStateMaxAge is how old a saved state may be and still be
	// caught up from; an older one is rebuilt from the counts instead.
	shareStateMaxAge = 3 * time.Hour
	// shareCatchUp is how many minutes a restored detector fires on: the
	// minutes before them are replayed without firing (alerts that late
	// help nobody).
	shareCatchUp = 90
	// shareToldSlack is how much later than an alert told after the
	// saved state a replay may fire for the same crisis (a minute's
	// counts that grew after it was judged).
	shareToldSlack = 5 * time.Minute
	// shareSampleLookback is how far back, by published time, an alert's
	// sample of negative comments is read.
	shareSampleLookback = 15 * time.Minute
	// shareSampleRead is how many recent comments are read to find the
	// negative ones to show.
	shareSampleRead = 200
)

// shareRule is one sentiment rule's detector on this leader.
type shareRule struct {
	rule sqlstore.AlertRule
	det  *spike.ShareDetector
	last time.Time // the last minute fed
	// restored is the minute the state restored from SQL covered (zero:
	// rebuilt from the counts).
	restored time.Time
}

// sentimentState is the sentiment rules of one term, owned by
// sentimentLoop.
type sentimentState struct {
	rules map[int64]*shareRule
	saved time.Time // the minute whose evaluation last saved the states
}

func newSentimentState() *sentimentState { return &sentimentState{rules: map[int64]*shareRule{}} }

// sentimentLoop evaluates the sentiment rules once a minute, Settle after
// the minute ends, until ctx ends.
func (s *Service) sentimentLoop(ctx context.Context, term uint64) {
	st := newSentimentState()
	for {
		now := s.cfg.Now()
		minute := now.Add(-s.cfg.Settle).Truncate(time.Minute).Add(-time.Minute)
		if err := s.EvaluateSentiment(ctx, term, st, minute); err != nil {
			if errors.Is(err, sqlstore.ErrFenced) || ctx.Err() != nil {
				return
			}
			s.logger.Warn("sentiment evaluation failed", "minute", minute, "err", err)
		}
		next := minute.Add(2 * time.Minute).Add(s.cfg.Settle)
		if !sleepUntil(ctx, next, s.cfg.Now()) {
			return
		}
	}
}

// shareState is a detector's state with the minute it covers, as the
// rule's row keeps it: the minute (int64 Unix seconds, little endian),
// then spike.ShareDetector.State.
func shareState(covered time.Time, det *spike.ShareDetector) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(covered.Unix()))
	return append(out, det.State()...)
}

// restoreShare restores a state saved by shareState into det and returns
// the minute it covers; ok is false (det unchanged) when the state is
// missing, damaged, or not of a minute in [minute-shareStateMaxAge,
// minute).
func restoreShare(b []byte, det *spike.ShareDetector, minute time.Time) (time.Time, bool) {
	if len(b) != 8+spike.ShareStateSize {
		return time.Time{}, false
	}
	covered := time.Unix(int64(binary.LittleEndian.Uint64(b)), 0).UTC()
	if !covered.Before(minute) || minute.Sub(covered) > shareStateMaxAge || covered.Truncate(time.Minute) != covered {
		return time.Time{}, false
	}
	if err := det.SetState(b[8:]); err != nil {
		return time.Time{}, false
	}
	return covered, true
}

func sumShares(counts map[int64]map[time.Time]sqlstore.ShareCount, ids []int64, at time.Time) (negative, total float64) {
	for _, id := range ids {
		c := counts[id][at]
		negative += float64(c.Negative)
		total += float64(c.Comments)
	}
	return negative, total
}

// EvaluateSentiment brings every sentiment rule's detector up to minute
// and fires the alerts of the minutes it took in.
func (s *Service) EvaluateSentiment(ctx context.Context, term uint64, st *sentimentState, minute time.Time) error {
	start := time.Now()
	defer func() {
		s.metrics.evaluation.WithLabelValues(api.AlertSentiment).Observe(time.Since(start).Seconds())
	}()
	s.sentMu.Lock()
	defer s.sentMu.Unlock()
	minute = minute.UTC().Truncate(time.Minute)
	rules, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return err
	}
	live := map[int64]bool{}
	var cold []*shareRule
	for _, r := range rules {
		if r.Kind != api.AlertSentiment {
			continue
		}
		live[r.ID] = true
		sr := st.rules[r.ID]
		if sr == nil || minute.Sub(sr.last) > shareCatchUp*time.Minute || sr.rule.Sensitivity != r.Sensitivity {
			cfg, err := spike.ShareConfigOf(r.Sensitivity)
			if err != nil {
				s.logger.Warn("alert rule has a bad sensitivity", "rule_id", r.ID, "err", err)
				continue
			}
			det, err := spike.NewShare(cfg)
			if err != nil {
				return err
			}
			sr = &shareRule{rule: r, det: det}
			st.rules[r.ID] = sr
			cold = append(cold, sr)
		}
		sr.rule = r
	}
	for id := range st.rules {
		if !live[id] {
			delete(st.rules, id)
		}
	}
	if len(st.rules) == 0 {
		return nil
	}
	owners, err := s.readOwners(ctx)
	if err != nil {
		return err
	}
	if err := s.warmShares(ctx, cold, owners, minute); err != nil {
		return err
	}
	from := minute
	for _, sr := range st.rules {
		if sr.last.Before(from) {
			from = sr.last.Add(time.Minute)
		}
	}
	counts, err := s.store.MinuteShares(ctx, nil, from, minute.Add(time.Minute))
	if err != nil {
		return err
	}
	for _, sr := range st.rules {
		ids, _ := owners.targets(sr.rule)
		for m := sr.last.Add(time.Minute); !m.After(minute); m = m.Add(time.Minute) {
			neg, total := sumShares(counts, ids, m)
			fired := sr.det.Observe(neg, total)
			sr.last = m
			if !fired {
				continue
			}
			// A restored detector that fires about when the rule's last
			// alert was told, an alert told after the state was saved
			// (the previous leader stopped before it could save it
			// again), is telling that crisis again.
			if c := sr.rule.CursorAt; !sr.restored.IsZero() && c != nil && c.After(sr.restored) && !m.After(c.Add(shareToldSlack)) {
				s.logger.Info("crisis already told by the previous leader", "rule_id", sr.rule.ID, "minute", m, "told", *c)
				sr.restored = time.Time{}
				continue
			}
			if err := s.fireShare(ctx, term, sr, ids, owners, m, counts); err != nil {
				return err
			}
		}
	}
	// Once an hour the states go to SQL, for the next leader.
	if minute.Sub(st.saved) >= stateSaveEvery {
		st.saved = minute
		states := make(map[int64][]byte, len(st.rules))
		for id, sr := range st.rules {
			states[id] = shareState(sr.last, sr.det)
		}
		if err := s.store.SaveRuleStates(ctx, term, states); err != nil && ctx.Err() == nil {
			if errors.Is(err, sqlstore.ErrFenced) {
				return err
			}
			s.logger.Warn("unable to save the sentiment detectors' states", "err", err)
		}
	}
	return nil
}

// warmShares restores or rebuilds the detectors of rules new to this
// leader: a usable saved state is restored and the rule catches up from
// the minute it covers (firing in the last shareCatchUp minutes); else
// the detector learns from the hours of the last week and the minutes of
// the last day, up to the minute before minute, without firing.
func (s *Service) warmShares(ctx context.Context, cold []*shareRule, owners *owners, minute time.Time) error {
	if len(cold) == 0 {
		return nil
	}
	ids := make([]int64, len(cold))
	for i, sr := range cold {
		ids[i] = sr.rule.ID
	}
	states, err := s.store.RuleStates(ctx, ids)
	if err != nil {
		return err
	}
	seedFrom := minute.Add(-seedDays * 24 * time.Hour).Truncate(time.Hour)
	replayFrom := minute.Add(-coldReplay).Truncate(time.Hour)
	var all []int64
	seen := map[int64]bool{}
	for _, sr := range cold {
		targets, _ := owners.targets(sr.rule)
		for _, id := range targets {
			if !seen[id] {
				seen[id] = true
				all = append(all, id)
			}
		}
	}
	slices.Sort(all)
	var hours, minutes map[int64]map[time.Time]sqlstore.ShareCount
	if len(all) > 0 {
		if hours, err = s.store.HourShares(ctx, all, seedFrom, replayFrom); err != nil {
			return err
		}
		if minutes, err = s.store.MinuteShares(ctx, all, replayFrom, minute); err != nil {
			return err
		}
	}
	for _, sr := range cold {
		targets, created := owners.targets(sr.rule)
		sr.last = minute.Add(-time.Minute)
		if covered, ok := restoreShare(states[sr.rule.ID], sr.det, minute); ok {
			sr.restored = covered
			// Minutes too old to alert on are replayed without firing.
			silentUntil := minute.Add(-shareCatchUp * time.Minute)
			m := covered.Add(time.Minute)
			for ; !m.After(silentUntil); m = m.Add(time.Minute) {
				sr.det.Observe(sumShares(minutes, targets, m))
			}
			sr.last = m.Add(-time.Minute)
			continue
		}
		if len(targets) == 0 {
			continue
		}
		created = created.UTC()
		for h := later(seedFrom, created.Truncate(time.Hour)); h.Before(replayFrom); h = h.Add(time.Hour) {
			neg, total := sumShares(hours, targets, h)
			sr.det.Seed(neg, total, 60)
		}
		for m := later(replayFrom, created.Truncate(time.Minute)); m.Before(minute); m = m.Add(time.Minute) {
			sr.det.Observe(sumShares(minutes, targets, m))
		}
	}
	return nil
}

// fireShare records a crisis alert (observed: the negative share of the
// minute that fired, expected: the baseline's, both fractions of 1) with its deliveries, and
// saves the detector's state at once, so a new leader does not tell it
// again.
func (s *Service) fireShare(ctx context.Context, term uint64, sr *shareRule, ids []int64, owners *owners, at time.Time,
	counts map[int64]map[time.Time]sqlstore.ShareCount) error {
	r := sr.rule
	// What fired is the recent window (a few minutes, decayed), which
	// still holds the calm minutes before the crisis; the alert tells the
	// share of the minute that fired, the clearer number.
	neg, total := sumShares(counts, ids, at)
	observed, expected := shareRound(neg/max(total, 1)), shareRound(sr.det.BaselineShare())
	c := content{RuleID: r.ID, Kind: api.AlertSentiment, CrawlerID: r.CrawlerID, At: at, Observed: observed, Expected: expected}
	c.UserID = owners.userOf(r)
	// The crawler with the most negative comments in the minute shows its
	// comments, the negative ones first.
	busiest, most := int64(0), int64(-1)
	for _, id := range ids {
		if n := counts[id][at].Negative; n > most {
			busiest, most = id, n
		}
	}
	if busiest != 0 {
		c.Sample = s.negativeSample(ctx, r, busiest, at)
	}
	s.enrich(ctx, &c, r, busiest)
	told := at
	if err := s.fire(ctx, term, r, sqlstore.Alert{RuleID: r.ID, Key: "sentiment:" + at.Format(time.RFC3339), Kind: api.AlertSentiment,
		CrawlerID: c.CrawlerID, UserID: c.UserID, At: at, Observed: observed, Expected: expected, CreatedAt: s.cfg.Now()}, c, nil, &told); err != nil {
		return err
	}
	sr.rule.CursorAt = &told
	sr.restored = time.Time{}
	return s.store.SaveRuleStates(ctx, term, map[int64][]byte{r.ID: shareState(at, sr.det)})
}

// negativeSample reads crawler's comments of the last minutes and keeps
// the newest negative ones, within enrichTimeout; none when the store
// cannot be read (the alert then shows recent comments).
func (s *Service) negativeSample(ctx context.Context, r sqlstore.AlertRule, crawler int64, at time.Time) []api.AlertSample {
	ctx, cancel := context.WithTimeout(ctx, enrichTimeout)
	defer cancel()
	page, err := s.readComments(ctx, crawler, api.ExportQuery{Since: at.Add(-shareSampleLookback), Limit: shareSampleRead})
	if err != nil {
		s.logger.Debug("crisis alert without negative sample comments", "rule_id", r.ID, "err", err)
		return nil
	}
	var neg []api.Comment
	for _, cm := range page.Comments {
		if api.SentimentLabel(cm.Sentiment) == api.SentimentNegative {
			neg = append(neg, cm)
		}
	}
	slices.SortStableFunc(neg, func(a, b api.Comment) int { return b.PublishedAt.Compare(a.PublishedAt) })
	var out []api.AlertSample
	for _, cm := range neg[:min(len(neg), sampleSize)] {
		out = append(out, sampleOf(cm))
	}
	return out
}

// shareRound keeps a share to the percent.
func shareRound(v float64) float64 { return math.Round(v*100) / 100 }
