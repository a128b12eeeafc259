package reddit

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// What the rest of the spawn knows of this source, in one place.

// Name is the source's name in crawlers and comments.
const Name = "reddit"

// IDPrefix starts every comment id of this source ("reddit:<fullname>").
const IDPrefix = "reddit:"

// SubredditField is the query field that names a subreddit
// (`subreddit:golang`); a reddit query must name at least one.
const SubredditField = "subreddit"

// Listings of a subreddit the source reads, each a data source.
const (
	listingComments = "comments" // t1, every new comment
	listingNew      = "new"      // t3, every new post
)

// subredditName is what Reddit allows a subreddit to be called: letters,
// digits and underscores, 2 to 21 (a few old ones are 2 long).
var subredditName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_]{1,20}$`)

// key is the data source key of a subreddit's listing: "reddit:golang:new".
// It also keys the crawler's cursor in that listing (api.Cursor.Sources).
func key(sub, listing string) string { return Name + ":" + sub + ":" + listing }

func parseKey(k string) (sub, listing string, err error) {
	parts := strings.Split(k, ":")
	if len(parts) != 3 || parts[0] != Name || !subredditName.MatchString(parts[1]) ||
		(parts[2] != listingComments && parts[2] != listingNew) {
		return "", "", fmt.Errorf("reddit: data source key %q is not reddit:<subreddit>:comments|new", k)
	}
	return parts[1], parts[2], nil
}

// Keys returns the keys of the listings a subscriber's query needs: both
// listings of every subreddit it names. A query that names none, or names
// a subreddit Reddit cannot have, is refused.
func (k *Kind) Keys(spec api.SubscriberSpec) ([]string, error) {
	subs, err := subreddits(spec)
	if err != nil {
		return nil, fmt.Errorf("reddit: crawler %d: %w", spec.CrawlerID, err)
	}
	var out []string
	for _, s := range subs {
		out = append(out, key(s, listingComments), key(s, listingNew))
	}
	return out, nil
}

// Scope is ScopeFleet: an app's client id has one budget of requests for
// the whole fleet, so every reddit crawler is placed on the one spawn
// that holds it.
func (k *Kind) Scope() source.Scope { return source.ScopeFleet }

// subreddits reads the subreddits a subscriber's query names, lowercased
// and sorted: those every match of the query lies in (an OR must name one
// in every branch; an AND needs one in some kid).
func subreddits(spec api.SubscriberSpec) ([]string, error) {
	q, err := query.ParseList(spec.Query)
	if err != nil {
		return nil, err
	}
	set, ok := cover(q.Root(), false)
	if !ok || len(set) == 0 {
		return nil, ErrNoSubreddit
	}
	for s := range set {
		if !subredditName.MatchString(s) {
			return nil, fmt.Errorf("%w: %q", ErrSubreddit, source.Clip(s, 40))
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// subredditOf reads a subreddit atom: the field's name, a colon, a name.
func subredditOf(n *query.Node) (string, bool) {
	if n.Op != query.OpAtom || n.Atom.Kind != query.Word {
		return "", false
	}
	name, ok := strings.CutPrefix(n.Atom.Value, SubredditField+":")
	if !ok || name == "" {
		return "", false
	}
	return strings.ToLower(name), true
}

// cover returns subreddits such that every thing n (negated if neg)
// matches lies in one of them: an atom covers its subreddit, an OR the
// union of its branches' covers (every branch needs one), an AND the
// smallest of its kids'; negation swaps AND and OR, and a negated atom
// covers nothing.
func cover(n *query.Node, neg bool) (map[string]bool, bool) {
	switch n.Op {
	case query.OpAtom:
		s, ok := subredditOf(n)
		if !ok || neg {
			return nil, false
		}
		return map[string]bool{s: true}, true
	case query.OpNot:
		if len(n.Kids) != 1 {
			return nil, false
		}
		return cover(n.Kids[0], !neg)
	}
	all := (n.Op == query.OpOr) != neg
	var best map[string]bool
	found := false
	for _, kid := range n.Kids {
		c, ok := cover(kid, neg)
		switch {
		case all && !ok:
			return nil, false
		case all:
			if best == nil {
				best = map[string]bool{}
			}
			maps.Copy(best, c)
			found = true
		case ok && (!found || len(c) < len(best)):
			best, found = c, true
		}
	}
	return best, found
}
