// Package sqlstore is the hub's SQL database: users, crawlers and the usage
// increments already applied. It is the only code in the system that touches
// SQL. SQLite (embedded, the default) and PostgreSQL are both supported
// through gorm.
package sqlstore

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// ErrNotFound is returned when a user or crawler id does not exist.
var ErrNotFound = errors.New("sqlstore: not found")

// ErrInvalid wraps validation failures (bad source, empty name, negative
// limit, unknown user for a crawler).
var ErrInvalid = errors.New("sqlstore: invalid")

// User is a customer. Email and Billing are confidential: they never leave
// the hub (the admin API's api.User has no such fields).
type User struct {
	ID           int64  `gorm:"primaryKey"`
	Name         string `gorm:"size:200;not null"`
	Email        string `gorm:"size:320"`
	Billing      string `gorm:"size:200"`
	CommentLimit int64  `gorm:"not null;default:0"` // 0 = no limit
	Usage        int64  `gorm:"not null;default:0"`
	ChangeSeq    int64  `gorm:"not null;default:0"` // the last change of the row (changes.go); usage is none
	// RetentionSeconds is the default retention of the user's crawlers
	// that set none; 0 keeps their comments.
	RetentionSeconds int64 `gorm:"not null;default:0"`
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Crawler is one crawler configuration. Query and Keywords are in
// canonical form (pkg/query): a feed crawler's query is its feed URLs and
// its keywords a filter of one query; any other crawler's query is one
// query and it has no keywords.
type Crawler struct {
	ID     int64 `gorm:"primaryKey"`
	UserID int64 `gorm:"not null;index"`
	// Name is what people call the crawler; "" for none.
	Name         string `gorm:"size:400;not null;default:''"`
	Source       string `gorm:"size:16;not null"`
	Query        List   `gorm:"type:text;not null"`
	Keywords     List   `gorm:"type:text;not null;default:''"`
	QueryUUID    string `gorm:"size:36;not null;index"`
	CommentLimit int64  `gorm:"not null;default:0"` // 0 = no limit
	Usage        int64  `gorm:"not null;default:0"`
	Enabled      bool   `gorm:"not null;default:true"`
	LimitReached bool   `gorm:"not null;default:false"`
	// Version increases with every configuration change, so a spawn can tell
	// a changed subscriber from a re-sent one.
	Version int64 `gorm:"not null;default:1"`
	// CursorAt is the published time of the newest comment counted for the
	// crawler; a subscriber moved to another node starts after it.
	CursorAt *time.Time
	// CursorPos is the highest source log position counted for the
	// crawler (a Jetstream time_us), 0 for sources without one.
	CursorPos int64 `gorm:"not null;default:0"`
	// CursorIDs are, by data source key, the newest source id counted for
	// the crawler (an X post id, a Mastodon status id local to its
	// instance), so a subscriber moved to another node fills its gap from
	// there (api.Cursor.Sources).
	CursorIDs SourceIDs `gorm:"column:cursor_ids;type:text;not null;default:''"`
	// ChangeSeq is the change that last created or changed the row
	// (changes.go); usage and cursors do not change it.
	ChangeSeq int64 `gorm:"not null;default:0"`
	// RetentionSeconds keeps the crawler's comments this long after their
	// published time; 0 takes its user's default.
	RetentionSeconds int64 `gorm:"not null;default:0"`
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// CanonicalQuery is the crawler's query as one text, as crawler show
// reports it (query_canonical): a feed crawler's URLs comma-separated,
// any other crawler's query as stored (one text in the query language).
func (c *Crawler) CanonicalQuery() string { return strings.Join(c.Query, ",") }

// CanonicalKeywords is the crawler's keyword filter as one text, "" for
// none.
func (c *Crawler) CanonicalKeywords() string { return c.Keywords.text() }

// List is a list of texts kept in one text column, one per line (no text
// of a canonical query or feed URL holds a newline). The store alone joins
// and splits it: everyone else reads and writes a []string.
type List []string

// text is the list as its column holds it.
func (l List) text() string { return strings.Join(l, "\n") }

// splitList reads a list from its column's text; "" is no list.
func splitList(s string) List {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Value writes the list to its column.
func (l List) Value() (driver.Value, error) { return l.text(), nil }

// Scan reads the list from its column.
func (l *List) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*l = splitList(v)
	case []byte:
		*l = splitList(string(v))
	case nil:
		*l = nil
	default:
		return fmt.Errorf("sqlstore: unable to read a list from %T", src)
	}
	return nil
}

// SourceIDs are a crawler's newest source ids by data source key, kept in
// their column as a JSON object ("" for none). A value is never changed in
// place: Merge returns a new one.
type SourceIDs map[string]string

// Value writes the ids to their column.
func (m SourceIDs) Value() (driver.Value, error) {
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(map[string]string(m))
	return string(b), err
}

// Scan reads the ids from their column.
func (m *SourceIDs) Scan(src any) error {
	var text string
	switch v := src.(type) {
	case string:
		text = v
	case []byte:
		text = string(v)
	case nil:
	default:
		return fmt.Errorf("sqlstore: unable to read source ids from %T", src)
	}
	*m = nil
	if text == "" {
		return nil
	}
	var ids map[string]string
	if err := json.Unmarshal([]byte(text), &ids); err != nil {
		return fmt.Errorf("sqlstore: unable to read source ids: %w", err)
	}
	*m = ids
	return nil
}

// Merge returns the ids of m and more, each key's later id kept
// (api.LaterSourceID); m itself is returned when more adds nothing.
func (m SourceIDs) Merge(more map[string]string) SourceIDs {
	changed := false
	for k, v := range more {
		if v != "" && api.LaterSourceID(m[k], v) != m[k] {
			changed = true
			break
		}
	}
	if !changed {
		return m
	}
	out := make(SourceIDs, len(m)+len(more))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range more {
		if v != "" {
			out[k] = api.LaterSourceID(out[k], v)
		}
	}
	return out
}

// AppliedIncrement records a usage increment the hub has applied, so a
// repeated one is recognised and ignored.
type AppliedIncrement struct {
	NodeID    string    `gorm:"primaryKey;size:64"`
	Seq       uint64    `gorm:"primaryKey;autoIncrement:false"`
	CrawlerID int64     `gorm:"not null"`
	Count     int64     `gorm:"not null"`
	AppliedAt time.Time `gorm:"not null;index"`
	// Recovered marks an increment counted from the store on behalf of a
	// lost node (ApplyRecovered) rather than reported by the node.
	Recovered bool `gorm:"not null;default:false"`
}
