package alert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"mime/quotedprintable"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Limits of a message.
const (
	// sampleTextChars is how much of a sample comment's text a message
	// shows.
	sampleTextChars = 280
	// slackTextChars is Slack's limit on a section block's text.
	slackTextChars = 3000
)

// content is what an alert says, whatever the channel.
type content struct {
	AlertID   int64
	RuleID    int64
	Kind      string
	CrawlerID *int64
	UserID    *int64
	At        time.Time
	Observed  float64
	Expected  float64
	TopTerms  []api.TermCount
	Sample    []api.AlertSample
	Test      bool
	// Term is the term a term alert is about; Query a match rule's query.
	Term, Query string
}

// details is what sqlstore.Alert.Details holds.
type details struct {
	TopTerms []api.TermCount   `json:"top_terms"`
	Sample   []api.AlertSample `json:"sample"`
	Term     string            `json:"term,omitempty"`
	Query    string            `json:"query,omitempty"`
}

func (c content) details() string {
	b, _ := json.Marshal(details{TopTerms: orEmpty(c.TopTerms), Sample: orEmpty(c.Sample), Term: c.Term, Query: c.Query})
	return string(b)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// deliveries makes the delivery of an alert to its rule's channel: one, with
// a new id and the exact message every attempt will send.
func (s *Service) deliveries(r sqlstore.AlertRule, c content) ([]sqlstore.AlertDelivery, error) {
	id := uuid.NewString()
	var body []byte
	switch r.Channel {
	case api.ChannelWebhook:
		body = webhookBody(c)
	case api.ChannelSlack:
		body = slackBody(c)
	case api.ChannelEmail:
		from := s.cfg.SMTP.From
		if s.from != nil {
			from = s.from.String()
		}
		body = emailMessage(id, from, r.Target, c)
	default:
		return nil, fmt.Errorf("alert: rule %d has an unknown channel %q", r.ID, r.Channel)
	}
	return []sqlstore.AlertDelivery{{ID: id, Channel: r.Channel, Target: r.Target, Body: string(body),
		GiveUpAt: s.cfg.Now().Add(s.cfg.RetryFor)}}, nil
}

func webhookBody(c content) []byte {
	b, _ := json.Marshal(api.AlertWebhook{AlertID: c.AlertID, RuleID: c.RuleID, Kind: c.Kind, CrawlerID: c.CrawlerID,
		UserID: c.UserID, At: c.At.UTC(), Observed: c.Observed, Expected: round(c.Expected), TopTerms: orEmpty(c.TopTerms),
		Sample: orEmpty(c.Sample), Test: c.Test})
	return b
}

// round keeps two decimals of an expectation.
func round(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// subject is the alert in one line.
func (c content) subject() string {
	where := "crawler " + itoa(c.CrawlerID)
	if c.CrawlerID == nil {
		where = "the crawlers of user " + itoa(c.UserID)
	}
	var s string
	switch c.Kind {
	case api.AlertSpike:
		s = fmt.Sprintf("Spike on %s: %s comments in the minute from %s UTC, about %s expected", where,
			num(c.Observed), c.At.UTC().Format("15:04"), num(c.Expected))
	case api.AlertTerm:
		s = fmt.Sprintf("Rising term on %s: %q %s times in the last hours, about %s expected", where, c.Term,
			num(c.Observed), num(c.Expected))
	case api.AlertMatch:
		s = fmt.Sprintf("%s new comments on %s match %s", num(c.Observed), where, c.Query)
	case api.AlertSentiment:
		s = fmt.Sprintf("Crisis on %s: negative share %s at %s UTC (usually %s)", where,
			pct(c.Observed), c.At.UTC().Format("15:04"), pct(c.Expected))
	default:
		s = fmt.Sprintf("Alert on %s", where)
	}
	if c.Test {
		s = "Test: " + s
	}
	return s
}

func itoa(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

// num prints a count: whole when whole, else one decimal.
func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// pct prints a share (0 to 1) as a whole percent.
func pct(v float64) string { return strconv.FormatFloat(math.Round(v*100), 'f', 0, 64) + "%" }

func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// slackEscape escapes the three characters Slack's mrkdwn reserves. Every
// text of a Slack message goes through it, the top-level one too: Slack
// reads mentions (<!channel>) and links there as well, so a query, a term
// or a comment never pings a channel.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackBody is an incoming-webhook message: a "text" (what notifications
// show) and Block Kit sections with the numbers, the top
// terms and links to the sample comments.
func slackBody(c content) []byte {
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type block struct {
		Type string `json:"type"`
		Text *text  `json:"text,omitempty"`
	}
	blocks := []block{{Type: "section", Text: &text{Type: "mrkdwn", Text: "*" + slackEscape(c.subject()) + "*"}}}
	if len(c.TopTerms) > 0 {
		parts := make([]string, 0, len(c.TopTerms))
		for _, t := range c.TopTerms {
			parts = append(parts, "`"+slackEscape(strings.ReplaceAll(t.Term, "`", "'"))+"` "+strconv.FormatInt(t.Count, 10))
		}
		blocks = append(blocks, block{Type: "section", Text: &text{Type: "mrkdwn", Text: "Top terms: " + strings.Join(parts, " · ")}})
	}
	if len(c.Sample) > 0 {
		var b strings.Builder
		b.WriteString("Sample comments:")
		for _, sm := range c.Sample {
			line := slackEscape(cut(sm.Text, sampleTextChars))
			if sm.Author != "" {
				line = "*" + slackEscape(cut(sm.Author, 64)) + "*: " + line
			}
			if u := safeLink(sm.URL); u != "" {
				line += " <" + slackEscape(u) + "|open>"
			}
			if b.Len()+len(line)+3 > slackTextChars {
				break
			}
			b.WriteString("\n• " + line)
		}
		blocks = append(blocks, block{Type: "section", Text: &text{Type: "mrkdwn", Text: b.String()}})
	}
	out, _ := json.Marshal(struct {
		Text   string  `json:"text"`
		Blocks []block `json:"blocks"`
	}{Text: slackEscape(c.subject()), Blocks: blocks})
	return out
}

// safeLink is an http(s) URL fit for a Slack link: without the characters
// that would end the link syntax.
func safeLink(u string) string {
	if (!strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://")) || strings.ContainsAny(u, "<>| \n") {
		return ""
	}
	return u
}

// emailMessage is an RFC 5322 message in plain text, quoted-printable. Its
// Message-ID is the delivery's, so a retry that arrives twice is one
// message to mail software.
func emailMessage(deliveryID, from, to string, c content) []byte {
	var b bytes.Buffer
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("From", from)
	h("To", to)
	h("Subject", mime.QEncoding.Encode("utf-8", "[Black Widow] "+c.subject()))
	h("Date", c.At.UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+deliveryID+"@blackwidow.alerts>")
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	h("X-BW-Delivery", deliveryID)
	b.WriteString("\r\n")
	var text strings.Builder
	text.WriteString(c.subject() + "\n\n")
	fmt.Fprintf(&text, "Rule %d, alert %d, at %s.\n", c.RuleID, c.AlertID, c.At.UTC().Format(time.RFC3339))
	if c.Kind == api.AlertSentiment {
		fmt.Fprintf(&text, "Negative share of recent comments: %s\nUsually: %s\n", pct(c.Observed), pct(c.Expected))
	} else {
		fmt.Fprintf(&text, "Observed: %s\nExpected: %s\n", num(c.Observed), num(round(c.Expected)))
	}
	if len(c.TopTerms) > 0 {
		text.WriteString("\nTop terms:\n")
		for _, t := range c.TopTerms {
			fmt.Fprintf(&text, "  %s  %d\n", t.Term, t.Count)
		}
	}
	if len(c.Sample) > 0 {
		text.WriteString("\nSample comments:\n")
		for _, sm := range c.Sample {
			fmt.Fprintf(&text, "- %s: %s\n", cut(sm.Author, 64), cut(sm.Text, sampleTextChars))
			if sm.URL != "" {
				fmt.Fprintf(&text, "  %s\n", sm.URL)
			}
		}
	}
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(text.String(), "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}
