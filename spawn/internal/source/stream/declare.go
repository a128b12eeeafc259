package stream

import (
	"errors"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Name is the kind's name in crawler documents.
const Name = "stream"

// IDPrefix starts every stream comment id: "ds:" and the interaction id.
const IDPrefix = "ds:"

// Settings are the spawn's settings of the stream kind; it is its Driver.
type Settings struct {
	URL      string `flag:"stream-url" usage:"base URL of the commercial stream service (compile and multi-stream endpoints); empty disables the stream source"`
	Username string `flag:"stream-username" usage:"account name at the stream service"`
	APIKey   string `flag:"stream-api-key" usage:"API key at the stream service (prefer BW_STREAM_API_KEY_FILE)" secret:"true"`
}

// Info declares the kind: one connection per spawn carries every
// subscription on it; the service keeps no history to fill a gap from.
func (s *Settings) Info() api.SourceInfo {
	return api.SourceInfo{
		Name:              Name,
		Title:             "Commercial stream",
		Query:             api.QueryLanguage,
		QueryHint:         `"new release" (golang OR rust)`,
		IDPrefix:          IDPrefix,
		Cursor:            api.CursorNone,
		TombstoneLifetime: source.Days(8),
		Scope:             api.ScopeNode,
		Unoffered:         "a spawn offers stream once its endpoint and API key are configured (--stream-url, BW_STREAM_API_KEY)",
		Settings:          source.SettingsOf(s),
	}
}

// Build returns the kind with an endpoint and a key, a stand-in with
// neither.
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	switch {
	case s.URL != "" && s.APIKey != "":
		return New(Options{URL: s.URL, Username: s.Username, APIKey: s.APIKey, Client: deps.Client(), Logger: deps.Logger})
	case s.URL != "" || s.APIKey != "" || s.Username != "":
		return nil, errors.New("--stream-url and --stream-api-key must be set together")
	}
	return Unconfigured(), nil
}
