package sqlstore

import (
	"gorm.io/gorm"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// crawlerV4 is the crawler row as migration 4 reads and rewrites it.
type crawlerV4 struct {
	ID        int64
	Source    string
	Query     string
	Keywords  string
	QueryUUID string
	Version   int64
}

func (crawlerV4) TableName() string { return "crawlers" }

// migrateV4 rewrites every crawler into the query language's canonical
// form. Before it a search query was a newline-separated list of terms (a
// comma list on the command line) and an rss filter a list of keywords;
// the language reads such a list as the OR of its terms, so the rewrite
// keeps what each crawler matches (a keyword of several words, once a
// phrase, now needs its words anywhere in the text: the list's term rule),
// and a search crawler's keywords join its query as an AND.
// A crawler whose canonical form hashes to a new query uuid gets it, with
// its version raised so the hub re-sends it: its subscriber moves once,
// and from then on it shares a node and a data source with every equal
// query however written. A row the language cannot read is left as it
// was: its spawn reports the parse error on the crawler.
func migrateV4(tx *gorm.DB) error {
	var rows []crawlerV4
	// Named columns: the table gains columns after this migration, and a
	// statement cached with * would change its result type.
	if err := tx.Select("id", "source", "query", "keywords", "query_uuid", "version").Find(&rows).Error; err != nil {
		return err
	}
	for _, r := range rows {
		next, ok := canonicalV4(r)
		if !ok || next == r {
			continue
		}
		next.Version = r.Version + 1
		if err := tx.Model(&crawlerV4{}).Where("id = ?", r.ID).Updates(map[string]any{
			"query": next.Query, "keywords": next.Keywords, "query_uuid": next.QueryUUID, "version": next.Version,
		}).Error; err != nil {
			return err
		}
	}
	return nil
}

// canonicalV4 is r in the language's canonical form; false when r does
// not parse.
func canonicalV4(r crawlerV4) (crawlerV4, bool) {
	if readsURLs(r.Source) {
		if r.Keywords == "" {
			return r, true
		}
		f, err := query.ParseList(splitList(r.Keywords))
		if err != nil {
			return r, false
		}
		r.Keywords = f.String()
		return r, true
	}
	q, err := query.ParseList(splitList(r.Query))
	if err != nil {
		return r, false
	}
	if r.Keywords != "" {
		// A search crawler's keywords filtered what its terms found: the
		// language says both in one query.
		f, err := query.ParseList(splitList(r.Keywords))
		if err != nil {
			return r, false
		}
		if q, err = query.Parse("(" + q.String() + ") (" + f.String() + ")"); err != nil {
			return r, false
		}
	}
	r.Query, r.Keywords, r.QueryUUID = q.String(), "", q.UUID(r.Source).String()
	return r, true
}

// readsURLs says whether a kind's query is a list of URLs, by the builtin
// declarations: migrations run before any spawn registers.
func readsURLs(source string) bool {
	info, ok := builtinSources().Lookup(source)
	return ok && info.Query == api.QueryURLs
}
