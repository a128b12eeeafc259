package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// testWaitPoll is how often Test reads its delivery's state.
const testWaitPoll = 50 * time.Millisecond

// EventView is an alert as the API shows it.
func EventView(a sqlstore.AlertWithDeliveries) api.AlertEvent {
	var d details
	_ = json.Unmarshal([]byte(a.Details), &d)
	out := api.AlertEvent{ID: a.ID, RuleID: a.RuleID, Kind: a.Kind, CrawlerID: a.CrawlerID, UserID: a.UserID,
		At: a.At.UTC(), Observed: a.Observed, Expected: round(a.Expected), TopTerms: orEmpty(d.TopTerms),
		Sample: orEmpty(d.Sample), Test: a.Test, CreatedAt: a.CreatedAt.UTC(), Deliveries: []api.AlertDelivery{}}
	for _, dl := range a.Deliveries {
		v := api.AlertDelivery{ID: dl.ID, Channel: dl.Channel, State: dl.State, Attempts: dl.Attempts,
			LastStatus: dl.LastStatus, LastError: dl.LastError}
		if dl.State == sqlstore.DeliveryPending {
			t := dl.NextAttemptAt.UTC()
			v.NextAttemptAt = &t
		}
		if dl.DeliveredAt != nil {
			t := dl.DeliveredAt.UTC()
			v.DeliveredAt = &t
		}
		out.Deliveries = append(out.Deliveries, v)
	}
	return out
}

// Events lists a rule's latest alerts (n 0: the default count).
func (s *Service) Events(ctx context.Context, ruleID int64, n int) ([]api.AlertEvent, error) {
	if n <= 0 {
		n = eventsShown
	}
	n = min(n, maxEventsShown)
	rows, err := s.store.AlertEvents(ctx, ruleID, n)
	if err != nil {
		return nil, err
	}
	out := make([]api.AlertEvent, len(rows))
	for i, r := range rows {
		out[i] = EventView(r)
	}
	return out, nil
}

// Test sends a test alert through a rule's channel: it is recorded and
// delivered as any alert is (signed, with a delivery id), but attempted
// once, not retried. It returns once the attempt has an outcome.
func (s *Service) Test(ctx context.Context, r sqlstore.AlertRule) (api.AlertEvent, error) {
	term, _, err := s.leading()
	if err != nil {
		return api.AlertEvent{}, err
	}
	now := s.cfg.Now().UTC().Truncate(time.Second)
	c := content{RuleID: r.ID, Kind: r.Kind, CrawlerID: r.CrawlerID, UserID: r.UserID, At: now, Test: true, Query: r.Query}
	crawler := int64(0)
	if r.CrawlerID != nil {
		crawler = *r.CrawlerID
		if owners, err := s.readOwners(ctx); err == nil {
			c.UserID = owners.userOf(r)
		}
	}
	s.enrich(ctx, &c, r, crawler)
	a := sqlstore.Alert{RuleID: r.ID, Key: "test:" + uuid.NewString(), Kind: r.Kind, CrawlerID: c.CrawlerID, UserID: c.UserID,
		At: now, Test: true, CreatedAt: now, Details: c.details()}
	var id int64
	rec, _, err := s.store.FireAlert(ctx, term, a, nil, nil, func(rec sqlstore.Alert) ([]sqlstore.AlertDelivery, error) {
		c.AlertID, id = rec.ID, rec.ID
		ds, err := s.deliveries(r, c)
		for i := range ds {
			ds[i].GiveUpAt = now // one attempt: a failure is final
		}
		return ds, err
	})
	if err != nil {
		return api.AlertEvent{}, err
	}
	s.metrics.fired.WithLabelValues(r.Kind).Inc()
	s.notify()
	wait, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout+claimMargin+time.Second)
	defer cancel()
	for {
		rows, err := s.store.AlertEvents(wait, r.ID, 20)
		if err != nil {
			return api.AlertEvent{}, fmt.Errorf("alert: test of rule %d: %w", r.ID, err)
		}
		for _, row := range rows {
			if row.ID == rec.ID && id != 0 && len(row.Deliveries) > 0 && row.Deliveries[0].State != sqlstore.DeliveryPending {
				return EventView(row), nil
			}
		}
		if !sleepUntil(wait, time.Now().Add(testWaitPoll), time.Now()) {
			return api.AlertEvent{}, fmt.Errorf("alert: test of rule %d: no outcome within %s", r.ID, s.cfg.AttemptTimeout+claimMargin)
		}
	}
}
