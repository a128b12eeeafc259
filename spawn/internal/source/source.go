// Package source defines what a data source is to a spawn: something that
// crawls one thing (a feed, a stream connection) and hands every item it finds
// to the spawn, which fans it out to the subscribers that share the source.
// Each kind of source lives in its own package (rss, twitter, stream); the
// Registry chooses among them.
package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// ErrDegraded marks a data source error that is passing (a fetch or two
// failed, a reconnect is under way): the node shows it on the subscribers
// but does not mark them failed.
var ErrDegraded = errors.New("source: degraded")

// Degraded marks err as passing (ErrDegraded), keeping its message.
func Degraded(err error) error {
	if err == nil || errors.Is(err, ErrDegraded) {
		return err
	}
	return degradedError{err}
}

type degradedError struct{ err error }

func (e degradedError) Error() string   { return e.err.Error() }
func (e degradedError) Unwrap() []error { return []error{ErrDegraded, e.err} }

// ErrUnsupported is returned for a source kind this spawn is not configured
// to crawl (for example twitter without credentials).
var ErrUnsupported = errors.New("source: unsupported source kind")

// Item is one piece of content a data source found, before it becomes a
// crawler's comment.
type Item struct {
	// ID is stable for the same upstream item (feed GUID or link hash, tweet
	// id), so a re-fetched item is recognised.
	ID string
	// Author is the name people know the author by (handle, screen
	// name); AuthorID the service's stable account id (DID, user id,
	// account URI) when it has one. A from: query matches either.
	Author      string
	AuthorID    string
	Text        string
	URL         string
	PublishedAt time.Time
	FetchedAt   time.Time
	// Lang is the item's language (BCP 47, lowercased, e.g. "en") when the
	// source says it; empty when unknown. The node may detect it
	// (LangDetected).
	Lang string
	// LangDetected, Sentiment and Enriched are the node's: Lang was
	// detected from the text, the sentiment it scored (nil for a language
	// it does not score), and whether it has done both. Sources leave them
	// unset.
	LangDetected bool
	Sentiment    *api.Sentiment
	Enriched     bool
	// Fields are the item's fields its kind declares
	// (api.SourceInfo.QueryFields), by name: a Reddit item's subreddit.
	// The query's Field atoms (subreddit:golang) test them.
	Fields map[string]string
	// ReplyTo and ThreadID link a reply to its parent and to the first
	// item of its conversation, in the id space of ID; empty for an item
	// that starts a conversation or a source without threads.
	ReplyTo  string
	ThreadID string
	// Links are the item's URLs in full, in order, without repeats.
	Links []string
	// RepostOf is the id (in the space of ID) of the post a repost
	// shares.
	RepostOf string
	// UnreadableDate is the publication date the source gave, when it could
	// not be read (a feed's date in no form the spawn knows): PublishedAt
	// is then when the item was first fetched. Empty otherwise.
	UnreadableDate string
	// EditedAt is when the item was last edited at its source, for an
	// item that arrives already edited (its Text and Links are the edited
	// ones); zero when it never was.
	EditedAt time.Time
	// Engagement is the item's reposts and likes when its source reports
	// them; nil when it does not.
	Engagement *api.Engagement
	// Position is where the item stands in a source's replayable log (a
	// Jetstream event's time_us), so a subscriber moved to another node
	// resumes after it; 0 for sources without one.
	Position int64
	// SourceID is the item's id in its data source's own numbering, one
	// that grows with time (an X post id, a Mastodon status id local to
	// the instance), so the newest one a crawler stored says where it
	// stands in that source; empty for sources without one. The crawler's
	// cursor carries it per data source (api.Cursor.Sources), and a source
	// that can page its history from an id fills a moved crawler's gap
	// from there.
	SourceID string
	// Terms, when set, are the query terms the item matched upstream (a
	// stream that filters server-side); empty means "every subscriber of the
	// source may want it".
	Terms []string
	// QueryUUID, when set, names the one query the item was delivered for
	// (a stream subscription shared by the subscribers of that query); only
	// subscribers with this query uuid receive it.
	QueryUUID string
}

// Emit hands a batch of items to the spawn. It blocks while the spawn's store
// is pushing back and returns ctx's error when the source must stop.
type Emit func(ctx context.Context, items []Item) error

// DataSource crawls one thing until its context ends.
type DataSource interface {
	// Run crawls until ctx ends. It reports passing problems through the
	// status it returns from Err, not by returning: Run returns only when
	// ctx is done.
	Run(ctx context.Context, emit Emit)
	// Err is the latest error, nil when the source is healthy.
	Err() error
	// SetSubscribers tells the source which subscribers currently use it,
	// for sources whose request depends on them (a Twitter filter's track
	// terms). Sources that do not care ignore it.
	SetSubscribers(subs []Sub)
}

