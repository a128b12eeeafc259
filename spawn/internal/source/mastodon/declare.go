package mastodon

import (
	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Name is the kind's name in crawler documents.
const Name = "mastodon"

// Settings are the spawn's settings of the mastodon kind; it is its
// Driver.
type Settings struct {
	URL   []string `flag:"mastodon-url" usage:"base URLs of the Mastodon instances the mastodon source streams from; empty disables it"`
	Token string   `flag:"mastodon-token" usage:"Mastodon access token with read:statuses (prefer BW_MASTODON_TOKEN_FILE)" secret:"true"`
}

// Info declares the kind: one streaming connection per instance and spawn;
// a gap is filled from the instance's timelines, read back up to 7 days,
// so a deletion is remembered 8.
func (s *Settings) Info() api.SourceInfo {
	return api.SourceInfo{
		Name:              Name,
		Title:             "Mastodon",
		Query:             api.QueryLanguage,
		QueryHint:         "#golang OR (go release)",
		Cursor:            api.CursorHistory,
		TombstoneLifetime: source.Days(8),
		Scope:             api.ScopeNode,
		Unoffered:         "a spawn offers mastodon once its instances are configured (--mastodon-url)",
		Settings:          source.SettingsOf(s),
	}
}

// Build returns the kind when instances are configured, a stand-in
// otherwise. Instance URLs are the operator's, but what they answer
// (statuses, contexts) leads to other URLs: all go through the guard.
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	if len(s.URL) == 0 {
		return Unconfigured(), nil
	}
	if s.Token == "" {
		deps.Log(Name).Warn("mastodon source without an access token: instances since Mastodon 4.2 refuse public streams without one (set BW_MASTODON_TOKEN_FILE)")
	}
	return New(Options{Instances: s.URL, Token: s.Token, Client: deps.Client(), Logger: deps.Logger})
}
