package alert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// Spike rules read the comments per minute the hub already keeps in SQL
// (activity_minutes, 25 hours, and activity_hours, 8 days: see
// sqlstore/analytics.go), so they need no table of their own: a leader
// seeds each rule's detector with a week of hours, restores what the
// hours cannot give (the detector's records, saved in the rule's row every
// hour) and replays the last hours minute by minute, then feeds it each
// minute as it completes.
const (
	// seedDays is how many days of hours seed a detector.
	seedDays = spike.DefaultDays + 1
	// replay is how far back a detector with a saved state is replayed
	// minute by minute: its longest span and its level's hour, and more
	// than the hour between two saves.
	replay = 7 * time.Hour
	// coldReplay is how far back a detector without one is replayed: the
	// day of minutes the hub keeps, which gives its first records.
	coldReplay = 24 * time.Hour
	// maxCatchUp is how many minutes a detector catches up on before it is
	// rebuilt instead (a pass that was late, a clock that jumped).
	maxCatchUp = 60
)

// spikeRule is one spike rule's detector on this leader.
type spikeRule struct {
	rule sqlstore.AlertRule
	det  *spike.Detector
	last time.Time // the last minute fed
}

// spikeState is the spike rules of one term, owned by spikeLoop.
type spikeState struct {
	rules map[int64]*spikeRule
	saved time.Time // the minute whose evaluation last saved the detectors' states
}

// stateSaveEvery is how often the detectors' states go to SQL.
const stateSaveEvery = time.Hour

// spikeLoop evaluates the spike rules once a minute, Settle after the
// minute ends, until ctx ends.
func (s *Service) spikeLoop(ctx context.Context, term uint64) {
	st := &spikeState{rules: map[int64]*spikeRule{}}
	for {
		now := s.cfg.Now()
		minute := now.Add(-s.cfg.Settle).Truncate(time.Minute).Add(-time.Minute)
		if err := s.EvaluateSpikes(ctx, term, st, minute); err != nil {
			if errors.Is(err, sqlstore.ErrFenced) || ctx.Err() != nil {
				return
			}
			s.logger.Warn("spike evaluation failed", "minute", minute, "err", err)
		}
		s.pruneSometimes(ctx, now)
		next := minute.Add(2 * time.Minute).Add(s.cfg.Settle)
		if !sleepUntil(ctx, next, s.cfg.Now()) {
			return
		}
	}
}

func (s *Service) pruneSometimes(ctx context.Context, now time.Time) {
	if now.Sub(s.pruned) < pruneEvery {
		return
	}
	s.pruned = now
	if err := s.store.PruneAlerts(ctx, now); err != nil {
		s.logger.Warn("alert prune failed", "err", err)
	}
}

// owners indexes the crawlers by id and by user, read once per pass.
type owners struct {
	crawlers map[int64]sqlstore.CrawlerOwner
	byUser   map[int64][]int64
}

func (s *Service) readOwners(ctx context.Context) (*owners, error) {
	m, err := s.store.CrawlerOwners(ctx)
	if err != nil {
		return nil, err
	}
	o := &owners{crawlers: m, byUser: map[int64][]int64{}}
	for id, c := range m {
		o.byUser[c.UserID] = append(o.byUser[c.UserID], id)
	}
	for _, ids := range o.byUser {
		slices.Sort(ids)
	}
	return o, nil
}

// userOf is a crawler rule's user (nil when the crawler is gone).
func (o *owners) userOf(r sqlstore.AlertRule) *int64 {
	if r.CrawlerID == nil {
		return r.UserID
	}
	if c, ok := o.crawlers[*r.CrawlerID]; ok {
		uid := c.UserID
		return &uid
	}
	return nil
}

// targets lists a rule's crawlers (a user rule: the user's crawlers now)
// and the earliest time one of them was created.
func (o *owners) targets(r sqlstore.AlertRule) ([]int64, time.Time) {
	var ids []int64
	switch {
	case r.CrawlerID != nil:
		if _, ok := o.crawlers[*r.CrawlerID]; ok {
			ids = []int64{*r.CrawlerID}
		}
	case r.UserID != nil:
		ids = o.byUser[*r.UserID]
	}
	var created time.Time
	for _, id := range ids {
		if c := o.crawlers[id].CreatedAt; created.IsZero() || c.Before(created) {
			created = c
		}
	}
	return ids, created
}

