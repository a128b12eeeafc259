package twitterserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// recordedTweet is the part of a recorded v1.1 tweet that track terms
// are matched on.
type recordedTweet struct {
	IDStr         string `json:"id_str"`
	Text          string `json:"text"`
	FullText      string `json:"full_text"`
	ExtendedTweet *struct {
		FullText string          `json:"full_text"`
		Entities recordedEntites `json:"entities"`
	} `json:"extended_tweet"`
	Entities recordedEntites `json:"entities"`
	User     struct {
		ScreenName string `json:"screen_name"`
	} `json:"user"`
	RetweetedStatus *recordedTweet `json:"retweeted_status"`
	QuotedStatus    *recordedTweet `json:"quoted_status"`
}

type recordedEntites struct {
	URLs []struct {
		URL         string `json:"url"`
		ExpandedURL string `json:"expanded_url"`
		DisplayURL  string `json:"display_url"`
	} `json:"urls"`
}

// matchText is what Twitter's track matches a tweet on: its whole text
// unescaped, with its links' expanded and display forms, its author's
// screen name, and the text of a tweet it retweets or quotes.
func (t *recordedTweet) matchText(depth int) string {
	text, ents := t.Text, t.Entities
	if t.FullText != "" {
		text = t.FullText
	}
	if e := t.ExtendedTweet; e != nil && e.FullText != "" {
		text, ents = e.FullText, e.Entities
	}
	parts := []string{unescaper.Replace(text), t.User.ScreenName}
	for _, u := range ents.URLs {
		parts = append(parts, u.ExpandedURL, u.DisplayURL)
	}
	if depth < maxRecordedDepth {
		for _, ref := range []*recordedTweet{t.RetweetedStatus, t.QuotedStatus} {
			if ref != nil {
				parts = append(parts, ref.matchText(depth+1))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// maxRecordedDepth bounds how deep retweeted and quoted tweets are read: a
// retweet of a quote tweet is two.
const maxRecordedDepth = 2

// PublishMessage sends a recorded v1.1 tweet (as X's documentation shows
// one) as it is to every open stream tracking a term it matches, the way
// Twitter matches track terms: on the whole unescaped text, the links'
// expanded and display forms, the author's screen name, and the retweeted
// or quoted tweet. It returns how many streams it was sent to, or an error
// for a document that is not a tweet.
func (s *Server) PublishMessage(doc []byte) (int, error) {
	var t recordedTweet
	if err := json.Unmarshal(doc, &t); err != nil {
		return 0, fmt.Errorf("twitterserver: recorded tweet: %w", err)
	}
	if t.IDStr == "" {
		return 0, errors.New("twitterserver: recorded tweet has no id_str")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return 0, fmt.Errorf("twitterserver: recorded tweet: %w", err)
	}
	text := textmatch.Fold(t.matchText(0))
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if matchAny(text, c.terms) {
			s.sendLocked(c, compact.Bytes())
			n++
		}
	}
	return n, nil
}