// Sub is a subscriber as its data sources see it: the spec the hub sent,
// and its query parsed once, when the subscriber reached the node, so no
// source parses it again.
type Sub struct {
	Spec api.SubscriberSpec
	// Query is the subscriber's query in the query language. For a kind
	// whose query is a list of URLs (api.QueryURLs) it is the crawler's
	// keyword filter, nil when it has none: the URLs are in Spec.Query.
	Query *query.Query
}

// NewSub parses a spec of a kind whose query is in the language into a
// Sub: what the node does when a subscriber arrives, for tests that hand
// subscribers to a source themselves.
func NewSub(spec api.SubscriberSpec) (Sub, error) {
	q, err := query.ParseList(spec.Query)
	if err != nil {
		return Sub{}, fmt.Errorf("crawler %d: %w", spec.CrawlerID, err)
	}
	return Sub{Spec: spec, Query: q}, nil
}

// Specs returns the specs of subs.
func Specs(subs []Sub) []api.SubscriberSpec {
	out := make([]api.SubscriberSpec, len(subs))
	for i, s := range subs {
		out[i] = s.Spec
	}
	return out
}

// SubscriberErrors is implemented by a data source that subscribers of
// different queries share (the stream service's one connection): an error
// about one query, such as a filter the service refuses to compile, concerns
// only the subscribers of that query, while Err reports them all.
type SubscriberErrors interface {
	// ErrFor joins the errors that concern spec's subscriber: those of the
	// whole source and those of its own query; nil when there are none.
	ErrFor(spec api.SubscriberSpec) error
}

// Readiness is implemented by a data source that needs a while before it
// delivers a new subscriber's items (a connection to open, a subscription
// to confirm) and cannot fetch what it misses meanwhile: Ready reports
// whether it delivers spec's items from now on. A crawler moved off a
// draining spawn keeps running there until its new data sources are
// ready. A data source without it is ready at once.
type Readiness interface {
	Ready(spec api.SubscriberSpec) bool
}

// AuthorName is the name of an author a data source learned after it
// may have handed over items of theirs under their account id.
type AuthorName struct {
	AuthorID string
	Author   string
}

// AuthorNamer is implemented by a data source that hands an item over at
// once even when it does not know its author's name yet (Bluesky, whose
// events name the author by DID only): such an item's Author is its
// AuthorID. The spawn calls NameAuthors once, before Run, with the function
// the source then calls with the names it learns; the function never
// blocks, and the spawn fills the names into the comments it stores or has
// stored. NameAuthors reports false when the source, as configured, never
// names authors late (every item carries its final Author).
type AuthorNamer interface {
	NameAuthors(func([]AuthorName)) bool
}

// Retracter is implemented by a data source whose service tells when it
// takes back or changes what it handed over: a post deleted or edited, an
// account deleted, taken down or back (api.Retraction). The spawn calls
// Retractions once, before Run, with the function the source then calls
// with what it learns; the function never blocks. The spawn applies each
// to its store and passes it on, through the hub, to every other spawn.
type Retracter interface {
	Retractions(func([]api.Retraction))
}

// Kind builds the data sources of one source kind.
type Kind interface {
	// Keys names the data sources a subscriber needs, for example one per
	// feed URL. Equal keys mean one shared data source on the node.
	Keys(sub Sub) ([]string, error)
	// New creates the data source for a key returned by Keys.
	New(key string) (DataSource, error)
}

// Registry maps source kinds to their builders.
type Registry map[string]Kind

// NotConfigured is implemented by a Kind that stands in for a source the
// spawn has no credentials for (Unconfigured): it fails its subscribers
// saying what is missing, and the spawn does not offer the kind to the hub,
// which routes the kind's crawlers to spawns that can run them.
type NotConfigured interface {
	NotConfigured() error
}

// Unconfigured returns the stand-in to register for a kind the spawn is not
// configured for: every subscriber fails with err, which says what is
// missing.
func Unconfigured(err error) Kind { return unconfigured{err: err} }

type unconfigured struct{ err error }

func (u unconfigured) Keys(sub Sub) ([]string, error) {
	return nil, fmt.Errorf("crawler %d: %w", sub.Spec.CrawlerID, u.err)
}

func (u unconfigured) New(string) (DataSource, error) { return nil, u.err }

func (u unconfigured) NotConfigured() error { return u.err }

