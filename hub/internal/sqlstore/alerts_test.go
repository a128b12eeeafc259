package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"
)

func TestStore_AlertRulesBelongToTheirCrawlerOrUser(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		ctx := context.Background()
		u := mustUser(t, s, "acme", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "golang"))
		missing := int64(9999)
		for _, r := range []AlertRule{{CrawlerID: &missing}, {UserID: &missing}, {}} {
			r.Kind, r.Sensitivity, r.Channel, r.Target = "spike", "medium", "webhook", "https://example.com/hook"
			if _, err := s.CreateAlertRule(ctx, r); !errors.Is(err, ErrInvalid) {
				t.Errorf("CreateAlertRule(%+v) = %v, want ErrInvalid", r, err)
			}
		}
		rules, _ := s.ListAlertRules(ctx)
		if len(rules) != 0 {
			t.Fatalf("%d rules stored by refused creations", len(rules))
		}
		byCrawler, err := s.CreateAlertRule(ctx, AlertRule{CrawlerID: &c.ID, Kind: "spike", Sensitivity: "medium", Channel: "webhook", Target: "https://example.com/a", Secret: "s3"})
		if err != nil {
			t.Fatal(err)
		}
		byUser, err := s.CreateAlertRule(ctx, AlertRule{UserID: &u.ID, Kind: "spike", Sensitivity: "low", Channel: "slack", Target: "https://hooks.example.com/x"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetAlertRule(ctx, byCrawler.ID)
		if err != nil || got.Secret != "s3" || *got.CrawlerID != c.ID || got.UserID != nil {
			t.Fatalf("GetAlertRule = %+v, %v", got, err)
		}
		// Deleting the crawler deletes its rule; the user's stays.
		if err := s.DeleteCrawler(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetAlertRule(ctx, byCrawler.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("rule of a deleted crawler: %v, want ErrNotFound", err)
		}
		if err := s.DeleteUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetAlertRule(ctx, byUser.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("rule of a deleted user: %v, want ErrNotFound", err)
		}
		if err := s.DeleteAlertRule(ctx, byUser.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("DeleteAlertRule of a gone rule = %v, want ErrNotFound", err)
		}
	})
}

