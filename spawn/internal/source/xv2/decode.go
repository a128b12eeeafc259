package xv2

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/linestream"
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
	// idPrefix starts every twitter item id.
	idPrefix = "tw:"
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
			Users []wireUser `json:"users"`
		} `json:"includes"`
		MatchingRules []wireMatch   `json:"matching_rules"`
		Errors        []wireProblem `json:"errors"`
		// A message that is itself a problem document.
		Title           string `json:"title"`
		Detail          string `json:"detail"`
		ConnectionIssue string `json:"connection_issue"`
	}
	wireTweet struct {
		ID               string `json:"id"`
		Text             string `json:"text"`
		AuthorID         string `json:"author_id"`
		CreatedAt        string `json:"created_at"`
		Lang             string `json:"lang"`
		ConversationID   string `json:"conversation_id"`
		ReferencedTweets []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"referenced_tweets"`
		NoteTweet *struct {
			Text string `json:"text"`
		} `json:"note_tweet"`
		// PublicMetrics come when tweet.fields asks for public_metrics.
		PublicMetrics *struct {
			RetweetCount source.Count `json:"retweet_count"`
			LikeCount    source.Count `json:"like_count"`
		} `json:"public_metrics"`
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

// message is one decoded stream line: a post with the tags of the rules
// it matched, or a notice from X (an announced disconnect).
type message struct {
	item   source.Item
	post   bool
	tags   []string
	notice string
}

// decodeLine turns one non-empty stream line into a message. A line that is
// not a JSON object, a post without a numeric id and a document with
// neither a post nor errors wrap ErrMalformed.
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

// postItem turns a stream post into an item.
func postItem(w wireMessage, now time.Time) (source.Item, error) {
	t := w.Data
	if !numericID(t.ID) {
		return source.Item{}, fmt.Errorf("%w: post id %q is not a number", ErrMalformed, clip(t.ID))
	}
	text := t.Text
	if t.NoteTweet != nil && t.NoteTweet.Text != "" {
		text = t.NoteTweet.Text // the whole text of a long post
	}
	author := ""
	for _, u := range w.Includes.Users {
		if u.ID == t.AuthorID && validUsername(u.Username) {
			author = u.Username
			break
		}
	}
	link := "https://twitter.com/i/web/status/" + t.ID
	if author != "" {
		link = "https://twitter.com/" + author + "/status/" + t.ID
	}
	it := source.Item{
		ID:        source.ItemID(idPrefix + t.ID),
		Author:    author,
		Text:      source.CapText(html.UnescapeString(text), maxTextBytes),
		URL:       source.WebURL(link),
		FetchedAt: now.UTC(),
		Lang:      lang(t.Lang),
	}
	var claimed time.Time
	if ts, err := time.Parse(time.RFC3339, t.CreatedAt); err == nil {
		claimed = ts
	}
	it.PublishedAt = source.PublishedAt(claimed, now)
	if pm := t.PublicMetrics; pm != nil {
		it.Engagement = source.EngagementOf(pm.RetweetCount, pm.LikeCount)
	}
	for _, r := range t.ReferencedTweets {
		if r.Type == "replied_to" && numericID(r.ID) {
			it.ReplyTo = idPrefix + r.ID
			break
		}
	}
	if t.ConversationID != t.ID && numericID(t.ConversationID) {
		it.ThreadID = idPrefix + t.ConversationID
	}
	return it, nil
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
