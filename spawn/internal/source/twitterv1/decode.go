package twitterv1

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	gotwitter "github.com/dghubble/go-twitter/twitter"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/xtext"
)

// newFramer splits a stream body into messages: Twitter ends each with
// "\r\n" (a bare "\n" is accepted too, as JSON never holds a raw newline),
// and an empty message is a keep-alive. A message over max bytes is
// ErrMessageTooLarge, which ends the connection; the body ending inside a
// message is ErrTruncated.
func newFramer(r io.Reader, max int) *linestream.Reader {
	return linestream.NewReader(r, max, linestream.Errors{TooLong: ErrMessageTooLarge, Truncated: ErrTruncated})
}

// messageKind tells stream messages apart.
type messageKind int

const (
	kindOther messageKind = iota
	kindTweet
	kindDelete
	kindLimit
	kindDisconnect
	kindWarning
)

// message is one decoded stream message.
type message struct {
	kind       messageKind
	tweet      *gotwitter.Tweet
	engagement *api.Engagement // kindTweet: its counts, nil when it has none
	limit      *gotwitter.StreamLimit
	disconnect *gotwitter.StreamDisconnect
	warning    *gotwitter.StallWarning
}

// decodeLine decodes one stream message into go-twitter's types, telling
// the kinds apart by their keys as go-twitter does. Kinds the source does
// not use (scrub_geo, withheld notices, …) are kindOther.
func decodeLine(line []byte) (message, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	var m message
	var err error
	switch {
	case has("delete"):
		m.kind = kindDelete
	case has("limit"):
		var n struct {
			Limit *gotwitter.StreamLimit `json:"limit"`
		}
		err = json.Unmarshal(line, &n)
		m.kind, m.limit = kindLimit, n.Limit
	case has("disconnect"):
		var n struct {
			Disconnect *gotwitter.StreamDisconnect `json:"disconnect"`
		}
		err = json.Unmarshal(line, &n)
		m.kind, m.disconnect = kindDisconnect, n.Disconnect
	case has("warning"):
		var n struct {
			Warning *gotwitter.StallWarning `json:"warning"`
		}
		err = json.Unmarshal(line, &n)
		m.kind, m.warning = kindWarning, n.Warning
	case (has("id_str") || has("id")) && (has("text") || has("full_text") || has("extended_tweet")):
		m.kind, m.tweet = kindTweet, new(gotwitter.Tweet)
		err = json.Unmarshal(line, m.tweet)
		m.engagement = streamEngagement(keys)
	default:
		return message{kind: kindOther}, nil
	}
	if err != nil {
		return message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case m.kind == kindLimit && m.limit == nil,
		m.kind == kindDisconnect && m.disconnect == nil,
		m.kind == kindWarning && m.warning == nil:
		return message{}, fmt.Errorf("%w: empty notice", ErrMalformed)
	}
	return m, nil
}

// counts are the engagement counts of a v1.1 tweet object.
type counts struct {
	Retweets  source.Count `json:"retweet_count"`
	Favorites source.Count `json:"favorite_count"`
}

// streamEngagement reads a stream tweet's retweet_count and favorite_count
// from its top-level keys, telling a missing or null count (unknown) from
// zero, which go-twitter's ints cannot. A retweet's engagement is that of
// the tweet it shares (its retweeted_status): the retweet itself is never
// liked.
func streamEngagement(keys map[string]json.RawMessage) *api.Engagement {
	if rt := keys["retweeted_status"]; len(rt) > 0 && string(rt) != "null" {
		var c counts
		if json.Unmarshal(rt, &c) != nil {
			return nil
		}
		return source.EngagementOf(c.Retweets, c.Favorites)
	}
	var c counts
	_ = c.Retweets.UnmarshalJSON(keys["retweet_count"]) // never fails; an absent key is unknown
	_ = c.Favorites.UnmarshalJSON(keys["favorite_count"])
	return source.EngagementOf(c.Retweets, c.Favorites)
}

// searchEngagement is the engagement of a tweet the search API returned:
// v1.1 always gives its retweet_count (favorite_count is null only where a
// like count makes no sense), and a retweet's are those of the tweet it
// shares.
func searchEngagement(tw *gotwitter.Tweet) *api.Engagement {
	if rt := tw.RetweetedStatus; rt != nil {
		tw = rt
	}
	return &api.Engagement{Reposts: int64(max(tw.RetweetCount, 0)), Likes: int64(max(tw.FavoriteCount, 0))}
}

