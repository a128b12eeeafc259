package mastodon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/htmltext"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Events of the streaming API the source acts on; every other event
// (delete, notification, filters_changed, announcements…) is ignored.
const (
	eventUpdate = "update"
	eventEdit   = "status.update"
	eventDelete = "delete"
)

// visibilityPublic is the visibility of a status shown in public
// timelines.
const visibilityPublic = "public"

// frameKind tells the instance's messages apart.
type frameKind int

const (
	frameOther  frameKind = iota // valid JSON the source does not use
	frameStatus                  // update or status.update with a status
	frameError                   // {"error": …, "status": …}
)

// status is the part of a Mastodon Status entity the source reads.
type status struct {
	ID          string        `json:"id"`
	URI         string        `json:"uri"`
	URL         *string       `json:"url"`
	CreatedAt   string        `json:"created_at"`
	EditedAt    *string       `json:"edited_at"`
	Content     string        `json:"content"`
	SpoilerText string        `json:"spoiler_text"`
	Visibility  string        `json:"visibility"`
	Language    *string       `json:"language"`
	InReplyToID *string       `json:"in_reply_to_id"`
	Account     *account      `json:"account"`
	Reblog      *status       `json:"reblog"`
	Tags        []tagJSON     `json:"tags"`
	Mentions    []mentionJSON `json:"mentions"`
	Card        *cardJSON     `json:"card"`
	Media       []mediaJSON   `json:"media_attachments"`
	// Reblogs and favourites so far: a status streamed as it is written
	// has none yet; a reblog carries the counts of the status it shares.
	ReblogsCount    source.Count `json:"reblogs_count"`
	FavouritesCount source.Count `json:"favourites_count"`
}

type account struct {
	Acct     string `json:"acct"`
	Username string `json:"username"`
	// URI is the account's ActivityPub actor id (Mastodon 4.2 and
	// later); URL its profile page.
	URI string `json:"uri"`
	URL string `json:"url"`
}

type tagJSON struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

type mentionJSON struct {
	URL string `json:"url"`
}

type cardJSON struct {
	URL   string `json:"url"`
	Title string `json:"title"`
}

// mediaJSON is a media attachment; its description is the alt text its
// author wrote for readers who cannot see it.
type mediaJSON struct {
	Description *string `json:"description"`
}

// frame is one decoded message.
type frame struct {
	kind   frameKind
	event  string
	stream string  // the stream the event came from: public, hashtag, user…
	status *status // frameStatus: the status, a reblog already unwrapped
	reblog bool    // the status came as a reblog's
	// deleted is a delete event's payload: the deleted status's id on the
	// instance (frameOther).
	deleted string
	errMsg  string // frameError
	code    int    // frameError: the HTTP-like status
}

