package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// SourceInfo is what a source kind declares of itself: everything the hub,
// the node, the stores, the query language, the page and bwctl need to know
// of it, so that none of them names a source. Each source package under
// spawn/internal/source declares its own (as Nomad's task drivers answer
// Capabilities); a spawn sends the declarations of the kinds it knows when
// it registers, and BuiltinSources holds those of the kinds this build
// carries, so a hub that has not met a spawn yet knows them too.
type SourceInfo struct {
	// Name is the kind's name in crawler documents and on the command line
	// ("rss").
	Name string `json:"name"`
	// Title is how the page and bwctl show the kind ("RSS and Atom feeds").
	Title string `json:"title"`
	// Query says what a crawler's query of the kind is.
	Query QueryForm `json:"query"`
	// QueryHint is an example query the page shows in an empty query field.
	QueryHint string `json:"query_hint,omitempty"`
	// QueryFields are the field atoms (NAME:VALUE) the kind's items carry
	// besides the language's own (from:, lang:): Reddit's subreddit.
	QueryFields []string `json:"query_fields,omitempty"`
	// RequiredField, when set, is a field of QueryFields that every query
	// must name outside a negation: where the kind reads from (a Reddit
	// query names its subreddits).
	RequiredField string `json:"required_field,omitempty"`
	// IDPrefix starts the id of every comment of the kind ("tw:"); empty
	// when the ids share none (a feed item's GUID).
	IDPrefix string `json:"id_prefix,omitempty"`
	// Cursor is what a crawler of the kind carries when it moves to another
	// spawn, so that it resumes where it stood.
	Cursor CursorKind `json:"cursor,omitempty"`
	// TombstoneLifetime is how long a deletion of one of the kind's items
	// is remembered: as far back as the kind can replay or fill a gap, with
	// a margin, so that no replay, move or backfill stores it again.
	TombstoneLifetime Duration `json:"tombstone_lifetime"`
	// Scope is how far one connection of the kind reaches, which decides
	// where the hub places its crawlers.
	Scope SourceScope `json:"scope"`
	// Recheck, when set, is how often the stored items of the kind are
	// checked again with its service, which says which of them are gone
	// (X's batch compliance): the hub asks a spawn offering the kind to
	// check them (SourceRechecks).
	Recheck Duration `json:"recheck,omitempty"`
	// Unoffered says what it takes for a spawn to offer the kind, for a
	// crawler that no live spawn can run ("a spawn offers twitter once its
	// X credentials are configured"); empty when every spawn offers it.
	Unoffered string `json:"unoffered,omitempty"`
	// Settings are the spawn settings that configure the kind (flags, and
	// the environment variables of its credentials), for the docs, the
	// page and error messages.
	Settings []SourceSetting `json:"settings,omitempty"`
}

// QueryForm is what a crawler's query is.
type QueryForm string

const (
	// QueryLanguage: the query is in the query language (a list is the OR
	// of its terms) and the crawler has no keywords.
	QueryLanguage QueryForm = "language"
	// QueryURLs: the query is a list of URLs to read (feeds), and the
	// crawler's keywords, in the query language, filter their items.
	QueryURLs QueryForm = "urls"
)

// CursorKind is what a crawler carries across moves.
type CursorKind string

const (
	// CursorNone: nothing; the kind re-reads what it reads (a feed), and
	// the subscriber's seen ids keep it from counting an item twice.
	CursorNone CursorKind = ""
	// CursorLog: a position in a log the service replays (Jetstream's
	// time_us); a crawler that has counted nothing reads from its
	// creation.
	CursorLog CursorKind = "log"
	// CursorHistory: the newest published time and source ids counted; the
	// kind fills the gap from the service's history (X's recent search,
	// Mastodon's timelines); a crawler that has counted nothing fills from
	// its creation.
	CursorHistory CursorKind = "history"
)

// SourceScope is how far one connection of a kind reaches.
type SourceScope string

const (
	// ScopeQuery: one data source per query or URL; crawlers are placed by
	// query uuid, so equal queries share a spawn and a data source.
	ScopeQuery SourceScope = "query"
	// ScopeNode: one connection per spawn carries every subscriber on it;
	// crawlers are still placed by query uuid.
	ScopeNode SourceScope = "node"
	// ScopeFleet: the service allows one connection for the whole fleet
	// (per credentials); every crawler of the kind is placed on the one
	// spawn holding it, and all move together if it goes.
	ScopeFleet SourceScope = "fleet"
)

// SourceSetting is one spawn setting of a kind.
type SourceSetting struct {
	// Flag is the command-line flag without dashes ("twitter-bearer-token").
	Flag string `json:"flag"`
	// Env is the environment variable that sets it (BW_TWITTER_BEARER_TOKEN;
	// a secret also reads <Env>_FILE).
	Env   string `json:"env"`
	Usage string `json:"usage"`
	// Secret marks a credential: set it from the environment or a file,
	// never shown.
	Secret bool `json:"secret,omitempty"`
}

// Maximums of a declaration, so that a spawn cannot make the hub keep an
// unbounded one.
const (
	maxSourceName     = 32
	maxSourceText     = 1024
	maxSourceFields   = 8
	maxSourceSettings = 64
	// MaxSourcesDeclared bounds the kinds one registration declares.
	MaxSourcesDeclared = 64
)