// matcher finds the tracked terms a tweet contains.
type matcher struct {
	terms []string   // sorted, canonical
	words [][]string // each term's words
}

func newMatcher(terms []string) *matcher {
	m := &matcher{terms: terms, words: make([][]string, len(terms))}
	for i, t := range terms {
		m.words[i] = strings.Fields(t)
	}
	return m
}

// match returns the terms whose words all occur in text as whole words,
// by the query language's word rules.
func (m *matcher) match(text string) []string {
	if m == nil || len(m.terms) == 0 {
		return nil
	}
	text = query.Fold(text)
	tokens := map[string]bool{}
	for i := 0; ; {
		start, end := query.NextWord(text, i)
		if start == len(text) {
			break
		}
		tokens[text[start:end]] = true
		i = end
	}
	var out []string
	for i, words := range m.words {
		ok := len(words) > 0
		for _, w := range words {
			if query.IsWord(w) && !unspaced(w) {
				ok = tokens[w]
			} else {
				ok = query.ContainsWord(text, w)
			}
			if !ok {
				break
			}
		}
		if ok {
			out = append(out, m.terms[i])
		}
	}
	return out
}

// unspaced reports whether w holds a letter of a script written without
// spaces, whose every letter is a token: such a word is looked for where
// it stands, not among the tokens.
func unspaced(w string) bool {
	for _, r := range w {
		if query.Unspaced(r) {
			return true
		}
	}
	return false
}

// tweetItem turns a tweet into an item carrying the tracked terms it
// contains and its engagement (nil when unknown). A retweet carries the
// whole text of the tweet it shares and repost_of naming it, never the
// cut "RT @user: …" text; a quote tweet carries the quoted tweet's text
// after its own and the quoted tweet's address among its links. Text is
// HTML-unescaped once and its t.co links are replaced by the addresses
// they stand for. It fails for a tweet without an id.
func tweetItem(tw *gotwitter.Tweet, eng *api.Engagement, m *matcher, now time.Time) (source.Item, error) {
	id := tweetIDOf(tw)
	if id == "" {
		return source.Item{}, fmt.Errorf("%w: tweet id %q is not a number", ErrMalformed, tw.IDStr)
	}
	author, authorID := "", ""
	if tw.User != nil {
		author = tw.User.ScreenName
		if numeric(tw.User.IDStr) {
			authorID = tw.User.IDStr
		}
	}
	link := "https://twitter.com/i/web/status/" + id
	if validScreenName(author) {
		link = "https://twitter.com/" + author + "/status/" + id
	}
	body, repostOf := tw, ""
	if rt := tw.RetweetedStatus; rt != nil {
		if rid := tweetIDOf(rt); rid != "" {
			body, repostOf = rt, xtext.IDPrefix+rid
		}
	}
	text, links := content(body)
	text = source.CapText(text, maxTextBytes)
	published := now
	if t, err := tw.CreatedAtTime(); err == nil && !t.IsZero() && !t.After(now) {
		published = t
	}
	it := source.Item{
		ID:          xtext.IDPrefix + id,
		Author:      author,
		AuthorID:    authorID,
		Text:        text,
		URL:         link,
		PublishedAt: published.UTC(),
		FetchedAt:   now.UTC(),
		Lang:        lang(tw.Lang),
		Links:       links,
		RepostOf:    repostOf,
		Terms:       m.match(text),
		Engagement:  eng,
	}
	if numeric(tw.InReplyToStatusIDStr) {
		it.ReplyTo = xtext.IDPrefix + tw.InReplyToStatusIDStr
	}
	return it, nil
}

// tweetIDOf is a tweet's id, "" when it has none that is a number.
func tweetIDOf(tw *gotwitter.Tweet) string {
	id := tw.IDStr
	if id == "" && tw.ID > 0 {
		id = strconv.FormatInt(tw.ID, 10)
	}
	if !numeric(id) {
		return ""
	}
	return id
}

// maxIDDigits is the most digits a tweet or user id (a 63-bit number)
// has.
const maxIDDigits = 19

func numeric(s string) bool {
	if s == "" || len(s) > maxIDDigits {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 63)
	return err == nil
}

