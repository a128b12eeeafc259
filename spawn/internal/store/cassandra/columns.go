package cassandra

import (
	"math"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// bodyCols are the columns a comment row holds besides its key, its
// thread and its indexes' own columns (author_key, terms), in the order
// bodyArgs binds them and body.dest scans them (an earlier release's
// comments_by_thread holds the same). One list, so a field added to
// api.Comment is added to every write and read at once.
const bodyCols = `source, author, author_id, text, url, fetched_at, matched, lang, reply_to, reposts, likes, links, repost_of, edited_at, unreadable_date, lang_detected, sentiment_label, sentiment_score`

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
	{"lang_detected", "boolean"},
	{"sentiment_label", "text"},
	{"sentiment_score", "float"},
}

// addColumns is the CQL that adds bodyColumnsAdded to table where missing.
func addColumns(table string) []string {
	out := make([]string, len(bodyColumnsAdded))
	for i, col := range bodyColumnsAdded {
		out[i] = `ALTER TABLE ` + table + ` ADD IF NOT EXISTS ` + col[0] + ` ` + col[1]
	}
	return out
}

// setList is "col = ?, …" for every column of cols.
func setList(cols string) string {
	return strings.ReplaceAll(cols, ",", " = ?,") + " = ?"
}

// bodyArgs binds a comment's body columns (bodyCols). Empty text and
// lists bind unset: no cell is written (a null would be a Cassandra
// tombstone, and an empty cell costs as much as a full one), and reading
// it back gives the same empty value.
func bodyArgs(c *api.Comment) []any {
	reposts, likes := engagementArgs(c.Engagement)
	args := []any{c.Source, optText(c.Author), optText(c.AuthorID), c.Text, optText(c.URL), ms(c.FetchedAt), optList(c.Matched),
		optText(c.Lang), optText(c.ReplyTo), reposts, likes, optList(c.Links), optText(c.RepostOf), editedArg(c.EditedAt), optText(c.UnreadableDate)}
	return append(args, sentimentArgs(c)...)
}

// optText binds a text column: unset when empty.
func optText(s string) any {
	if s == "" {
		return gocql.UnsetValue
	}
	return s
}

// optList binds a frozen list column: unset when empty.
func optList(l []string) any {
	if len(l) == 0 {
		return gocql.UnsetValue
	}
	return l
}

// sentimentArgs binds lang_detected, sentiment_label and sentiment_score:
// unset when the comment has none, so no cell is written.
func sentimentArgs(c *api.Comment) []any {
	out := []any{gocql.UnsetValue, gocql.UnsetValue, gocql.UnsetValue}
	if c.LangDetected {
		out[0] = true
	}
	if c.Sentiment != nil {
		out[1], out[2] = c.Sentiment.Label, float32(c.Sentiment.Score)
	}
	return out
}

// editedArg binds edited_at: unset for a comment never edited, so no cell
// (and no Cassandra tombstone) is written.
func editedArg(t time.Time) any {
	if t.IsZero() {
		return gocql.UnsetValue
	}
	return ms(t)
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
	langDetected   *bool
	sentiment      *string
	score          *float32
}

// dest lists the scan destinations of bodyCols.
func (b *body) dest() []any {
	c := b.c
	return []any{&c.Source, &c.Author, &c.AuthorID, &c.Text, &c.URL, &c.FetchedAt, &c.Matched,
		&c.Lang, &c.ReplyTo, &b.reposts, &b.likes, &c.Links, &c.RepostOf, &b.edited, &b.unreadable,
		&b.langDetected, &b.sentiment, &b.score}
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
	c.LangDetected = b.langDetected != nil && *b.langDetected
	if b.sentiment != nil && *b.sentiment != "" {
		c.Sentiment = &api.Sentiment{Label: *b.sentiment}
		if b.score != nil {
			// float32 in the row: rounded back to the scorer's three places.
			c.Sentiment.Score = math.Round(float64(*b.score)*1000) / 1000
		}
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
