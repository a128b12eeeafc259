package reddit

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

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
// (`subreddit:golang`); a reddit query must name at least one, and every
// item carries its own (source.Item.Fields).
const SubredditField = "subreddit"

// StoredRecheck is how often the hub hands the kind the ids of the stored
// things to check again (source.Rechecker): daily, as the hub's compliance
// loop runs, so a thing stored before a move is still re-checked.
const StoredRecheck = 24 * time.Hour

// TombstoneLifetime is how long a deletion is remembered: a deletion is
// learned by the week of re-checks, and a gap is read back only past the
// newest thing a crawler stored, at most MaxPages pages; a day more.
var TombstoneLifetime = source.Days(8)

// Listings of a subreddit the source reads, each a data source.
const (
	listingComments = "comments" // t1, every new comment
	listingNew      = "new"      // t3, every new post
)

// Settings are the spawn's settings of the reddit kind; it is its Driver.
// The credentials belong to the spawn: the hub never sees them.
type Settings struct {
	ClientID     string        `flag:"reddit-client-id" usage:"Reddit app client id (prefer BW_REDDIT_CLIENT_ID_FILE)" secret:"true"`
	ClientSecret string        `flag:"reddit-client-secret" usage:"Reddit app client secret (prefer BW_REDDIT_CLIENT_SECRET_FILE)" secret:"true"`
	UserAgent    string        `flag:"reddit-user-agent" usage:"User-Agent sent to Reddit, in its required form PLATFORM:APP_ID:VERSION (by /u/NAME)"`
	APIURL       string        `flag:"reddit-api-url" usage:"base URL of Reddit's OAuth Data API (listings, /api/info)"`
	AuthURL      string        `flag:"reddit-auth-url" usage:"base URL of Reddit's token endpoint (POST /api/v1/access_token, client credentials)"`
	Recheck      time.Duration `flag:"reddit-recheck" usage:"when a thing handed over is first read again through /api/info for deletion; each next re-check waits twice as long, for a week"`
}

// SetDefaults sets Reddit's public addresses and the first re-check.
func (s *Settings) SetDefaults() {
	s.APIURL = DefaultAPIURL
	s.AuthURL = DefaultAuthURL
	s.Recheck = DefaultRecheck
}

// Info declares the kind: an app's client id has one budget of requests
// for the whole fleet, so every reddit crawler is placed on the one spawn
// that holds it (ScopeFleet); a crawler carries, per listing, the newest
// thing it stored (CursorHistory); a query names its subreddits, which
// every item carries; the stored things are checked again daily.
func (s *Settings) Info() api.SourceInfo {
	return api.SourceInfo{
		Name:              Name,
		Title:             "Reddit",
		Query:             api.QueryLanguage,
		QueryHint:         "subreddit:golang (generics OR iterators)",
		QueryFields:       []string{SubredditField},
		RequiredField:     SubredditField,
		IDPrefix:          IDPrefix,
		Cursor:            api.CursorHistory,
		TombstoneLifetime: TombstoneLifetime,
		Scope:             api.ScopeFleet,
		Recheck:           api.Duration(StoredRecheck),
		Unoffered:         "a spawn offers reddit once its Reddit app is configured (BW_REDDIT_CLIENT_ID, BW_REDDIT_CLIENT_SECRET and --reddit-user-agent)",
		Settings:          source.SettingsOf(s),
	}
}

// Build returns the kind with a client id and secret, a stand-in
// without either, and an error for half of them or a User-Agent not of
// Reddit's form. The base URLs are the operator's; requests go through
// the crawl-target guard all the same.
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	switch {
	case s.ClientID == "" && s.ClientSecret == "":
		return Unconfigured(), nil
	case s.ClientID == "" || s.ClientSecret == "":
		return nil, errors.New("reddit: BW_REDDIT_CLIENT_ID and BW_REDDIT_CLIENT_SECRET must be set together")
	}
	return New(Options{ClientID: s.ClientID, ClientSecret: s.ClientSecret, UserAgent: s.UserAgent,
		APIURL: s.APIURL, AuthURL: s.AuthURL, Recheck: s.Recheck, Client: deps.Client(), Logger: deps.Logger})
}

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
// listings of every subreddit it names. A query that does not name one in
// every branch, or names a subreddit Reddit cannot have, is refused.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	subs, err := subreddits(sub.Query)
	if err != nil {
		return nil, fmt.Errorf("reddit: crawler %d: %w", sub.Spec.CrawlerID, err)
	}
	var out []string
	for _, s := range subs {
		out = append(out, key(s, listingComments), key(s, listingNew))
	}
	return out, nil
}

// subreddits lists, lowercased and sorted, the subreddits a query names
// (its positive subreddit: atoms); it must name one wherever it can match.
func subreddits(q *query.Query) ([]string, error) {
	if q == nil || !q.RequiresField(SubredditField) {
		return nil, ErrNoSubreddit
	}
	names := q.FieldValues(SubredditField)
	for _, s := range names {
		if !subredditName.MatchString(s) {
			return nil, fmt.Errorf("%w: %q", ErrSubreddit, source.Clip(s, 40))
		}
	}
	return names, nil
}