// content is a tweet's whole text as its author wrote it, with its links;
// for a quote tweet, the quoted tweet's text follows, and its address is
// among the links.
func content(tw *gotwitter.Tweet) (string, []string) {
	text, links := expandedText(tw)
	q := tw.QuotedStatus
	if q == nil {
		return text, links
	}
	qid := tweetIDOf(q)
	if qid == "" {
		return text, links
	}
	if !slices.ContainsFunc(links, func(l string) bool { return xtext.IsStatusOf(l, qid) }) {
		name := ""
		if q.User != nil && validScreenName(q.User.ScreenName) {
			name = q.User.ScreenName
		}
		addr := "https://twitter.com/i/web/status/" + qid
		if name != "" {
			addr = "https://twitter.com/" + name + "/status/" + qid
		}
		links = xtext.AppendLinks(links, addr)
	}
	qtext, qlinks := expandedText(q)
	if qtext != "" {
		text += "\n\n" + qtext
	}
	return text, xtext.AppendLinks(links, qlinks...)
}

// expandedText is a tweet's own whole text, unescaped once, with every
// t.co address of its entities (links and media) replaced by the address
// it stands for, and those addresses in order. The t.co address itself is
// matched, not the entity's indices (which count the escaped text's
// characters differently in places).
func expandedText(tw *gotwitter.Tweet) (string, []string) {
	text := xtext.Unescape(fullText(tw))
	ents, ext := tw.Entities, tw.ExtendedEntities
	if e := tw.ExtendedTweet; e != nil && e.FullText != "" {
		ents, ext = e.Entities, e.ExtendedEntities
	}
	var urls []gotwitter.URLEntity
	if ents != nil {
		urls = append(urls, ents.Urls...)
		for _, m := range ents.Media {
			urls = append(urls, m.URLEntity)
		}
	}
	if ext != nil {
		for _, m := range ext.Media {
			urls = append(urls, m.URLEntity)
		}
	}
	short := make([]xtext.URL, len(urls))
	for i, u := range urls {
		short[i] = xtext.URL{Short: u.URL, Expanded: u.ExpandedURL}
	}
	return xtext.Expand(text, short)
}

// maxLangBytes caps a language tag.
const maxLangBytes = 16

// lang is the tweet's language as an item carries it: lowercased, empty
// for Twitter's "und" (undetermined) and for anything that is not a tag.
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

// fullText is a tweet's whole text: extended_tweet.full_text in
// compatibility mode, full_text in extended mode, text otherwise.
func fullText(tw *gotwitter.Tweet) string {
	if tw.ExtendedTweet != nil && tw.ExtendedTweet.FullText != "" {
		return tw.ExtendedTweet.FullText
	}
	if tw.FullText != "" {
		return tw.FullText
	}
	return tw.Text
}

func validScreenName(s string) bool {
	if s == "" || len(s) > 50 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] == '_' || s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
			return false
		}
	}
	return true
}

// idAt is the smallest tweet id Twitter could assign at t (ids are
// snowflakes whose high bits count milliseconds since Twitter's epoch).
func idAt(t time.Time) int64 {
	ms := t.UnixMilli() - twitterEpochMs
	if ms <= 0 {
		return 0
	}
	return ms << snowflakeTimeShift
}

// searchQueries joins terms into standard-search queries of at most
// maxSearchQueryBytes: "a OR (b c) OR d", every word quoted so that search
// operators ("-x", "from:x") are taken literally.
func searchQueries(terms []string) []string {
	var out []string
	var cur strings.Builder
	for _, t := range terms {
		var words []string
		for _, w := range strings.Fields(t) {
			if w = strings.ReplaceAll(w, `"`, ""); w != "" {
				words = append(words, `"`+w+`"`)
			}
		}
		if len(words) == 0 {
			continue
		}
		part := strings.Join(words, " ")
		if len(words) > 1 {
			part = "(" + part + ")"
		}
		if cur.Len() > 0 && cur.Len()+len(" OR ")+len(part) > maxSearchQueryBytes {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString(" OR ")
		}
		cur.WriteString(part)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// sortTweets orders tweets oldest first and drops repeated ids.
func sortTweets(ts []gotwitter.Tweet) []gotwitter.Tweet {
	slices.SortFunc(ts, func(a, b gotwitter.Tweet) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(ts, func(a, b gotwitter.Tweet) bool { return a.ID == b.ID && a.IDStr == b.IDStr })
}
