package sqlstore

import (
	"context"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// TestMigrateV4_RewritesQueriesInCanonicalForm writes crawlers as hubs
// before the query language stored them and checks the rewrite on both
// databases.
func TestMigrateV4_RewritesQueriesInCanonicalForm(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "legacy", 0)
		legacyUUID := func(source string, terms ...string) string {
			id, err := query.LegacyUUID(source, terms)
			if err != nil {
				t.Fatal(err)
			}
			return id.String()
		}
		cases := []struct {
			name                    string
			row                     Crawler
			wantQuery, wantKeywords string
			moved                   bool // a new query uuid, hence a new version
		}{
			{"comma list keeps its uuid",
				Crawler{Source: "twitter", Query: List{"golang", "new release"}, QueryUUID: legacyUUID("twitter", "golang", "new release")},
				"golang OR new release", "", false},
			{"sorted words move once",
				Crawler{Source: "stream", Query: List{"release notes"}, QueryUUID: legacyUUID("stream", "release notes")},
				"notes release", "", true},
			{"search keywords join the query",
				Crawler{Source: "twitter", Query: List{"golang"}, Keywords: List{"java", "rust"}, QueryUUID: legacyUUID("twitter", "golang")},
				"golang (java OR rust)", "", true},
			{"rss keywords become a filter",
				Crawler{Source: "rss", Query: List{"https://example.com/feed"}, Keywords: List{"go", "black widow"}, QueryUUID: legacyUUID("rss", "https://example.com/feed")},
				"https://example.com/feed", "black widow OR go", false},
			{"unreadable row kept",
				Crawler{Source: "twitter", Query: List{`say "hi`}, QueryUUID: legacyUUID("twitter", `say "hi`)},
				`say "hi`, "", false},
		}
		for i := range cases {
			c := &cases[i]
			c.row.UserID, c.row.Enabled, c.row.Version = u.ID, true, 3
			if err := s.db.WithContext(ctx).Create(&c.row).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.WithContext(ctx).Transaction(migrateV4); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.GetCrawler(ctx, c.row.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Query.text() != c.wantQuery || got.Keywords.text() != c.wantKeywords {
					t.Fatalf("query %q keywords %q, want %q and %q", got.Query, got.Keywords, c.wantQuery, c.wantKeywords)
				}
				if moved := got.QueryUUID != c.row.QueryUUID; moved != c.moved {
					t.Fatalf("uuid %s → %s: moved=%v, want %v", c.row.QueryUUID, got.QueryUUID, moved, c.moved)
				}
				if c.row.Source != "rss" && c.wantQuery != c.row.Query.text() {
					if q, err := query.Parse(got.Query.text()); err != nil || q.UUID(got.Source).String() != got.QueryUUID {
						t.Fatalf("stored uuid %s is not the canonical query's", got.QueryUUID)
					}
				}
				changed := got.Query.text() != c.row.Query.text() || got.Keywords.text() != c.row.Keywords.text() || got.QueryUUID != c.row.QueryUUID
				if wantVersion := c.row.Version + map[bool]int64{true: 1}[changed]; got.Version != wantVersion {
					t.Fatalf("version %d, want %d", got.Version, wantVersion)
				}
			})
		}
	})
}
