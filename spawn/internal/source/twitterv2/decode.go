package twitterv2

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/xtext"
)

const (
	// maxTextBytes caps the text of one item.
	maxTextBytes = 32 << 10
	// maxUsernameBytes caps a user name that may go into a link.
	maxUsernameBytes = 50
	// maxLangBytes caps a language tag.
	maxLangBytes = 16
	// maxPostIDDigits is the most digits a post id (a 63-bit snowflake)
	// has.
	maxPostIDDigits = 19
)

// errTruncated means the stream ended inside a line.
var errTruncated = source.NewError("twitter: stream ended inside a message", linestream.ErrTruncated)

// newLineReader splits a stream body into lines of at most max bytes; a
// keep-alive is an empty line. A longer line is reported with
// ErrOversized, and the reader skips the rest of it on the next call, so
// one oversized post does not end the connection. The body ending inside
// a line is errTruncated.
func newLineReader(r io.Reader, max int) *linestream.Reader {
	return linestream.NewReader(r, max, linestream.Errors{TooLong: ErrOversized, Truncated: errTruncated})
}

// Wire shapes of a stream message.
type (
	wireMessage struct {
		Data     *wireTweet `json:"data"`
		Includes struct {
			Users  []wireUser  `json:"users"`
			Tweets []wireTweet `json:"tweets"`
		} `json:"includes"`
		MatchingRules []wireMatch   `json:"matching_rules"`
		Errors        []wireProblem `json:"errors"`
		// A message that is itself a problem document.
		Title           string `json:"title"`
		Detail          string `json:"detail"`
		ConnectionIssue string `json:"connection_issue"`
	}
	wireTweet struct {
		ID               string        `json:"id"`
		Text             string        `json:"text"`
		AuthorID         string        `json:"author_id"`
		CreatedAt        string        `json:"created_at"`
		Lang             string        `json:"lang"`
		ConversationID   string        `json:"conversation_id"`
		ReferencedTweets []wireRef     `json:"referenced_tweets"`
		Entities         *wireEntities `json:"entities"`
		// NoteTweet holds the whole text of a post longer than 280
		// characters (text is then cut), with its own entities.
		NoteTweet *struct {
			Text     string        `json:"text"`
			Entities *wireEntities `json:"entities"`
		} `json:"note_tweet"`
		// PublicMetrics come when tweet.fields asks for public_metrics.
		PublicMetrics *struct {
			RetweetCount source.Count `json:"retweet_count"`
			LikeCount    source.Count `json:"like_count"`
		} `json:"public_metrics"`
	}
	wireRef struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	wireEntities struct {
		URLs []wireURL `json:"urls"`
	}
	// wireURL is a link of the text: url is the t.co address the text
	// carries, expanded_url the address the author wrote (or, for media
	// and quoted posts, the post's page).
	wireURL struct {
		URL         string `json:"url"`
		ExpandedURL string `json:"expanded_url"`
	}
	wireUser struct {
		ID       string `json:"id"`
		Username string `json:"username"`
	}
	wireMatch struct {
		ID  string `json:"id"`
		Tag string `json:"tag"`
	}
	wireProblem struct {
		Title          string `json:"title"`
		Detail         string `json:"detail"`
		DisconnectType string `json:"disconnect_type"`
		Type           string `json:"type"`
	}
)

// Kinds of a referenced tweet.
const (
	refRetweeted = "retweeted"
	refQuoted    = "quoted"
	refRepliedTo = "replied_to"
)

// message is one decoded stream line: a post with the tags of the rules
// it matched, or a notice from X (an announced disconnect).
type message struct {
	item   source.Item
	post   bool
	tags   []string
	notice string
}