func TestStore_AlertsAreRecordedOnceAndFencedByTheTerm(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		ctx := context.Background()
		u := mustUser(t, s, "acme", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "golang"))
		r, err := s.CreateAlertRule(ctx, AlertRule{CrawlerID: &c.ID, Kind: "spike", Sensitivity: "medium", Channel: "webhook", Target: "https://example.com/a"})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2025, 3, 3, 9, 30, 0, 0, time.UTC)
		alert := Alert{RuleID: r.ID, Key: "spike:" + at.Format(time.RFC3339), Kind: "spike", CrawlerID: &c.ID, At: at, Observed: 80, Expected: 9}
		one := func(a Alert) ([]AlertDelivery, error) {
			return []AlertDelivery{{ID: "d-" + a.Key, Channel: "webhook", Target: "https://example.com/a", Body: `{"x":1}`, GiveUpAt: at.Add(24 * time.Hour)}}, nil
		}
		// No hub leads: nothing is written.
		if _, _, err := s.FireAlert(ctx, 1, alert, nil, nil, one); !errors.Is(err, ErrFenced) {
			t.Fatalf("FireAlert with no leader = %v, want ErrFenced", err)
		}
		lead, err := s.ForceLeadership(ctx, "hub-a", "http://a")
		if err != nil {
			t.Fatal(err)
		}
		quiet := at.Add(30 * time.Minute)
		got, fired, err := s.FireAlert(ctx, lead.Term, alert, &quiet, nil, one)
		if err != nil || !fired || got.ID == 0 {
			t.Fatalf("FireAlert = %+v, %v, %v", got, fired, err)
		}
		if _, fired, err := s.FireAlert(ctx, lead.Term, alert, nil, nil, one); err != nil || fired {
			t.Fatalf("FireAlert of the same key again = %v, %v; want not fired", fired, err)
		}
		rule, _ := s.GetAlertRule(ctx, r.ID)
		if rule.QuietUntil == nil || !rule.QuietUntil.Equal(quiet) {
			t.Fatalf("quiet_until = %v, want %s", rule.QuietUntil, quiet)
		}
		// Another hub takes over: the old term writes nothing more.
		next, err := s.ForceLeadership(ctx, "hub-b", "http://b")
		if err != nil {
			t.Fatal(err)
		}
		other := alert
		other.Key = "spike:later"
		if _, _, err := s.FireAlert(ctx, lead.Term, other, nil, nil, one); !errors.Is(err, ErrFenced) {
			t.Fatalf("FireAlert by a deposed term = %v, want ErrFenced", err)
		}

		due, err := s.DueDeliveries(ctx, time.Now(), 10)
		if err != nil || len(due) != 1 || due[0].Attempts != 0 || due[0].RuleID != r.ID {
			t.Fatalf("DueDeliveries = %+v, %v; want the one delivery", due, err)
		}
		d := due[0]
		// A delivery put off (its receiver busy or failing) is not due
		// until then and keeps its attempts; a deposed term cannot.
		if ok, err := s.DeferDelivery(ctx, lead.Term, d.ID, 0, time.Now(), time.Now().Add(time.Hour)); err != nil || ok {
			t.Fatalf("defer by a deposed term = %v, %v; want refused", ok, err)
		}
		if ok, err := s.DeferDelivery(ctx, next.Term, d.ID, 0, time.Now(), time.Now().Add(time.Hour)); err != nil || !ok {
			t.Fatalf("defer = %v, %v", ok, err)
		}
		if due, _ := s.DueDeliveries(ctx, time.Now(), 10); len(due) != 0 {
			t.Fatalf("a deferred delivery is due at once: %+v", due)
		}
		if due, _ := s.DueDeliveries(ctx, time.Now().Add(2*time.Hour), 10); len(due) != 1 || due[0].Attempts != 0 {
			t.Fatalf("after its deferral: %+v, want the delivery with no attempt counted", due)
		}
		if ok, err := s.DeferDelivery(ctx, next.Term, d.ID, 0, time.Now().Add(2*time.Hour), time.Now()); err != nil || !ok {
			t.Fatalf("defer back to now = %v, %v", ok, err)
		}
		retry := time.Now().Add(time.Minute)
		if ok, err := s.ClaimDelivery(ctx, lead.Term, d.ID, 0, time.Now(), retry); err != nil || ok {
			t.Fatalf("claim by a deposed term = %v, %v; want refused", ok, err)
		}
		if ok, err := s.ClaimDelivery(ctx, next.Term, d.ID, 0, time.Now(), retry); err != nil || !ok {
			t.Fatalf("claim = %v, %v", ok, err)
		}
		if ok, _ := s.ClaimDelivery(ctx, next.Term, d.ID, 0, time.Now(), retry); ok {
			t.Fatal("a delivery was claimed twice for one attempt")
		}
		if due, _ := s.DueDeliveries(ctx, time.Now(), 10); len(due) != 0 {
			t.Fatalf("a claimed delivery is due again at once: %+v", due)
		}
		if err := s.FinishDelivery(ctx, d.ID, 1, DeliveryOutcome{State: DeliveryDelivered, Status: 200, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		events, err := s.AlertEvents(ctx, r.ID, 10)
		if err != nil || len(events) != 1 || len(events[0].Deliveries) != 1 {
			t.Fatalf("AlertEvents = %+v, %v", events, err)
		}
		if dd := events[0].Deliveries[0]; dd.State != DeliveryDelivered || dd.Attempts != 1 || dd.DeliveredAt == nil || dd.ID != d.ID {
			t.Fatalf("delivery after the attempt = %+v", dd)
		}
	})
}

func TestStore_AlertModelsMatchTheSchema(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		for _, model := range []any{&AlertRule{}, &Alert{}, &AlertDelivery{}} {
			stmt := &gorm.Statement{DB: s.db}
			if err := stmt.Parse(model); err != nil {
				t.Fatal(err)
			}
			for _, f := range stmt.Schema.Fields {
				if f.DBName != "" && !s.db.Migrator().HasColumn(model, f.DBName) {
					t.Errorf("table %s has no column %s: add a migration", stmt.Schema.Table, f.DBName)
				}
			}
		}
	})
}
