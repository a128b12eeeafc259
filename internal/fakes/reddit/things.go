package reddit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Comment and Post build things with the fields a recorded thing of 2023
// carries (praw's TestSubredditStreams cassette), the ones a listener
// reads filled in.

// CommentSpec describes a new comment.
type CommentSpec struct {
	Subreddit string
	Author    string
	Body      string
	// Link is the post's fullname (t3_…); Parent the parent's (the post
	// or a comment); empty Parent means the post.
	Link, Parent string
	// Created is its time; zero is the server's clock.
	Created time.Time
}

// PostSpec describes a new post: a self post with Selftext, or a link post
// with URL.
type PostSpec struct {
	Subreddit string
	Author    string
	Title     string
	Selftext  string
	URL       string
	Created   time.Time
}

func parse36(s string) int64 {
	n, _ := strconv.ParseInt(s, 36, 64)
	return n
}

func (s *Server) nextIDLocked(kind string) string {
	id := strconv.FormatInt(s.next[kind], 36)
	s.next[kind]++
	return id
}

func (s *Server) createdLocked(t time.Time) float64 {
	if t.IsZero() {
		t = s.opts.Now()
	}
	return float64(t.Unix())
}

// Comment adds a comment and returns its fullname.
func (s *Server) Comment(c CommentSpec) string { return s.Comments(c)[0] }

// Comments adds comments at once (no request sees some of them without
// the others) and returns their fullnames.
func (s *Server) Comments(cs ...CommentSpec) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = s.commentLocked(c)
	}
	return out
}

func (s *Server) commentLocked(c CommentSpec) string {
	id := s.nextIDLocked("t1")
	parent := c.Parent
	if parent == "" {
		parent = c.Link
	}
	link36 := strings.TrimPrefix(c.Link, "t3_")
	created := s.createdLocked(c.Created)
	d := map[string]any{
		"subreddit_id": "t5_" + strconv.FormatInt(int64(len(c.Subreddit))*7919, 36), "approved_at_utc": nil,
		"author_is_blocked": false, "comment_type": nil, "link_title": "", "mod_reason_by": nil, "banned_by": nil,
		"ups": 1, "num_reports": nil, "author_flair_type": "text", "total_awards_received": 0,
		"subreddit": c.Subreddit, "likes": nil, "replies": "", "user_reports": []any{}, "saved": false,
		"id": id, "banned_at_utc": nil, "gilded": 0, "archived": false, "no_follow": true,
		"author": c.Author, "can_mod_post": false, "send_replies": true, "parent_id": parent, "score": 1,
		"author_fullname": "t2_" + strings.ToLower(c.Author), "over_18": false, "removal_reason": nil,
		"approved_by": nil, "controversiality": 0, "body": c.Body, "edited": false, "downs": 0,
		"is_submitter": false, "collapsed": false, "body_html": "<div class=\"md\"><p>" + legacyEscape(c.Body) + "</p>\n</div>",
		"distinguished": nil, "stickied": false, "link_id": c.Link, "score_hidden": false,
		"permalink":      fmt.Sprintf("/r/%s/comments/%s/_/%s/", c.Subreddit, link36, id),
		"subreddit_type": "public", "name": "t1_" + id, "subreddit_name_prefixed": "r/" + c.Subreddit,
		"created": created, "created_utc": created, "locked": false, "mod_reports": []any{}, "quarantine": false,
	}
	return s.addLocked("t1", d)
}

// Post adds a post and returns its fullname.
func (s *Server) Post(p PostSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextIDLocked("t3")
	created := s.createdLocked(p.Created)
	permalink := fmt.Sprintf("/r/%s/comments/%s/post/", p.Subreddit, id)
	self := p.URL == ""
	url := p.URL
	if self {
		url = "https://www.reddit.com" + permalink
	}
	d := map[string]any{
		"approved_at_utc": nil, "subreddit": p.Subreddit, "selftext": p.Selftext, "author_fullname": "t2_" + strings.ToLower(p.Author),
		"saved": false, "gilded": 0, "clicked": false, "title": p.Title, "subreddit_name_prefixed": "r/" + p.Subreddit,
		"hidden": false, "downs": 0, "name": "t3_" + id, "upvote_ratio": 1.0, "ups": 1, "is_self": self,
		"score": 1, "edited": false, "created": created, "created_utc": created, "domain": "self." + p.Subreddit,
		"selftext_html": nil, "likes": nil, "archived": false, "over_18": false, "id": id, "author": p.Author,
		"num_comments": 0, "permalink": permalink, "url": url, "subreddit_type": "public", "removed_by_category": nil,
		"stickied": false, "locked": false, "distinguished": nil,
	}
	if !self {
		d["url_overridden_by_dest"] = url
		d["domain"] = strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
	}
	return s.addLocked("t3", d)
}

// AddThing adds a recorded thing ({"kind": "t1"|"t3", "data": {…}}),
// served as recorded.
func (s *Server) AddThing(raw []byte) (string, error) {
	var t struct {
		Kind string         `json:"kind"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("reddit: recorded thing: %w", err)
	}
	name, _ := t.Data["name"].(string)
	if (t.Kind != "t1" && t.Kind != "t3") || !strings.HasPrefix(name, t.Kind+"_") {
		return "", fmt.Errorf("reddit: recorded thing of kind %q named %q", t.Kind, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(t.Kind, t.Data), nil
}

func (s *Server) addLocked(kind string, d map[string]any) string {
	name := d["name"].(string)
	sub, _ := d["subreddit"].(string)
	listing := strings.ToLower(sub) + "/comments"
	if kind == "t3" {
		listing = strings.ToLower(sub) + "/new"
	}
	s.things[name] = &thing{kind: kind, data: d}
	s.order[listing] = append(s.order[listing], name)
	return name
}

// Delete deletes a thing as its author does: author and body become
// "[deleted]" and it leaves the listings.
func (s *Server) Delete(fullname string) { s.setGone(fullname, "deleted") }

// Remove removes a thing as a moderator does: its body becomes
// "[removed]" and it leaves the listings.
func (s *Server) Remove(fullname string) { s.setGone(fullname, "removed") }

func (s *Server) setGone(fullname, how string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.things[fullname]; ok {
		t.gone = how
	}
}

// Edit replaces a comment's body (a post's selftext) and sets edited.
func (s *Server) Edit(fullname, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.things[fullname]
	if !ok {
		return
	}
	key := "body"
	if t.kind == "t3" {
		key = "selftext"
	}
	t.data[key] = text
	t.data["edited"] = float64(s.opts.Now().Unix())
}
