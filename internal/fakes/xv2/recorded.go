package xv2

import (
	"strings"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// recordedMessage is the part of a recorded stream message that X's rules
// are evaluated on.
type recordedMessage struct {
	Data     *recordedTweet `json:"data"`
	Includes struct {
		Users []struct {
			ID       string `json:"id"`
			Username string `json:"username"`
		} `json:"users"`
		Tweets []recordedTweet `json:"tweets"`
	} `json:"includes"`
}

type recordedTweet struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	AuthorID  string `json:"author_id"`
	Lang      string `json:"lang"`
	NoteTweet *struct {
		Text     string `json:"text"`
		Entities struct {
			URLs []urlJSON `json:"urls"`
		} `json:"entities"`
	} `json:"note_tweet"`
	Entities struct {
		URLs []urlJSON `json:"urls"`
	} `json:"entities"`
	ReferencedTweets []refJSON `json:"referenced_tweets"`
}

// maxRefDepth bounds how deep references are followed: a repost of a
// quote post is two.
const maxRefDepth = 2

// unescaper undoes X's escaping of a text, each entity once.
var unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// matchInput is what the rules see of the message.
func (m recordedMessage) matchInput() post {
	tweets := map[string]recordedTweet{}
	for _, t := range m.Includes.Tweets {
		tweets[t.ID] = t
	}
	username := ""
	for _, u := range m.Includes.Users {
		if u.ID == m.Data.AuthorID {
			username = u.Username
		}
	}
	var text func(t recordedTweet, depth int) string
	text = func(t recordedTweet, depth int) string {
		body, urls := t.Text, t.Entities.URLs
		if t.NoteTweet != nil {
			body, urls = t.NoteTweet.Text, t.NoteTweet.Entities.URLs
		}
		body = unescaper.Replace(body)
		for _, u := range urls {
			body = strings.ReplaceAll(body, u.URL, u.ExpandedURL)
		}
		for _, r := range t.ReferencedTweets {
			ref, ok := tweets[r.ID]
			switch {
			case !ok || depth >= maxRefDepth:
			case r.Type == refTypeRetweeted:
				body = text(ref, depth+1)
			case r.Type == refTypeQuoted:
				body += "\n" + text(ref, depth+1)
			}
		}
		return body
	}
	return post{text: textmatch.Fold(text(*m.Data, 0)), username: strings.ToLower(username), lang: strings.ToLower(m.Data.Lang)}
}
