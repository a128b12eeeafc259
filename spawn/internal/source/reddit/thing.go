package reddit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Kinds of things the source reads.
const (
	kindComment = "t1"
	kindPost    = "t3"
)

// Markers Reddit puts in place of what was taken back.
const (
	markDeleted = "[deleted]"
	markRemoved = "[removed]"
)

// listingDoc is a Listing answer.
type listingDoc struct {
	Kind string `json:"kind"`
	Data struct {
		After    *string    `json:"after"`
		Children []thingDoc `json:"children"`
	} `json:"data"`
}

// thingDoc is one child of a listing.
type thingDoc struct {
	Kind string    `json:"kind"`
	Data thingData `json:"data"`
}

// thingData is the part of a comment (t1) or post (t3) the source reads.
type thingData struct {
	ID                string          `json:"id"`
	Name              string          `json:"name"`
	Author            string          `json:"author"`
	AuthorFullname    string          `json:"author_fullname"`
	Subreddit         string          `json:"subreddit"`
	Body              string          `json:"body"`
	Title             string          `json:"title"`
	Selftext          string          `json:"selftext"`
	IsSelf            bool            `json:"is_self"`
	URL               string          `json:"url"`
	URLOverridden     string          `json:"url_overridden_by_dest"`
	Permalink         string          `json:"permalink"`
	ParentID          string          `json:"parent_id"`
	LinkID            string          `json:"link_id"`
	CreatedUTC        float64         `json:"created_utc"`
	Edited            json.RawMessage `json:"edited"`
	RemovedByCategory *string         `json:"removed_by_category"`
}

// parse36 reads a base36 id; Reddit's ids of one kind grow with time.
func parse36(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 36, 64)
	return n, err == nil && n > 0
}

// fullnameID reads a fullname ("t1_k3yrfii") of kind.
func fullnameID(fullname, kind string) (int64, bool) {
	rest, ok := strings.CutPrefix(fullname, kind+"_")
	if !ok {
		return 0, false
	}
	return parse36(rest)
}

// check validates a thing of the listing's kind and returns its id.
func (t thingDoc) check(kind string) (int64, error) {
	if t.Kind != kind {
		return 0, fmt.Errorf("%w: a %q in a listing of %q", ErrMalformed, clip(t.Kind), kind)
	}
	id, ok := parse36(t.Data.ID)
	if !ok || t.Data.Name != kind+"_"+t.Data.ID {
		return 0, fmt.Errorf("%w: thing %q named %q", ErrMalformed, clip(t.Data.ID), clip(t.Data.Name))
	}
	if t.Data.CreatedUTC <= 0 {
		return 0, fmt.Errorf("%w: thing %s without created_utc", ErrMalformed, t.Data.Name)
	}
	return id, nil
}

// gone reports whether Reddit took the thing back: its author deleted it
// (author and body "[deleted]") or a moderator or Reddit removed it (body
// "[removed]"; a post's removed_by_category set).
func (d *thingData) gone() bool {
	text := d.Body
	if d.Name != "" && strings.HasPrefix(d.Name, kindPost+"_") {
		text = d.Selftext
		if d.RemovedByCategory != nil && *d.RemovedByCategory != "" {
			return true
		}
	}
	return d.Author == markDeleted || text == markDeleted || text == markRemoved
}

// created is when the thing was created.
func (d *thingData) created() time.Time {
	return time.Unix(0, int64(d.CreatedUTC*float64(time.Second))).UTC()
}

// editedAt is when the thing was last edited, zero when never ("edited":
// false, or absent).
func (d *thingData) editedAt() time.Time {
	var ts float64
	if json.Unmarshal(d.Edited, &ts) != nil || ts <= 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(ts*float64(time.Second))).UTC()
}

// permalinkURL is the thing's page: www.reddit.com and its permalink, or,
// for things recorded before Reddit sent comments' permalinks, the
// canonical path built from the subreddit, the post and the id.
func (d *thingData) permalinkURL(kind string) string {
	if p := d.Permalink; strings.HasPrefix(p, "/") {
		return "https://www.reddit.com" + p
	}
	if kind == kindComment {
		return fmt.Sprintf("https://www.reddit.com/r/%s/comments/%s/_/%s/", d.Subreddit, strings.TrimPrefix(d.LinkID, kindPost+"_"), d.ID)
	}
	return fmt.Sprintf("https://www.reddit.com/r/%s/comments/%s/", d.Subreddit, d.ID)
}

// textOf is what a comment shows of a thing: a comment's body, a post's
// title, a blank line, and its selftext when it has one.
func (d *thingData) textOf(kind string) string {
	if kind == kindComment {
		return source.CapText(d.Body, maxTextBytes)
	}
	out := d.Title
	if s := strings.TrimSpace(d.Selftext); s != "" {
		out += "\n\n" + d.Selftext
	}
	return source.CapText(out, maxTextBytes)
}

// bareURL finds http(s) URLs in Markdown text: bare, or the target of a
// [link](url).
var bareURL = regexp.MustCompile(`https?://[^\s()<>\[\]"']+`)

// linksOf are a thing's URLs in order without repeats: a link post's
// target, then the URLs of its text.
func (d *thingData) linksOf(kind, text string) []string {
	var links []string
	seen := map[string]bool{}
	add := func(u string) {
		u = strings.TrimRight(u, ".,;:!?*_~")
		if u != "" && !seen[u] && len(links) < maxLinks {
			seen[u] = true
			links = append(links, u)
		}
	}
	if kind == kindPost && !d.IsSelf {
		if d.URLOverridden != "" {
			add(d.URLOverridden)
		} else if strings.HasPrefix(d.URL, "http") {
			add(d.URL)
		}
	}
	for _, u := range bareURL.FindAllString(text, -1) {
		add(u)
	}
	return links
}

// toItem is the item a thing of kind becomes.
func toItem(kind string, d *thingData, id int64, now time.Time) source.Item {
	text := d.textOf(kind)
	it := source.Item{
		ID:          IDPrefix + d.Name,
		Author:      d.Author,
		AuthorID:    d.AuthorFullname,
		Text:        text,
		URL:         d.permalinkURL(kind),
		PublishedAt: d.created(),
		FetchedAt:   now,
		Links:       d.linksOf(kind, text),
		SourceID:    strconv.FormatInt(id, 10),
	}
	if sub := strings.ToLower(d.Subreddit); sub != "" {
		it.Fields = map[string]string{SubredditField: sub}
	}
	if kind == kindComment {
		if d.ParentID != "" {
			it.ReplyTo = IDPrefix + d.ParentID
		}
		if d.LinkID != "" {
			it.ThreadID = IDPrefix + d.LinkID
		}
	}
	return it
}
