// Package commentexport writes stored comments in the formats the product
// exports them in: JSON Lines (each comment as the API gives it, verbatim)
// and CSV (a header row, then one record per comment). bwctl's
// `comments export` and the hub's export from the dashboard both write
// through it, so the two files have the same columns.
//
// CSV cells that a spreadsheet would read as a formula are neutralised:
// crawled text is hostile, and `=HYPERLINK("http://…?"&A1, …)` in a
// comment would otherwise run when the file is opened (OWASP "CSV
// injection"). JSON Lines carries no such risk and stays verbatim.
package commentexport

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Export formats.
const (
	JSONL = "jsonl"
	CSV   = "csv"
)

// Formats are the formats an export writes, the default first.
var Formats = []string{JSONL, CSV}

// ContentTypes are the media types of the formats, for an HTTP answer.
var ContentTypes = map[string]string{
	JSONL: "application/x-ndjson; charset=utf-8",
	CSV:   "text/csv; charset=utf-8; header=present",
}

// Header names the CSV columns. Columns added later go at the end, so a
// reader that counts columns keeps working.
var Header = []string{"id", "crawler_id", "source", "author", "published_at", "fetched_at", "url", "lang",
	"reply_to", "thread_id", "matched", "text", "reposts", "likes", "author_id", "links", "repost_of",
	"lang_detected", "sentiment", "sentiment_score"}

// Writer writes pages of comments in one format. Each Write ends with the
// page flushed to the underlying writer.
type Writer interface {
	Write(comments []api.Comment) error
}

// New returns a writer of format (one of Formats) to w.
func New(format string, w io.Writer) (Writer, error) {
	switch format {
	case JSONL:
		return NewJSONL(w), nil
	case CSV:
		return NewCSV(w), nil
	default:
		return nil, fmt.Errorf("commentexport: format must be one of %s, got %q", strings.Join(Formats, ", "), format)
	}
}

// JSONLWriter writes one comment object a line.
type JSONLWriter struct{ enc *json.Encoder }

// NewJSONL returns a JSON Lines writer to w.
func NewJSONL(w io.Writer) *JSONLWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONLWriter{enc: enc}
}

// Write puts each comment on a line of its own (Encode ends it with one).
func (j *JSONLWriter) Write(comments []api.Comment) error {
	for _, cm := range comments {
		if err := j.enc.Encode(cm); err != nil {
			return fmt.Errorf("commentexport: unable to write comment %s: %w", cm.ID, err)
		}
	}
	return nil
}

// CSVWriter writes RFC 4180 CSV: a header, then one record per comment,
// quoted where a field holds a comma, a quote or a line break, and every
// cell that starts like a formula neutralised (Neutralise).
type CSVWriter struct {
	w      *csv.Writer
	header bool
	rec    []string
}

// NewCSV returns a CSV writer to w.
func NewCSV(w io.Writer) *CSVWriter { return &CSVWriter{w: csv.NewWriter(w)} }

// Write writes the header before the first page, then a record per comment.
func (c *CSVWriter) Write(comments []api.Comment) error {
	if !c.header {
		if err := c.w.Write(Header); err != nil {
			return fmt.Errorf("commentexport: unable to write the header: %w", err)
		}
		c.header = true
	}
	for _, cm := range comments {
		// Empty counts when the source gives none: unknown, not 0.
		reposts, likes := "", ""
		if e := cm.Engagement; e != nil {
			reposts, likes = itoa(e.Reposts), itoa(e.Likes)
		}
		c.rec = append(c.rec[:0], cm.ID, itoa(cm.CrawlerID), cm.Source, cm.Author, csvTime(cm.PublishedAt), csvTime(cm.FetchedAt),
			cm.URL, cm.Lang, cm.ReplyTo, cm.ThreadID, strings.Join(cm.Matched, " "), cm.Text, reposts, likes,
			cm.AuthorID, strings.Join(cm.Links, " "), cm.RepostOf)
		for i, v := range c.rec {
			c.rec[i] = Neutralise(v)
		}
		// Written by the product, not the source: a negative score
		// stays a number.
		detected, label, score := "", "", ""
		if cm.LangDetected {
			detected = "true"
		}
		if s := cm.Sentiment; s != nil {
			label, score = s.Label, strconv.FormatFloat(s.Score, 'f', -1, 64)
		}
		c.rec = append(c.rec, detected, label, score)
		if err := c.w.Write(c.rec); err != nil {
			return fmt.Errorf("commentexport: unable to write comment %s: %w", cm.ID, err)
		}
	}
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("commentexport: unable to write: %w", err)
	}
	return nil
}

// formulaStarts are the first characters that make a spreadsheet (Excel,
// LibreOffice, Google Sheets) read a cell as a formula or a command.
const formulaStarts = "=+-@\t\r"

// Neutralise returns a CSV cell a spreadsheet shows as text: a cell that
// starts with =, +, -, @, a tab or a carriage return gets a leading single
// quote, as OWASP's CSV injection advice says; any other cell is returned
// as it is. The quote is visible in a plain reader: it is the price of a
// file that is safe to open.
func Neutralise(cell string) string {
	if cell != "" && strings.IndexByte(formulaStarts, cell[0]) >= 0 {
		return "'" + cell
	}
	return cell
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
