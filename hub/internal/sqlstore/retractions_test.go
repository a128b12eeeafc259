package sqlstore

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestStore_RetractionLogRoundTripAndPrune(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		ctx := context.Background()
		if head, err := s.RetractionHead(ctx); err != nil || head != 0 {
			t.Fatalf("empty log's end: %d, %v", head, err)
		}
		edited := time.Date(2026, 7, 4, 14, 38, 0, 0, time.UTC)
		in := []api.Retraction{
			{Op: api.RetractDelete, Source: api.SourceBluesky, ID: "at://did:plc:a/app.bsky.feed.post/1", At: edited, Reason: "bluesky delete commit"},
			{Op: api.RetractAccount, Source: api.SourceBluesky, Author: "did:plc:b", Status: api.AccountTakendown, At: edited},
			{Op: api.RetractUpdate, Source: api.SourceMastodon, ID: "https://m.example/statuses/9", Text: "edited", Links: []string{"https://x.example/"}, EditedAt: edited, At: edited},
		}
		var rows []Retraction
		for _, r := range in {
			row, err := RetractionRow(r, "node-1")
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row)
		}
		logged, err := s.AppendRetractions(ctx, rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(logged) != 3 || logged[0].ID >= logged[1].ID || logged[1].ID >= logged[2].ID {
			t.Fatalf("ids %d %d %d: want increasing", logged[0].ID, logged[1].ID, logged[2].ID)
		}
		got, err := s.RetractionsAfter(ctx, logged[0].ID, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("after the first: %d rows, %v", len(got), err)
		}
		for i, r := range got {
			a, want := r.API(), in[i+1]
			want.Seq = uint64(logged[i+1].ID)
			if a.Seq != want.Seq || a.Op != want.Op || a.Source != want.Source || a.ID != want.ID || a.Author != want.Author ||
				a.Status != want.Status || a.Text != want.Text || !slices.Equal(a.Links, want.Links) || !a.EditedAt.Equal(want.EditedAt) || !a.At.Equal(want.At) {
				t.Errorf("read back %+v, want %+v", a, want)
			}
		}
		if head, _ := s.RetractionHead(ctx); head != logged[2].ID {
			t.Errorf("log's end %d, want %d", head, logged[2].ID)
		}
		if n, err := s.PruneRetractions(ctx, time.Now().Add(time.Hour)); err != nil || n != 3 {
			t.Errorf("pruned %d, %v; want 3", n, err)
		}
	})
}

func TestStore_RetentionAndComplianceRuns(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		ctx := context.Background()
		u := mustUser(t, s, "u", 0)
		if got, err := s.SetUserRetention(ctx, u.ID, 86400); err != nil || got.RetentionSeconds != 86400 {
			t.Fatalf("user retention: %+v, %v", got, err)
		}
		if _, err := s.SetUserRetention(ctx, u.ID, -1); err == nil {
			t.Error("a negative retention was taken")
		}
		c := newCrawler(u.ID, "golang")
		c.RetentionSeconds = 30 * 86400
		c = mustCrawler(t, s, c)
		back, err := s.GetCrawler(ctx, c.ID)
		if err != nil || back.RetentionSeconds != 30*86400 {
			t.Fatalf("crawler retention read back: %d, %v", back.RetentionSeconds, err)
		}
		up, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.RetentionSeconds = 0; return nil })
		if err != nil || up.RetentionSeconds != 0 || up.Version != back.Version+1 {
			t.Fatalf("retention removed: %+v, %v", up, err)
		}
		run, err := s.StartComplianceRun(ctx, "twitter", "node-1")
		if err != nil {
			t.Fatal(err)
		}
		run.Status, run.JobID, run.Checked, run.Deleted = "completed", "1382010023425675264", 120, 3
		if err := s.FinishComplianceRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		runs, err := s.ComplianceRuns(ctx, 5)
		if err != nil || len(runs) != 1 || runs[0].Status != "completed" || runs[0].Deleted != 3 || runs[0].FinishedAt == nil {
			t.Errorf("runs %+v, %v", runs, err)
		}
	})
}

func TestStore_ScrubAlertSamples(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		ctx := context.Background()
		samples := []api.AlertSample{
			{ID: "at://did:plc:gone/app.bsky.feed.post/1", Text: "deleted at its source"},
			{ID: "at://did:plc:down/app.bsky.feed.post/2", Author: "down.example", Text: "of a taken-down account"},
			{ID: "tw:3", Author: "Forgotten", Text: "of a forgotten author"},
			{ID: "tw:4", Author: "stays", Text: "stays"},
		}
		details, _ := json.Marshal(map[string]any{"top_terms": []string{"go"}, "sample": samples})
		a := Alert{Key: "k", Kind: "match", At: time.Now(), Details: string(details), CreatedAt: time.Now()}
		if err := s.db.Session(&gorm.Session{SkipHooks: true}).Exec(`INSERT INTO alert_rules (id, kind, query, sensitivity, channel, target, secret, created_at) VALUES (1, 'match', '', 'medium', 'webhook', 'http://x', '', ?)`, time.Now()).Error; err != nil {
			t.Fatal(err)
		}
		a.RuleID = 1
		if err := s.db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		n, err := s.ScrubAlertSamples(ctx, []string{samples[0].ID}, []string{"did:plc:down", "forgotten"})
		if err != nil || n != 1 {
			t.Fatalf("scrubbed %d, %v", n, err)
		}
		var back Alert
		if err := s.db.First(&back, a.ID).Error; err != nil {
			t.Fatal(err)
		}
		var d struct {
			TopTerms []string          `json:"top_terms"`
			Sample   []api.AlertSample `json:"sample"`
		}
		if err := json.Unmarshal([]byte(back.Details), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Sample) != 1 || d.Sample[0].ID != "tw:4" || len(d.TopTerms) != 1 {
			t.Errorf("details after the scrub: %s", back.Details)
		}
	})
}
