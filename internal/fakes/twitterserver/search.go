package twitterserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// handleSearch serves search/tweets.json: the published tweets matching q,
// newest first, with id > since_id and id <= max_id, at most count of them.
// q is terms joined by " OR "; a parenthesised group such as "(a b)" needs
// all its words.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	if err := s.checkAuth(r); err != nil {
		s.mu.Lock()
		s.unauthorized++
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, 32, "Could not authenticate you.")
		return
	}
	q := r.Form.Get("q")
	sinceID, _ := strconv.ParseInt(r.Form.Get("since_id"), 10, 64)
	maxID, _ := strconv.ParseInt(r.Form.Get("max_id"), 10, 64)
	count, err := strconv.Atoi(r.Form.Get("count"))
	if err != nil || count <= 0 {
		count = defaultSearchCount
	}
	count = min(count, maxSearchCount)
	extended := r.Form.Get("tweet_mode") == "extended"

	s.mu.Lock()
	s.searchLog = append(s.searchLog, Search{At: time.Now(), Query: q, SinceID: sinceID, MaxID: maxID, Count: count})
	fail := s.searchFail.left > 0
	status := s.searchFail.status
	if fail {
		s.searchFail.left--
	}
	var found []Tweet
	groups := parseQuery(q)
	for i := len(s.history) - 1; i >= 0 && len(found) < count && len(groups) > 0; i-- {
		t := s.history[i]
		if t.ID <= sinceID || (maxID > 0 && t.ID > maxID) {
			continue
		}
		if matchAny(textmatch.Fold(t.Text), groups) {
			found = append(found, t)
		}
	}
	s.mu.Unlock()

	if fail {
		writeError(w, status, 88, statusText(status))
		return
	}
	if q == "" {
		writeError(w, http.StatusBadRequest, 25, "Query parameters are missing.")
		return
	}
	// include_entities=false leaves the entities out, as Twitter does.
	entities := r.Form.Get("include_entities") != "false"
	doc := searchDoc{Statuses: make([]tweetDoc, 0, len(found))}
	for _, t := range found {
		d := searchJSON(t, extended)
		if !entities {
			withoutEntities(&d)
		}
		doc.Statuses = append(doc.Statuses, d)
	}
	doc.Metadata = searchMetadata{Count: count, SinceID: sinceID, SinceIDStr: strconv.FormatInt(sinceID, 10), Query: q}
	if len(found) > 0 {
		doc.Metadata.MaxID = found[0].ID
		doc.Metadata.MaxIDStr = strconv.FormatInt(found[0].ID, 10)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(doc)
}

// parseQuery splits a search query into OR'ed groups of lower-cased words;
// quotes around a word are dropped.
func parseQuery(q string) [][]string {
	var out [][]string
	for _, part := range strings.Split(q, " OR ") {
		part = strings.TrimSpace(part)
		part = strings.TrimSuffix(strings.TrimPrefix(part, "("), ")")
		var words []string
		for _, w := range strings.Fields(strings.ToLower(part)) {
			if w = strings.Trim(w, `"`); w != "" {
				words = append(words, w)
			}
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

type searchDoc struct {
	Statuses []tweetDoc     `json:"statuses"`
	Metadata searchMetadata `json:"search_metadata"`
}

type searchMetadata struct {
	Count      int    `json:"count"`
	SinceID    int64  `json:"since_id"`
	SinceIDStr string `json:"since_id_str"`
	MaxID      int64  `json:"max_id"`
	MaxIDStr   string `json:"max_id_str"`
	Query      string `json:"query"`
}

// tweetDoc is a tweet as API v1.1 sends it (the fields a client reads).
type tweetDoc struct {
	CreatedAt       string         `json:"created_at"`
	ID              int64          `json:"id"`
	IDStr           string         `json:"id_str"`
	Text            string         `json:"text,omitempty"`
	FullText        string         `json:"full_text,omitempty"`
	Truncated       bool           `json:"truncated"`
	ExtendedTweet   *extendedDoc   `json:"extended_tweet,omitempty"`
	User            userDoc        `json:"user"`
	RetweetedStatus *tweetDoc      `json:"retweeted_status,omitempty"`
	RetweetCount    int            `json:"retweet_count"`
	FavoriteCount   int            `json:"favorite_count"`
	Entities        map[string]any `json:"entities,omitempty"`
	Lang            string         `json:"lang"`
	TimestampMs     string         `json:"timestamp_ms,omitempty"`
}

type extendedDoc struct {
	FullText string         `json:"full_text"`
	Entities map[string]any `json:"entities,omitempty"`
}

type userDoc struct {
	ID         int64  `json:"id"`
	IDStr      string `json:"id_str"`
	Name       string `json:"name"`
	ScreenName string `json:"screen_name"`
}

func emptyEntities() map[string]any {
	return map[string]any{"hashtags": []any{}, "urls": []any{}, "user_mentions": []any{}, "symbols": []any{}}
}

func userOf(screenName string) userDoc {
	var h int64
	for _, b := range []byte(screenName) {
		h = h*31 + int64(b)
	}
	if h < 0 {
		h = -h
	}
	return userDoc{ID: h, IDStr: strconv.FormatInt(h, 10), Name: screenName, ScreenName: screenName}
}

// streamJSON shapes a tweet as the filter stream sends it: compatibility
// mode (render.go).
func streamJSON(t Tweet) tweetDoc {
	d := tweetJSON(t, false)
	d.TimestampMs = strconv.FormatInt(t.CreatedAt.UnixMilli(), 10)
	return d
}

// searchJSON shapes a tweet as search sends it: with tweet_mode=extended
// the whole text in full_text, otherwise compatibility mode.
func searchJSON(t Tweet, extended bool) tweetDoc {
	return tweetJSON(t, extended)
}

func tweetJSON(t Tweet, extended bool) tweetDoc {
	d := baseDoc(t)
	if t.RetweetOf != "" {
		orig := originalDoc(t)
		renderText(&orig, orig.ID, t.Text, extended)
		d.RetweetedStatus = &orig
		renderRetweetText(&d, orig.ID, t.RetweetOf, t.Text, extended)
		return d
	}
	renderText(&d, t.ID, t.Text, extended)
	return d
}

// withoutEntities drops a tweet's entities (and those of the tweet it
// retweets).
func withoutEntities(d *tweetDoc) {
	d.Entities = nil
	if d.ExtendedTweet != nil {
		d.ExtendedTweet.Entities = nil
	}
	if d.RetweetedStatus != nil {
		withoutEntities(d.RetweetedStatus)
	}
}

// baseDoc is the tweet's own document. A retweet shares the retweeted
// tweet's retweet_count and is never liked itself.
func baseDoc(t Tweet) tweetDoc {
	d := tweetDoc{
		CreatedAt:     t.CreatedAt.UTC().Format(createdAtLayout),
		ID:            t.ID,
		IDStr:         strconv.FormatInt(t.ID, 10),
		User:          userOf(t.ScreenName),
		RetweetCount:  t.Retweets,
		FavoriteCount: t.Likes,
		Entities:      emptyEntities(),
		Lang:          "en",
	}
	if t.RetweetOf != "" {
		d.FavoriteCount = 0
	}
	return d
}

// originalDoc is the tweet a retweet shares, with its counts.
func originalDoc(t Tweet) tweetDoc {
	return baseDoc(Tweet{ID: t.ID - 1, ScreenName: t.RetweetOf, Text: t.Text, CreatedAt: t.CreatedAt, Retweets: t.Retweets, Likes: t.Likes})
}