// decodeLine turns one non-empty stream line into a message. A line that is
// not a JSON object, a post without a numeric id, a repost whose original
// is missing from includes.tweets and a document with neither a post nor
// errors wrap ErrMalformed.
func decodeLine(line []byte, now time.Time) (message, error) {
	var w wireMessage
	if err := json.Unmarshal(line, &w); err != nil {
		return message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if w.Data == nil {
		switch {
		case len(w.Errors) > 0:
			e := w.Errors[0]
			return message{notice: clip(firstOf(e.Detail, e.Title, e.DisconnectType, e.Type))}, nil
		case w.Title != "":
			return message{notice: clip(firstOf(w.ConnectionIssue, w.Detail, w.Title))}, nil
		}
		return message{}, fmt.Errorf("%w: neither a post nor an error", ErrMalformed)
	}
	it, err := postItem(w, now)
	if err != nil {
		return message{}, err
	}
	m := message{item: it, post: true}
	for _, r := range w.MatchingRules {
		m.tags = append(m.tags, r.Tag)
	}
	return m, nil
}

// expansions are a message's included posts and users, by id.
type expansions struct {
	tweets map[string]*wireTweet
	users  map[string]string // id → valid username
}

func newExpansions(w *wireMessage) expansions {
	x := expansions{tweets: make(map[string]*wireTweet, len(w.Includes.Tweets)), users: make(map[string]string, len(w.Includes.Users))}
	for i := range w.Includes.Tweets {
		if t := &w.Includes.Tweets[i]; numericID(t.ID) {
			x.tweets[t.ID] = t
		}
	}
	for _, u := range w.Includes.Users {
		if validUsername(u.Username) {
			x.users[u.ID] = u.Username
		}
	}
	return x
}

// postItem turns a stream post into an item. A repost (retweet) carries
// the whole text of the post it shares, taken from includes.tweets, never
// X's cut "RT @user: …" text; a quote post carries the quoted post's text
// after its own (X's filtered stream matches a rule on both) and the
// quoted post's address among its links.
func postItem(w wireMessage, now time.Time) (source.Item, error) {
	t := w.Data
	if !numericID(t.ID) {
		return source.Item{}, fmt.Errorf("%w: post id %q is not a number", ErrMalformed, clip(t.ID))
	}
	x := newExpansions(&w)
	author := x.users[t.AuthorID]
	it := source.Item{
		ID:        source.ItemID(xtext.IDPrefix + t.ID),
		SourceID:  t.ID,
		Author:    author,
		URL:       source.WebURL(statusURL(author, t.ID)),
		FetchedAt: now.UTC(),
		Lang:      lang(t.Lang),
	}
	if numericID(t.AuthorID) {
		it.AuthorID = t.AuthorID
	}
	var claimed time.Time
	if ts, err := time.Parse(time.RFC3339, t.CreatedAt); err == nil {
		claimed = ts
	}
	it.PublishedAt = source.PublishedAt(claimed, now)
	metrics := t
	body := t
	if id := refOf(t, refRetweeted); id != "" {
		orig := x.tweets[id]
		if orig == nil {
			return source.Item{}, fmt.Errorf("%w: repost %s arrived without the post it shares (%s) in includes.tweets", ErrMalformed, t.ID, id)
		}
		it.RepostOf = xtext.IDPrefix + id
		body, metrics = orig, orig
	}
	var text string
	text, it.Links = x.content(body)
	it.Text = source.CapText(text, maxTextBytes)
	if pm := metrics.PublicMetrics; pm != nil {
		it.Engagement = source.EngagementOf(pm.RetweetCount, pm.LikeCount)
	}
	if id := refOf(t, refRepliedTo); id != "" {
		it.ReplyTo = xtext.IDPrefix + id
	}
	if t.ConversationID != t.ID && numericID(t.ConversationID) {
		it.ThreadID = xtext.IDPrefix + t.ConversationID
	}
	return it, nil
}

// refOf is the id of the post t references in the given way, "" if none.
func refOf(t *wireTweet, kind string) string {
	for _, r := range t.ReferencedTweets {
		if r.Type == kind && numericID(r.ID) {
			return r.ID
		}
	}
	return ""
}

// content is the text of t as its author wrote it, with its links: the
// whole text (note_tweet's for a long post), HTML-unescaped once, every
// t.co address replaced by the one it stands for; then, for a quote post,
// the quoted post's own text, and the quoted post's address among the
// links.
func (x expansions) content(t *wireTweet) (string, []string) {
	text, links := expandText(t)
	q := refOf(t, refQuoted)
	if q == "" {
		return text, links
	}
	if !slices.ContainsFunc(links, func(l string) bool { return xtext.IsStatusOf(l, q) }) {
		if u := source.WebURL(statusURL(x.users[authorOf(x.tweets[q])], q)); u != "" {
			links = append(links, u)
		}
	}
	if quoted := x.tweets[q]; quoted != nil {
		qtext, qlinks := expandText(quoted)
		if qtext != "" {
			text += "\n\n" + qtext
		}
		links = xtext.AppendLinks(links, qlinks...)
	}
	return text, links
}

func authorOf(t *wireTweet) string {
	if t == nil {
		return ""
	}
	return t.AuthorID
}

// expandText is t's own whole text, unescaped, with its t.co addresses
// expanded, and the expanded addresses in order. The t.co address itself
// is matched, not the entity's start and end: those count code points of
// a text that X may have edited since (and that the unescaping shifts).
func expandText(t *wireTweet) (string, []string) {
	text, ents := t.Text, t.Entities
	if n := t.NoteTweet; n != nil && n.Text != "" {
		text, ents = n.Text, n.Entities
	}
	text = xtext.Unescape(text)
	if ents == nil || len(ents.URLs) == 0 {
		return text, nil
	}
	short := make([]xtext.URL, len(ents.URLs))
	for i, u := range ents.URLs {
		short[i] = xtext.URL{Short: u.URL, Expanded: u.ExpandedURL}
	}
	return xtext.Expand(text, short)
}

// statusURL is the address of a post, with its author's name when known.
func statusURL(username, id string) string {
	if username == "" {
		return "https://twitter.com/i/web/status/" + id
	}
	return "https://twitter.com/" + username + "/status/" + id
}

func numericID(s string) bool {
	if s == "" || len(s) > maxPostIDDigits {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 63)
	return err == nil
}

func validUsername(s string) bool {
	if s == "" || len(s) > maxUsernameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// lang is the post's language as an item carries it: lowercased, empty
// for X's "und" (undetermined) and for anything that is not a tag.
func lang(s string) string {
	s = strings.ToLower(s)
	if s == "" || s == "und" || len(s) > maxLangBytes || s[0] < 'a' || s[0] > 'z' {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return ""
		}
	}
	return s
}

// maxNoticeBytes caps a notice or id quoted in an error.
const maxNoticeBytes = 200

// clip shortens a string from X for an error message.
func clip(s string) string { return source.Clip(s, maxNoticeBytes) }

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