// decodeFrame decodes one WebSocket message. JSON that ends early (the
// message's or its payload's) is ErrTruncated; anything else that is not
// the protocol's shape is ErrMalformed. The payload of update and
// status.update is a Status encoded as a JSON string; an object is taken as
// well.
func decodeFrame(data []byte) (frame, error) {
	var raw struct {
		Stream  []string        `json:"stream"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
		Error   *string         `json:"error"`
		Status  json.Number     `json:"status"`
	}
	if err := decodeOne(data, &raw); err != nil {
		return frame{}, err
	}
	switch {
	case raw.Error != nil:
		code, _ := raw.Status.Int64()
		return frame{kind: frameError, errMsg: clip(*raw.Error), code: int(code)}, nil
	case raw.Event == eventDelete:
		// The payload is the status's local id, as a JSON string (a
		// number is taken as well).
		f := frame{kind: frameOther, event: eventDelete, stream: streamOf(raw.Stream)}
		var id json.Number
		if len(raw.Payload) > 0 && json.Unmarshal(raw.Payload, &id) == nil && localID(id.String()) {
			f.deleted = id.String()
		} else {
			var s string
			if len(raw.Payload) > 0 && json.Unmarshal(raw.Payload, &s) == nil && localID(s) {
				f.deleted = s
			}
		}
		return f, nil
	case raw.Event != eventUpdate && raw.Event != eventEdit:
		return frame{kind: frameOther, event: clip(raw.Event), stream: streamOf(raw.Stream)}, nil
	case len(raw.Payload) == 0:
		return frame{}, fmt.Errorf("%w: %s event without a payload", ErrMalformed, raw.Event)
	}
	payload := []byte(raw.Payload)
	if payload[0] == '"' {
		var s string
		if err := json.Unmarshal(payload, &s); err != nil {
			return frame{}, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
		}
		payload = []byte(s)
	}
	var st status
	if err := decodeOne(payload, &st); err != nil {
		return frame{}, fmt.Errorf("payload: %w", err)
	}
	f := frame{kind: frameStatus, event: raw.Event, stream: streamOf(raw.Stream), status: &st}
	if st.Reblog != nil {
		f.status, f.reblog = st.Reblog, true
	}
	return f, nil
}

// streamOf is the name of the stream an event names ("hashtag" of
// ["hashtag", "golang"]), "" when it names none.
func streamOf(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return clip(names[0])
}

// decodeOne decodes exactly one JSON value of data into v.
func decodeOne(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: the JSON ends after %d bytes", ErrTruncated, len(data))
		case errors.Is(err, io.EOF):
			return fmt.Errorf("%w: empty message", ErrMalformed)
		}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the JSON value", ErrMalformed)
	}
	return nil
}

// link is what the source remembers of a status it has seen: enough to
// link its replies.
type link struct {
	uri    string // the status's item id
	thread string // its thread's first status, "" when it starts one
	// orphan: a reply whose parent stayed unknown, so its thread's first
	// status is unknown too.
	orphan  bool
	emitted bool   // handed over (not only learnt as an ancestor)
	edited  string // edited_at of the version last emitted
	deleted bool   // its delete was told (retract.go)
}

// threadOf is the first status of the thread l is in, "" when unknown.
func (l link) threadOf() string {
	switch {
	case l.orphan:
		return ""
	case l.thread != "":
		return l.thread
	}
	return l.uri
}

// statusItem turns a status whose accounts without a domain live under
// domain into an item. parent is the status it replies to, when the
// source knows it: Mastodon names a reply's parent only by its id local to
// the instance, which is in no comment's id space, so a reply whose parent
// is unknown has no reply_to and no thread_id. It fails for a status
// without a usable id or uri.
func statusItem(st *status, domain string, parent *link, now time.Time) (source.Item, error) {
	if !localID(st.ID) {
		return source.Item{}, fmt.Errorf("%w: status id %q", ErrMalformed, clip(st.ID))
	}
	uri := strings.TrimSpace(st.URI)
	if uri == "" {
		return source.Item{}, fmt.Errorf("%w: status %s without a uri", ErrMalformed, st.ID)
	}
	it := source.Item{
		ID:         source.ItemID(uri),
		SourceID:   st.ID,
		FetchedAt:  now.UTC(),
		Engagement: source.EngagementOf(st.ReblogsCount, st.FavouritesCount),
	}
	if st.URL != nil {
		it.URL = source.WebURL(*st.URL)
	}
	if it.URL == "" {
		it.URL = source.WebURL(uri) // a uri is often the status's page too
	}
	if st.Account != nil {
		it.Author = author(st.Account, domain)
		it.AuthorID = source.WebURL(st.Account.URI)
	}
	it.Text = source.CapText(statusText(st), maxTextBytes)
	it.Links = statusLinks(st)
	claimed, _ := time.Parse(time.RFC3339Nano, st.CreatedAt)
	it.PublishedAt = source.PublishedAt(claimed, now)
	if st.EditedAt != nil {
		// A status may arrive already edited (a timeline read, a status
		// edited before the stream carried it): its edit time is kept as
		// the instance says it.
		if at, err := time.Parse(time.RFC3339Nano, *st.EditedAt); err == nil {
			it.EditedAt = at.UTC()
		}
	}
	if st.Language != nil {
		it.Lang = lang(*st.Language)
	}
	if parent != nil {
		it.ReplyTo, it.ThreadID = parent.uri, parent.threadOf()
	}
	return it, nil
}

// statusLinks are the URLs a status links to, in full, in order, without
// repeats: the href of every link of its content that is not a mention or
// a hashtag (Mastodon marks those with the classes "mention" and
// "hashtag", and they point at an account or a tag page of the status's
// mentions and tags), then its preview card's URL. Mentions, tags and the
// status's own media are not links.
func statusLinks(st *status) []string {
	skip := map[string]bool{}
	for _, m := range st.Mentions {
		skip[strings.TrimSpace(m.URL)] = true
	}
	for _, t := range st.Tags {
		skip[strings.TrimSpace(t.URL)] = true
	}
	var out []string
	seen := map[string]bool{}
	add := func(u string) {
		if u = source.WebURL(u); u != "" && !seen[u] && !skip[u] && len(out) < maxLinks {
			seen[u] = true
			out = append(out, u)
		}
	}
	z := html.NewTokenizer(strings.NewReader(st.Content))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if string(name) != "a" || !hasAttr {
			continue
		}
		var href string
		mention := false
		for {
			k, v, more := z.TagAttr()
			switch string(k) {
			case "href":
				href = string(v)
			case "class":
				for _, c := range strings.Fields(string(v)) {
					mention = mention || c == "mention" || c == "hashtag"
				}
			case "rel":
				for _, r := range strings.Fields(string(v)) {
					mention = mention || r == "tag"
				}
			}
			if !more {
				break
			}
		}
		if !mention {
			add(href)
		}
	}
	if st.Card != nil {
		add(st.Card.URL)
	}
	return out
}

// statusText is the readable text of a status: its content warning, if
// any, then its content with its paragraphs and line breaks, then — after
// a blank line, each on a line of its own — its preview card's title, the
// card's URL unless the words already hold it, and every media
// attachment's description. The bluesky source keeps a link card's title
// and images' alt text the same way, so queries match them on both.
func statusText(st *status) string {
	text := htmltext.Lines(st.Content)
	var extra []string
	if c := st.Card; c != nil {
		extra = appendLine(extra, c.Title)
		if u := source.WebURL(c.URL); u != "" && !strings.Contains(text, u) {
			extra = appendLine(extra, u)
		}
	}
	for _, m := range st.Media {
		if m.Description != nil {
			extra = appendLine(extra, *m.Description)
		}
	}
	if len(extra) > maxExtraLines {
		extra = extra[:maxExtraLines]
	}
	if tail := strings.Join(extra, "\n"); tail != "" {
		if strings.TrimSpace(text) == "" {
			text = tail
		} else {
			text += "\n\n" + tail
		}
	}
	spoiler := strings.TrimSpace(htmltext.Lines(st.SpoilerText))
	switch {
	case spoiler == "":
		return text
	case text == "":
		return spoiler
	}
	return spoiler + "\n\n" + text
}

// appendLine adds s, trimmed, to lines unless it is empty or not UTF-8.
func appendLine(lines []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" && utf8.ValidString(s) {
		lines = append(lines, s)
	}
	return lines
}

// author is an account's acct, qualified with the instance's domain when
// the account is local to it (its acct has no domain), so that it names
// one account across instances.
func author(a *account, domain string) string {
	acct := strings.TrimPrefix(strings.TrimSpace(a.Acct), "@")
	if acct == "" {
		acct = strings.TrimSpace(a.Username)
	}
	if acct == "" {
		return ""
	}
	if !strings.Contains(acct, "@") && domain != "" {
		acct += "@" + domain
	}
	if len(acct) > maxAuthorBytes || !printable(acct) {
		return ""
	}
	return strings.ToLower(acct)
}

// localID reports whether id looks like an instance-local status id:
// short, of letters, digits, '-' and '_' (ids are "cast from an integer
// but not guaranteed to be a number").
func localID(id string) bool {
	if id == "" || len(id) > maxLocalIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// lang returns a language code lowercased, or "" when it is not one.
func lang(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > maxLangBytes {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return ""
		}
	}
	return s
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// clip shortens a string from the instance for an error message or a log.
func clip(s string) string { return source.Clip(s, maxClipBytes) }