func sum(counts map[int64]map[time.Time]int64, ids []int64, at time.Time) float64 {
	var n int64
	for _, id := range ids {
		n += counts[id][at]
	}
	return float64(n)
}

// EvaluateSpikes brings every spike rule's detector up to minute and
// fires the alerts of the minutes it took in. New rules are seeded and
// replayed first.
func (s *Service) EvaluateSpikes(ctx context.Context, term uint64, st *spikeState, minute time.Time) error {
	start := time.Now()
	defer func() { s.metrics.evaluation.WithLabelValues(api.AlertSpike).Observe(time.Since(start).Seconds()) }()
	s.evalMu.Lock()
	defer s.evalMu.Unlock()
	minute = minute.UTC().Truncate(time.Minute)
	rules, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return err
	}
	owners, err := s.readOwners(ctx)
	if err != nil {
		return err
	}
	live := map[int64]bool{}
	var cold []*spikeRule
	for _, r := range rules {
		if r.Kind != api.AlertSpike {
			continue
		}
		live[r.ID] = true
		sr := st.rules[r.ID]
		if sr == nil || minute.Sub(sr.last) > maxCatchUp*time.Minute || sr.rule.Sensitivity != r.Sensitivity {
			det, err := spike.New(spike.Config{Sensitivity: r.Sensitivity})
			if err != nil {
				s.logger.Warn("alert rule has a bad sensitivity", "rule_id", r.ID, "err", err)
				continue
			}
			sr = &spikeRule{rule: r, det: det}
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
	if err := s.warm(ctx, cold, owners, minute); err != nil {
		return err
	}
	// The minutes every rule still has to take in.
	from := minute
	for _, sr := range st.rules {
		if sr.last.Before(from) {
			from = sr.last.Add(time.Minute)
		}
	}
	counts, err := s.store.MinuteCounts(ctx, nil, from, minute.Add(time.Minute))
	if err != nil {
		return err
	}
	defer func() {
		// Once an hour the detectors' states go to SQL, for the next
		// leader.
		if minute.Sub(st.saved) < stateSaveEvery {
			return
		}
		st.saved = minute
		states := make(map[int64][]byte, len(st.rules))
		for id, sr := range st.rules {
			states[id] = sr.det.State()
		}
		if err := s.store.SaveRuleStates(ctx, term, states); err != nil && ctx.Err() == nil {
			s.logger.Warn("unable to save the spike detectors' states", "err", err)
		}
	}()
	for _, sr := range st.rules {
		ids, _ := owners.targets(sr.rule)
		for m := sr.last.Add(time.Minute); !m.After(minute); m = m.Add(time.Minute) {
			v := sum(counts, ids, m)
			before := sr.det.QuietUntil()
			a, fired := sr.det.Observe(m, v)
			sr.last = m
			quietUntil := sr.det.QuietUntil()
			switch {
			case fired:
				if err := s.fireSpike(ctx, term, sr.rule, ids, owners, a, quietUntil, counts); err != nil {
					return err
				}
			case quietUntil.After(before):
				// The event goes on: its cooldown is extended in SQL, so a
				// new leader stays quiet as this one does.
				if err := s.store.SetRuleQuietUntil(ctx, term, sr.rule.ID, quietUntil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// warm seeds, restores and replays the detectors of rules new to this
// leader, up to the minute before minute, with three reads for all of
// them. A detector with a saved state replays the last replay of minutes
// (its records are maxima, so minutes the state already holds change
// nothing), one without the whole day the hub keeps.
func (s *Service) warm(ctx context.Context, cold []*spikeRule, owners *owners, minute time.Time) error {
	if len(cold) == 0 {
		return nil
	}
	coldIDs := make([]int64, len(cold))
	for i, sr := range cold {
		coldIDs[i] = sr.rule.ID
	}
	states, err := s.store.RuleStates(ctx, coldIDs)
	if err != nil {
		return err
	}
	seedFrom := minute.Add(-seedDays * 24 * time.Hour).Truncate(time.Hour)
	replayFrom := func(id int64) time.Time {
		if len(states[id]) > 0 {
			return minute.Add(-replay).Truncate(time.Hour)
		}
		return minute.Add(-coldReplay).Truncate(time.Hour)
	}
	var all []int64
	seen := map[int64]bool{}
	for _, sr := range cold {
		ids, _ := owners.targets(sr.rule)
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				all = append(all, id)
			}
		}
	}
	var hours, minutes map[int64]map[time.Time]int64
	if len(all) > 0 {
		if hours, err = s.store.HourCounts(ctx, all, seedFrom, minute.Add(-replay).Truncate(time.Hour)); err != nil {
			return err
		}
		if minutes, err = s.store.MinuteCounts(ctx, all, minute.Add(-coldReplay).Truncate(time.Hour), minute); err != nil {
			return err
		}
	}
	for _, sr := range cold {
		ids, created := owners.targets(sr.rule)
		sr.last = minute.Add(-time.Minute)
		if len(ids) == 0 {
			continue
		}
		created = created.UTC()
		from := replayFrom(sr.rule.ID)
		for h := later(seedFrom, created.Truncate(time.Hour)); h.Before(from); h = h.Add(time.Hour) {
			sr.det.SeedHour(h, sum(hours, ids, h), 60)
		}
		sr.det.SetState(states[sr.rule.ID])
		for m := later(from, created.Truncate(time.Minute)); m.Before(minute); m = m.Add(time.Minute) {
			sr.det.Warm(m, sum(minutes, ids, m))
		}
		if q := sr.rule.QuietUntil; q != nil {
			sr.det.SetQuietUntil(*q)
		}
	}
	return nil
}

// fireSpike records a spike alert with its deliveries and wakes the
// sender.
func (s *Service) fireSpike(ctx context.Context, term uint64, r sqlstore.AlertRule, ids []int64,
	owners *owners, a spike.Alert, quietUntil time.Time, counts map[int64]map[time.Time]int64) error {
	detected := s.cfg.Now()
	c := content{RuleID: r.ID, Kind: api.AlertSpike, CrawlerID: r.CrawlerID, UserID: r.UserID, At: a.At,
		Observed: a.Observed, Expected: a.Expected}
	c.UserID = owners.userOf(r)
	// The crawler that counted most in the minute shows its comments.
	busiest, most := int64(0), int64(-1)
	for _, id := range ids {
		if n := counts[id][a.At]; n > most {
			busiest, most = id, n
		}
	}
	s.enrich(ctx, &c, r, busiest)
	return s.fire(ctx, term, r, sqlstore.Alert{RuleID: r.ID, Key: "spike:" + a.At.UTC().Format(time.RFC3339), Kind: api.AlertSpike,
		CrawlerID: c.CrawlerID, UserID: c.UserID, At: a.At, Observed: a.Observed, Expected: a.Expected, CreatedAt: detected}, c, &quietUntil, nil)
}

// enrich adds the top terms of the last hour and a few recent comments of
// crawler to an alert, within enrichTimeout: an alert goes out without them
// rather than late.
func (s *Service) enrich(ctx context.Context, c *content, r sqlstore.AlertRule, crawler int64) {
	ctx, cancel := context.WithTimeout(ctx, enrichTimeout)
	defer cancel()
	since := c.At.Add(-time.Hour)
	var err error
	if r.CrawlerID != nil {
		c.TopTerms, err = s.store.TermsSince(ctx, *r.CrawlerID, since, topTermsShown)
	} else if r.UserID != nil {
		c.TopTerms, err = s.store.UserTermsSince(ctx, *r.UserID, since, topTermsShown)
	}
	if err != nil {
		s.logger.Debug("alert without top terms", "rule_id", r.ID, "err", err)
	}
	_, hub, lerr := s.leading()
	if lerr != nil || hub == nil || crawler == 0 || len(c.Sample) > 0 {
		return
	}
	comments, err := hub.RecentComments(ctx, crawler, sampleSize)
	if err != nil {
		s.logger.Debug("alert without sample comments", "rule_id", r.ID, "err", err)
		return
	}
	for _, cm := range comments {
		c.Sample = append(c.Sample, sampleOf(cm))
	}
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sampleOf(cm api.Comment) api.AlertSample {
	return api.AlertSample{ID: cm.ID, CrawlerID: cm.CrawlerID, Author: cm.Author, Text: cut(cm.Text, sampleTextChars),
		URL: cm.URL, PublishedAt: cm.PublishedAt.UTC()}
}

// fire records an alert with its deliveries, fenced by term, and wakes the
// sender.
func (s *Service) fire(ctx context.Context, term uint64, r sqlstore.AlertRule, a sqlstore.Alert, c content, quietUntil, cursor *time.Time) error {
	a.Details = c.details()
	rec, fired, err := s.store.FireAlert(ctx, term, a, quietUntil, cursor, func(rec sqlstore.Alert) ([]sqlstore.AlertDelivery, error) {
		c.AlertID = rec.ID
		return s.deliveries(r, c)
	})
	if err != nil {
		return err
	}
	if fired {
		s.metrics.fired.WithLabelValues(a.Kind).Inc()
		s.logger.Info("alert fired", "alert_id", rec.ID, "rule_id", r.ID, "kind", a.Kind, "at", a.At, "observed", a.Observed, "expected", round(a.Expected))
		s.notify()
	}
	return nil
}

// previewSpan is how far back a preview runs the detector minute by
// minute: what the hub keeps of minutes.
const previewSpan = 24 * time.Hour

// Preview runs a spike rule not yet stored over its crawler's or user's
// stored activity: seeded with the week before, minute by minute over the
// last day.
func (s *Service) Preview(ctx context.Context, in api.AlertPreview) (api.AlertPreviewResult, error) {
	if in.Kind != "" && in.Kind != api.AlertSpike {
		return api.AlertPreviewResult{}, fmt.Errorf("%w: only spike rules can be previewed", ErrInvalid)
	}
	r := sqlstore.AlertRule{Kind: api.AlertSpike, Sensitivity: in.Sensitivity}
	switch {
	case in.CrawlerID > 0 && in.UserID <= 0:
		r.CrawlerID = &in.CrawlerID
	case in.UserID > 0 && in.CrawlerID <= 0:
		r.UserID = &in.UserID
	default:
		return api.AlertPreviewResult{}, fmt.Errorf("%w: give a crawler or a user", ErrInvalid)
	}
	det, err := spike.New(spike.Config{Sensitivity: r.Sensitivity})
	if err != nil {
		return api.AlertPreviewResult{}, fmt.Errorf("%w: sensitivity must be low, medium or high, got %q", ErrInvalid, in.Sensitivity)
	}
	owners, err := s.readOwners(ctx)
	if err != nil {
		return api.AlertPreviewResult{}, err
	}
	ids, created := owners.targets(r)
	if r.CrawlerID != nil && len(ids) == 0 {
		return api.AlertPreviewResult{}, fmt.Errorf("%w: crawler %d does not exist", ErrInvalid, in.CrawlerID)
	}
	until := s.cfg.Now().UTC().Truncate(time.Minute)
	since := until.Add(-previewSpan)
	out := api.AlertPreviewResult{Since: since, Until: until, Alerts: []api.BacktestAlert{}}
	if len(ids) == 0 {
		return out, nil
	}
	seedFrom := since.Add(-seedDays * 24 * time.Hour).Truncate(time.Hour)
	hours, err := s.store.HourCounts(ctx, ids, seedFrom, since.Truncate(time.Hour))
	if err != nil {
		return api.AlertPreviewResult{}, err
	}
	minutes, err := s.store.MinuteCounts(ctx, ids, since.Truncate(time.Hour), until)
	if err != nil {
		return api.AlertPreviewResult{}, err
	}
	created = created.UTC()
	for h := later(seedFrom, created.Truncate(time.Hour)); h.Before(since.Truncate(time.Hour)); h = h.Add(time.Hour) {
		det.SeedHour(h, sum(hours, ids, h), 60)
	}
	for m := later(since.Truncate(time.Hour), created.Truncate(time.Minute)); m.Before(until); m = m.Add(time.Minute) {
		if a, ok := det.Observe(m, sum(minutes, ids, m)); ok && !m.Before(since) {
			out.Alerts = append(out.Alerts, api.BacktestAlert{At: a.At, Observed: a.Observed, Expected: round(a.Expected)})
		}
	}
	return out, nil
}