// Validate checks a declaration: a name of lowercase letters and digits,
// known enumerations, bounded texts.
func (s SourceInfo) Validate() error {
	if s.Name == "" || len(s.Name) > maxSourceName {
		return fmt.Errorf("api: source name %q must have 1 to %d characters", s.Name, maxSourceName)
	}
	for _, r := range s.Name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return fmt.Errorf("api: source name %q must be lowercase letters and digits", s.Name)
		}
	}
	switch s.Query {
	case QueryLanguage, QueryURLs:
	default:
		return fmt.Errorf("api: source %s: unknown query form %q", s.Name, s.Query)
	}
	switch s.Cursor {
	case CursorNone, CursorLog, CursorHistory:
	default:
		return fmt.Errorf("api: source %s: unknown cursor %q", s.Name, s.Cursor)
	}
	switch s.Scope {
	case ScopeQuery, ScopeNode, ScopeFleet:
	default:
		return fmt.Errorf("api: source %s: unknown scope %q", s.Name, s.Scope)
	}
	if s.TombstoneLifetime <= 0 || s.Recheck < 0 {
		return fmt.Errorf("api: source %s: tombstone lifetime must be positive and recheck not negative", s.Name)
	}
	if len(s.QueryFields) > maxSourceFields || len(s.Settings) > maxSourceSettings {
		return fmt.Errorf("api: source %s: too many query fields or settings", s.Name)
	}
	for _, f := range s.QueryFields {
		if !isFieldName(f) {
			return fmt.Errorf("api: source %s: query field %q must be lowercase letters", s.Name, f)
		}
	}
	if s.RequiredField != "" && !slices.Contains(s.QueryFields, s.RequiredField) {
		return fmt.Errorf("api: source %s: required field %q is not one of its query fields", s.Name, s.RequiredField)
	}
	for _, t := range []string{s.Title, s.QueryHint, s.IDPrefix, s.Unoffered} {
		if len(t) > maxSourceText {
			return fmt.Errorf("api: source %s: a text is longer than %d bytes", s.Name, maxSourceText)
		}
	}
	for _, st := range s.Settings {
		if len(st.Flag) > maxSourceName*2 || len(st.Env) > maxSourceName*2 || len(st.Usage) > maxSourceText {
			return fmt.Errorf("api: source %s: setting %q is too long", s.Name, st.Flag)
		}
	}
	return nil
}

func isFieldName(s string) bool {
	if s == "" || len(s) > maxSourceName {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// TombstoneFor is how long a deletion is remembered, TombstoneLifetime as a
// time.Duration.
func (s SourceInfo) TombstoneFor() time.Duration { return time.Duration(s.TombstoneLifetime) }

//go:embed sources.json
var builtinSourcesJSON []byte

var builtinSources = sync.OnceValue(func() []SourceInfo {
	var out []SourceInfo
	if err := json.Unmarshal(builtinSourcesJSON, &out); err != nil {
		panic(fmt.Sprintf("api: sources.json: %v", err)) // written by a test: cannot be wrong in a build that passed it
	}
	for _, s := range out {
		if err := s.Validate(); err != nil {
			panic(fmt.Sprintf("api: sources.json: %v", err))
		}
	}
	return out
})

// BuiltinSources returns the declarations of the source kinds this build's
// spawns carry, in the order spawn/app lists them. They are the source packages' own
// declarations, written to sources.json by spawn/app's tests
// (TestSources_BuiltinDeclarationsAreCurrent), so that the hub and bwctl
// know every kind before a spawn registers.
func BuiltinSources() []SourceInfo { return slices.Clone(builtinSources()) }

// SourceRegistry holds the declarations a hub or bwctl knows, by name: the
// builtin ones, then the kinds spawns declared when they registered that
// it did not know (a spawn newer than the hub may bring one). What a spawn
// configures of a kind it shares with others (X over v1.1 is not
// fleet-wide) travels with its registration, not here. It is safe for
// concurrent use.
type SourceRegistry struct {
	mu     sync.RWMutex
	byName map[string]SourceInfo
}

// NewSourceRegistry returns a registry holding infos.
func NewSourceRegistry(infos ...SourceInfo) *SourceRegistry {
	r := &SourceRegistry{byName: make(map[string]SourceInfo, len(infos))}
	for _, s := range infos {
		r.byName[s.Name] = s
	}
	return r
}

// Lookup returns the declaration of a kind.
func (r *SourceRegistry) Lookup(name string) (SourceInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.byName[name]
	return s, ok
}

// Learn records the declarations a spawn sent of kinds the registry does
// not hold, and reports whether it added any; a kind it holds keeps its
// declaration. Invalid ones are skipped and returned as an error.
func (r *SourceRegistry) Learn(infos []SourceInfo) (bool, error) {
	var errs []string
	changed := false
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range infos {
		if err := s.Validate(); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if _, ok := r.byName[s.Name]; ok {
			continue
		}
		r.byName[s.Name] = s
		changed = true
	}
	if len(errs) > 0 {
		return changed, fmt.Errorf("api: declarations skipped: %s", strings.Join(errs, "; "))
	}
	return changed, nil
}

// Names lists the known kinds, sorted.
func (r *SourceRegistry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// All returns every declaration, sorted by name.
func (r *SourceRegistry) All() []SourceInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]SourceInfo, 0, len(r.byName))
	for _, s := range r.byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b SourceInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Unknown is the error for a kind the registry does not hold; it names the
// kinds it does.
func (r *SourceRegistry) Unknown(name string) error {
	return fmt.Errorf("unknown source %q (want one of %s)", name, strings.Join(r.Names(), ", "))
}

// SourceOfID returns the kind whose IDPrefix starts a comment id, the
// longest such prefix winning; false when none does.
func (r *SourceRegistry) SourceOfID(id string) (SourceInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var best SourceInfo
	found := false
	for _, s := range r.byName {
		if s.IDPrefix != "" && strings.HasPrefix(id, s.IDPrefix) && (!found || len(s.IDPrefix) > len(best.IDPrefix)) {
			best, found = s, true
		}
	}
	return best, found
}

// PathSources lists the declarations the hub knows (GET): the page and
// bwctl read them.
const PathSources = "/v1/sources"
