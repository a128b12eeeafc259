// Package twitter is the twitter source kind as the spawn offers it: over
// X API v2 (package twitterv2: the filtered stream, one connection for the
// fleet) when a bearer token is configured, over v1.1 (package twitterv1:
// the filter stream, one per spawn) with the four OAuth 1.0a credentials,
// and otherwise not at all. It declares the kind and holds its settings;
// the stored posts are checked against X's batch compliance API
// (package xcompliance) over v2.
package twitter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/xtext"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/twitterv1"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/twitterv2"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/xcompliance"
)

// Name is the kind's name in crawler documents.
const Name = "twitter"

// IDPrefix starts every twitter comment id: "tw:" and the post id.
const IDPrefix = xtext.IDPrefix

// DefaultRecheck is how often the stored posts are checked with X's batch
// compliance API: X's developer terms ask for deletions to be honoured
// within a day.
const DefaultRecheck = 24 * time.Hour

// Settings are the spawn's settings of the twitter kind; it is its Driver.
// The credentials belong to the spawn: the hub never sees them.
type Settings struct {
	ConsumerKey    string `flag:"twitter-consumer-key" usage:"Twitter API consumer key (prefer BW_TWITTER_CONSUMER_KEY_FILE)" secret:"true"`
	ConsumerSecret string `flag:"twitter-consumer-secret" usage:"Twitter API consumer secret (prefer BW_TWITTER_CONSUMER_SECRET_FILE)" secret:"true"`
	AccessToken    string `flag:"twitter-access-token" usage:"Twitter access token of the crawling account (prefer BW_TWITTER_ACCESS_TOKEN_FILE)" secret:"true"`
	AccessSecret   string `flag:"twitter-access-secret" usage:"Twitter access token secret (prefer BW_TWITTER_ACCESS_SECRET_FILE)" secret:"true"`
	BearerToken    string `flag:"twitter-bearer-token" usage:"X API v2 app bearer token: selects the v2 filtered stream (prefer BW_TWITTER_BEARER_TOKEN_FILE)" secret:"true"`
	MaxRules       int    `flag:"twitter-max-rules" usage:"rules the X API v2 project allows"`
	MaxRuleLength  int    `flag:"twitter-max-rule-length" usage:"characters one X API v2 rule may have"`
	APIURL         string `flag:"twitter-api-url" usage:"base URL of the Twitter REST API (v1.1 search backfill; v2 rules, filtered stream and batch compliance under /2/)"`
	StreamURL      string `flag:"twitter-stream-url" usage:"base URL of the Twitter streaming API (filter stream)"`
}

// SetDefaults sets the services' public addresses and X's default limits.
func (s *Settings) SetDefaults() {
	s.APIURL = twitterv1.DefaultAPIURL
	s.StreamURL = twitterv1.DefaultStreamURL
	s.MaxRules = twitterv2.DefaultMaxRules
	s.MaxRuleLength = twitterv2.DefaultMaxRuleLength
}

func (s *Settings) v1() twitterv1.Credentials {
	return twitterv1.Credentials{ConsumerKey: s.ConsumerKey, ConsumerSecret: s.ConsumerSecret,
		AccessToken: s.AccessToken, AccessSecret: s.AccessSecret}
}

// Info declares the kind. Over v2 one connection serves the fleet and the
// stored posts are checked with X daily; over v1.1 each spawn has its own
// connection. Gaps are filled from recent search, which reaches 7 days
// back: a deletion is remembered 8.
func (s *Settings) Info() api.SourceInfo {
	info := api.SourceInfo{
		Name:              Name,
		Title:             "X (Twitter)",
		Query:             api.QueryLanguage,
		QueryHint:         "(golang OR #golang) -hiring lang:en",
		IDPrefix:          IDPrefix,
		Cursor:            api.CursorHistory,
		TombstoneLifetime: source.Days(8),
		Scope:             api.ScopeFleet,
		Recheck:           api.Duration(DefaultRecheck),
		Unoffered:         "a spawn offers twitter once its X credentials are configured (BW_TWITTER_BEARER_TOKEN, or the four OAuth 1.0a ones)",
		Settings:          source.SettingsOf(s),
	}
	if s.BearerToken == "" && s.v1().Complete() {
		info.Scope, info.Recheck = api.ScopeNode, 0
	}
	return info
}

// Build returns the v2 kind with a bearer token, the v1.1 kind with the
// four OAuth credentials, and a stand-in without either.
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	creds := s.v1()
	switch {
	case s.BearerToken != "" && !creds.IsZero():
		return nil, errors.New("give either --twitter-bearer-token (X API v2) or the four OAuth 1.0a credentials (v1.1), not both")
	case s.BearerToken != "":
		k, err := twitterv2.New(twitterv2.Options{
			APIURL: s.APIURL, BearerToken: s.BearerToken,
			MaxRules: s.MaxRules, MaxRuleLength: s.MaxRuleLength,
			Client: deps.Client(), Logger: deps.Logger,
		})
		if err != nil {
			return nil, err
		}
		// The job documents name where to upload and download: those
		// URLs come from the service and go through the guard too.
		c, err := xcompliance.New(xcompliance.Options{APIURL: s.APIURL, BearerToken: s.BearerToken,
			Client: deps.Client(), Logger: deps.Log("x-compliance")})
		if err != nil {
			return nil, err
		}
		return checked{Kind: k, checker: c}, nil
	case creds.Complete():
		return twitterv1.New(twitterv1.Options{
			Credentials: creds, APIURL: s.APIURL, StreamURL: s.StreamURL,
			Client: deps.Client(), Logger: deps.Logger,
		})
	case !creds.IsZero():
		return nil, errors.New("--twitter-consumer-key, --twitter-consumer-secret, --twitter-access-token and --twitter-access-secret must be set together")
	}
	return twitterv1.Unconfigured(), nil
}

// checked is the v2 kind with X's batch compliance check.
type checked struct {
	*twitterv2.Kind
	checker *xcompliance.Checker
}

// Recheck checks stored posts with X's batch compliance API.
func (c checked) Recheck(ctx context.Context, ids []string) (source.Checked, error) {
	bare := make([]string, 0, len(ids))
	for _, id := range ids {
		if n, ok := cutPrefix(id); ok {
			bare = append(bare, n)
		}
	}
	res, err := c.checker.Check(ctx, bare)
	out := source.Checked{JobID: res.JobID, Status: res.Status, Gone: make(map[string]string, len(res.Gone))}
	for _, g := range res.Gone {
		out.Gone[IDPrefix+g.ID] = "x compliance: " + g.Reason
	}
	if err != nil {
		return out, fmt.Errorf("twitter: %w", err)
	}
	return out, nil
}

func cutPrefix(id string) (string, bool) {
	if len(id) > len(IDPrefix) && id[:len(IDPrefix)] == IDPrefix {
		return id[len(IDPrefix):], true
	}
	return "", false
}
