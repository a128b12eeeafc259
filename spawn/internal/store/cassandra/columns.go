package cassandra

import (
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// bodyCols are the columns a comment row holds besides its key and its
// thread, the same in comments and comments_by_thread, in the order
// bodyArgs binds them and body.dest scans them. One list, so a field added
// to api.Comment is added to every write and read at once.
const bodyCols = `source, author, author_id, text, url, fetched_at, matched, lang, reply_to, reposts, likes, links, repost_of, edited_at, unreadable_date`

// bodyColumnsAdded are the body columns added to the tables after their
// first release, with their types: ALTER TABLE … ADD IF NOT EXISTS brings
// an older keyspace up to date.
var bodyColumnsAdded = [][2]string{
	{"lang", "text"},
	{"reply_to", "text"},
	{"reposts", "bigint"},
	{"likes", "bigint"},
	{"author_id", "text"},
	{"links", "frozen<list<text>>"},
	{"repost_of", "text"},
	{"edited_at", "timestamp"},
	{"unreadable_date", "text"},
}

// addColumns is the CQL that adds bodyColumnsAdded to table where missing.
func addColumns(table string) []string {
	out := make([]string, len(bodyColumnsAdded))
	for i, col := range bodyColumnsAdded {
		out[i] = `ALTER TABLE ` + table + ` ADD IF NOT EXISTS ` + col[0] + ` ` + col[1]
	}
	return out
}

// placeholders is one bind marker per column of cols.
func placeholders(cols string) string {
	return strings.Repeat("?, ", strings.Count(cols, ",")) + "?"
}

// bodyArgs binds a comment's body columns (bodyCols).
func bodyArgs(c *api.Comment) []any {
	reposts, likes := engagementArgs(c.Engagement)
	return []any{c.Source, c.Author, c.AuthorID, c.Text, c.URL, ms(c.FetchedAt), frozenList(c.Matched),
		c.Lang, c.ReplyTo, reposts, likes, frozenList(c.Links), c.RepostOf, editedArg(c.EditedAt), textArg(c.UnreadableDate)}
}

// editedArg binds edited_at: unset for a comment never edited, so no cell
// (and no Cassandra tombstone) is written.
func editedArg(t time.Time) any {
	if t.IsZero() {
		return gocql.UnsetValue
	}
	return ms(t)
}

// textArg binds an optional text column: unset when empty, so no cell is
// written.
func textArg(s string) any {
	if s == "" {
		return gocql.UnsetValue
	}
	return s
}

// frozenList binds a frozen list: empty rather than null, since a null
// cell is a tombstone.
func frozenList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// body scans a comment's body columns into c.
type body struct {
	c              *api.Comment
	reposts, likes *int64
	edited         *time.Time
	unreadable     *string
}

// dest lists the scan destinations of bodyCols.
func (b *body) dest() []any {
	c := b.c
	return []any{&c.Source, &c.Author, &c.AuthorID, &c.Text, &c.URL, &c.FetchedAt, &c.Matched,
		&c.Lang, &c.ReplyTo, &b.reposts, &b.likes, &c.Links, &c.RepostOf, &b.edited, &b.unreadable}
}

// finish normalises what was scanned: UTC times, nil for empty lists,
// engagement only when both counts are known.
func (b *body) finish() {
	c := b.c
	c.Engagement = engagementOf(b.reposts, b.likes)
	c.PublishedAt, c.FetchedAt = c.PublishedAt.UTC(), c.FetchedAt.UTC()
	if b.edited != nil && !b.edited.IsZero() {
		c.EditedAt = b.edited.UTC()
	}
	if b.unreadable != nil {
		c.UnreadableDate = *b.unreadable
	}
	if len(c.Matched) == 0 {
		c.Matched = nil
	}
	if len(c.Links) == 0 {
		c.Links = nil
	}
}

// scanComment reads one row of columns "comment_id, published_at, thread_id,
// " + bodyCols (threaded) or "comment_id, published_at, " + bodyCols into c.
func scanComment(it *gocql.Iter, c *api.Comment, threaded bool) bool {
	b := body{c: c}
	dest := []any{&c.ID, &c.PublishedAt}
	if threaded {
		dest = append(dest, &c.ThreadID)
	}
	if !it.Scan(append(dest, b.dest()...)...) {
		return false
	}
	b.finish()
	return true
}