// Offered lists, sorted, the kinds the spawn can crawl: those that are not
// stand-ins for an unconfigured source.
func (r Registry) Offered() []string {
	out := make([]string, 0, len(r))
	for name, k := range r {
		if _, standIn := k.(NotConfigured); !standIn {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Lookup returns the builder for a source kind.
func (r Registry) Lookup(kind string) (Kind, error) {
	k, ok := r[kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, kind)
	}
	return k, nil
}

// Stat is one number a data source reports for the spawn's metrics.
// Metrics of one Name always carry the same label names.
type Stat struct {
	Name   string // e.g. bw_spawn_source_items_total
	Help   string
	Gauge  bool // a level, not a running count
	Labels map[string]string
	Value  float64
}

// Reporter is implemented by a data source that counts what it does
// (items read, reconnects, skipped messages, lag); the spawn's /metrics
// publishes its stats labelled with the data source.
type Reporter interface {
	Report() []Stat
}

// Standard stat names, shared by the sources that report them.
const (
	StatItems      = "bw_spawn_source_items_total"
	StatReconnects = "bw_spawn_source_reconnects_total"
	StatSkipped    = "bw_spawn_source_skipped_total" // label reason
	StatStalls     = "bw_spawn_source_stalls_total"
	StatLag        = "bw_spawn_source_lag_seconds"
	// StatGapsFilled counts the gaps (a reconnect, a handover, a crawler
	// moved here) a source without replay filled from the service's
	// history; StatGapItems the items those fills found that the live
	// connection had not delivered; StatGapSeconds the length of the
	// gaps filled, from the last item known before each to its fill.
	StatGapsFilled = "bw_spawn_source_gaps_filled_total"
	StatGapItems   = "bw_spawn_source_gap_items_total"
	StatGapSeconds = "bw_spawn_source_gap_seconds_total"
)

// GapStats are the stats of a source that fills gaps from history.
func GapStats(filled, items int64, seconds float64) []Stat {
	return []Stat{
		{Name: StatGapsFilled, Help: "Gaps (reconnects, handovers, moved crawlers) a data source filled from the service's history.", Value: float64(filled)},
		{Name: StatGapItems, Help: "Items the filling of gaps found that the live connection had not delivered.", Value: float64(items)},
		{Name: StatGapSeconds, Help: "Length of the gaps a data source filled, in seconds.", Value: seconds},
	}
}

// StandardStats builds the stats every streaming source shares.
func StandardStats(items, reconnects, stalls int64, skipped map[string]int64) []Stat {
	out := []Stat{
		{Name: StatItems, Help: "Items a data source handed to the spawn.", Value: float64(items)},
		{Name: StatReconnects, Help: "Connections a data source opened again after losing one.", Value: float64(reconnects)},
		{Name: StatStalls, Help: "Connections a data source dropped because the service went silent.", Value: float64(stalls)},
	}
	for reason, n := range skipped {
		out = append(out, Stat{Name: StatSkipped, Help: "Messages a data source skipped, by reason.", Labels: map[string]string{"reason": reason}, Value: float64(n)})
	}
	return out
}

// Parts of a data source's ErrorSet that every streaming source has: its
// connection, and the messages it had to skip.
const (
	PartConnection = "connection"
	PartMessages   = "messages"
)

// DegradedUnless marks err as passing (Degraded) unless it matches one of
// lasting: errors only an operator can fix (a refused key) fail the
// subscribers, anything else (a reconnect, a bad message) passes.
func DegradedUnless(err error, lasting ...error) error {
	if err == nil {
		return nil
	}
	for _, l := range lasting {
		if errors.Is(err, l) {
			return err
		}
	}
	return Degraded(err)
}

// NewError returns a sentinel error reading msg that errors.Is also
// matches with shared: a source's own name for a failure its connection
// code shares with other sources (a stalled connection), so callers can
// test either.
func NewError(msg string, shared error) error { return sharedError{msg: msg, shared: shared} }

type sharedError struct {
	msg    string
	shared error
}

func (e sharedError) Error() string { return e.msg }
func (e sharedError) Unwrap() error { return e.shared }

// CapText cuts s to at most max bytes on a character boundary.
func CapText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// Clip shortens a string from a service for an error message or a log: at
// most max bytes, cut on a character boundary and marked with "…".
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return CapText(s, max) + "…"
}

// Signal wakes the goroutine waiting on ch, a channel with a buffer of
// one, without blocking: a change already signalled and not yet seen is
// not signalled twice. SetSubscribers uses it, since the node calls it
// under its lock.
func Signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// SetDefault sets *v to def when it is zero or negative: how a source's
// Options take the Default constants for the fields left unset.
func SetDefault[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// BaseURL parses raw as a service's base URL: one of schemes, a host, and
// no query or fragment. ok is false for anything else.
func BaseURL(raw string, schemes ...string) (u *url.URL, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, false
	}
	return u, true
}

// CheckKey fails when key, given to a Kind's New, is not the one key the
// kind's Keys hands out.
func CheckKey(kind, key, want string) error {
	if key != want {
		return fmt.Errorf("%s: data source key %q is not %q", kind, key, want)
	}
	return nil
}
