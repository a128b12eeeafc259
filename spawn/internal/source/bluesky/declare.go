package bluesky

import (
	"errors"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Name is the kind's name in crawler documents.
const Name = "bluesky"

// IDPrefix starts every at:// URI, and so every bluesky comment id: the
// post's URI.
const IDPrefix = "at://"

// Settings are the spawn's settings of the bluesky kind; it is its
// Driver.
type Settings struct {
	On           bool   `flag:"bluesky" usage:"offer the bluesky source (Jetstream needs no credentials)"`
	JetstreamURL string `flag:"bluesky-jetstream-url" usage:"Jetstream subscribe URL (ws:// or wss://) the bluesky source reads"`
	AppViewURL   string `flag:"bluesky-appview-url" usage:"AppView (http:// or https://) the bluesky source asks for authors' handles (app.bsky.actor.getProfiles)"`
	Compress     bool   `flag:"bluesky-compress" usage:"ask Jetstream for zstd-compressed events (less bandwidth, more CPU)"`
}

// SetDefaults offers the kind, on Bluesky's public services.
func (s *Settings) SetDefaults() {
	s.On = true
	s.JetstreamURL = DefaultJetstreamURL
	s.AppViewURL = DefaultAppViewURL
}

// Info declares the kind: one Jetstream connection per spawn; Jetstream
// replays about 36 hours from a cursor (time_us), which a crawler carries,
// and a deletion is remembered twice that.
func (s *Settings) Info() api.SourceInfo {
	return api.SourceInfo{
		Name:              Name,
		Title:             "Bluesky",
		Query:             api.QueryLanguage,
		QueryHint:         "(golang OR #golang) -job lang:en",
		IDPrefix:          IDPrefix,
		Cursor:            api.CursorLog,
		TombstoneLifetime: source.Days(3),
		Scope:             api.ScopeNode,
		Unoffered:         "every spawn offers bluesky unless started with --bluesky=false",
		Settings:          source.SettingsOf(s),
	}
}

// Build returns the kind, or a stand-in when turned off. The Jetstream
// and AppView URLs are the operator's, not crawl input: they are not held
// to the crawl-target guard (the demo's are on loopback).
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	if !s.On {
		return source.Unconfigured(errors.New("bluesky: this spawn runs with --bluesky=false")), nil
	}
	return New(Options{JetstreamURL: s.JetstreamURL, AppViewURL: s.AppViewURL, Compress: s.Compress, Logger: deps.Logger})
}
