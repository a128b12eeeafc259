package api

import "time"

// Header names and paths of the node API. The hub serves the registration
// route; every other route is served by a spawn and called by the hub.
const (
	// PathRegister is where a spawn announces itself to the hub.
	PathRegister = "/v1/nodes/register"
	// PathSubscribers is where the hub upserts (PUT) a spawn's subscribers.
	PathSubscribers = "/v1/subscribers"
	// PathSubscribersRemove is where the hub removes subscribers from a spawn.
	PathSubscribersRemove = "/v1/subscribers/remove"
	// PathPoll is the hub's batched status poll of one spawn.
	PathPoll = "/v1/poll"
	// PathRecover is where the hub asks a live spawn to read a lost spawn's
	// unreported usage back from the shared store.
	PathRecover = "/v1/usage/recover"
	// PathHealth is the JSON health document of both servers.
	PathHealth = "/v1/health"
	// PathDrain is where a spawn tells the hub it is draining (given
	// SIGTERM), and later that it has stopped.
	PathDrain = "/v1/nodes/drain"
)

// Names of some built-in sources, for clients and tests that pick one. The
// product itself never names a source: each declares itself (SourceInfo),
// and GET /v1/sources lists what the fleet offers.
const (
	SourceRSS      = "rss"
	SourceTwitter  = "twitter"
	SourceStream   = "stream"
	SourceBluesky  = "bluesky"
	SourceMastodon = "mastodon"
)

// Subscriber states as reported by a spawn and shown by the hub.
const (
	StatePending      = "pending"       // assigned but not yet confirmed running
	StateRunning      = "running"       // consuming comments
	StateDegraded     = "degraded"      // running, but a source cannot reach its service: error says why
	StateQuotaWait    = "quota_wait"    // paused: no live lease left
	StateLimitReached = "limit_reached" // the crawler or its user used up the limit
	StateDisabled     = "disabled"      // switched off by an operator
	StateFailed       = "failed"        // see the error field
	StateMissing      = "missing"       // the hub expected it, the spawn does not run it
)

// Spawn states.
const (
	NodeRegistering = "registering"
	NodeAttached    = "attached"
	NodeDetached    = "detached"
	// NodeDraining: the spawn hands its crawlers to other spawns and
	// takes no new ones (given SIGTERM, or bwctl node drain).
	NodeDraining = "draining"
)

// RegisterRequest is what a spawn sends to the hub when it starts and after
// every detach.
type RegisterRequest struct {
	NodeID string `json:"node_id"`
	URL    string `json:"url"`
	// Sources are the source kinds the spawn can crawl (twitter and stream
	// only when their credentials are configured on it); the hub routes a
	// crawler only among the spawns that offer its source. Empty means
	// every kind.
	Sources []string `json:"sources,omitempty"`
	// FleetSources are the offered kinds whose service allows one
	// connection for the whole fleet (X API v2's filtered stream): the hub
	// places every crawler of such a kind on one spawn that holds it.
	FleetSources []string `json:"fleet_sources,omitempty"`
	// Declared are the declarations of the kinds the spawn knows, offered
	// or not (SourceInfo): the hub learns the kinds a spawn newer than it
	// brings, and how this spawn configures the ones it knows.
	Declared []SourceInfo `json:"declared,omitempty"`
	// Detached says why the spawn detached before registering again (it
	// dropped every subscriber); empty on its first registration.
	Detached string `json:"detached,omitempty"`
	// Clock is the spawn's monotonic clock in milliseconds when it sent the
	// request; the hub anchors the first leases on it.
	Clock int64 `json:"clock"`
	// LeaderUnreachable names the leader the spawn followed and could not
	// reach while registering: sent to a standby, it is a complaint, and a
	// standby that has one from most known spawns takes the leadership
	// over (a leader cut off from its spawns but not from the database).
	LeaderUnreachable *UnreachableLeader `json:"leader_unreachable,omitempty"`
	// Draining says the spawn is draining: the hub routes nothing to it
	// and moves what it runs elsewhere.
	Draining bool `json:"draining,omitempty"`
	// RetractionsApplied is the hub log's highest entry the spawn's store
	// has applied (kept in the store, so it survives the spawn); 0 for a
	// store that has applied none, which starts at the log's end.
	RetractionsApplied uint64 `json:"retractions_applied,omitempty"`
	// Store names the store the spawn writes to (a file store's directory
	// id, a Cassandra keyspace's id): spawns sharing one report the same
	// name, so the hub applies a forget once per store.
	Store string `json:"store,omitempty"`
}

// DrainRequest is a spawn telling the hub that it drains (given SIGTERM):
// the hub moves its crawlers to other spawns, make before break. Done
// says it has stopped running them and the hub acknowledged all its
// usage: the hub forgets it at once, with nothing to recover.
type DrainRequest struct {
	NodeID string `json:"node_id"`
	Done   bool   `json:"done,omitempty"`
}

// UnreachableLeader is a leader a spawn could not reach: the URL it was
// sent to and the term it last accepted from that leader.
type UnreachableLeader struct {
	URL  string `json:"url"`
	Term uint64 `json:"term"`
}

// Liveness defaults, the hub's and the spawn's alike: a subscriber the hub
// has not polled for DefaultOrphanAfter stops on its spawn, and a spawn the
// hub has not contacted for DefaultDetachAfter drops every subscriber and
// registers again. The hub sends the values it runs with at registration
// (RegisterResponse); a spawn keeps these until then.
const (
	DefaultOrphanAfter = 10 * time.Second
	DefaultDetachAfter = 15 * time.Second
)

// RegisterResponse tells a spawn which hub instance it now serves and the
// timings the hub expects it to keep.
type RegisterResponse struct {
	Epoch        string   `json:"epoch"`
	NodeID       string   `json:"node_id"`
	PollInterval Duration `json:"poll_interval"`
	OrphanAfter  Duration `json:"orphan_after"`
	DetachAfter  Duration `json:"detach_after"`
	// RetractionHead is the retraction log's last entry when the spawn
	// registered: the spawn stores no comment before its store has applied
	// the log up to it (or a bounded wait passed), so a crawler moved to
	// it cannot store again what was taken back while it was away.
	RetractionHead uint64 `json:"retraction_head,omitempty"`
}

// SubscriberSpec is everything a spawn needs to run one crawler's subscriber.
// Two specs with the same CrawlerID and Version are identical; a spec with the
// same QueryUUID but a higher Version is applied in place.
type SubscriberSpec struct {
	CrawlerID int64    `json:"crawler_id"`
	UserID    int64    `json:"user_id"`
	Version   int64    `json:"version"`
	Source    string   `json:"source"`
	Query     []string `json:"query"`
	Keywords  []string `json:"keywords,omitempty"`
	QueryUUID string   `json:"query_uuid"`
	// Limited says the subscriber may store comments only against a lease.
	Limited bool `json:"limited"`
	// Cursor carries the newest item the crawler has already delivered, so a
	// subscriber moved to another node does not emit it again.
	Cursor *Cursor `json:"cursor,omitempty"`
	// Retention is how long the store keeps the crawler's comments after
	// their published time (the crawler's, else its user's default); 0
	// keeps them.
	Retention Duration `json:"retention,omitempty"`
}

// Cursor marks how far a crawler has read a source.
type Cursor struct {
	PublishedAt time.Time `json:"published_at"`
	// Position is the source log position (Item.Position, a Jetstream
	// time_us) of the newest item delivered, so a source that can replay
	// (bluesky) resumes right after it on another node; 0 when unknown.
	Position int64 `json:"position,omitempty"`
	// Sources are, by data source key, the newest item id the crawler
	// stored in that source's own numbering (an X post id, a Mastodon
	// status id local to the instance), so a source that pages its
	// history from an id (X recent search, Mastodon timelines) fills the
	// gap a move left from there.
	Sources map[string]string `json:"sources,omitempty"`
}

// LaterSourceID returns the later of two source ids (Cursor.Sources):
// decimal numbers, compared as such; "" is earlier than any.
func LaterSourceID(a, b string) string {
	if len(a) != len(b) {
		if len(a) > len(b) {
			return a
		}
		return b
	}
	if a > b {
		return a
	}
	return b
}

// SubscribersRequest upserts subscribers on a spawn. With Exact set the spawn
// removes every subscriber not listed (the hard-reload reconcile).
type SubscribersRequest struct {
	Epoch string `json:"epoch"`
	// Seq comes from the same per-node counter as PollRequest.Seq; a spawn
	// ignores a request older than one it has already seen, so a delayed or
	// duplicated request never undoes a newer one.
	Seq         uint64           `json:"seq"`
	Exact       bool             `json:"exact,omitempty"`
	Subscribers []SubscriberSpec `json:"subscribers"`
	// ValidUntil is the spawn's clock (milliseconds, as PollResponse.Clock)
	// after which the request is void: by then the hub has stopped waiting
	// for it. A request that sat in a frozen spawn's socket buffers
	// proves nothing about the hub now, so the spawn refuses it. Zero sets
	// no bound.
	ValidUntil int64 `json:"valid_until,omitempty"`
}

// RemoveRequest removes subscribers from a spawn.
type RemoveRequest struct {
	Epoch      string  `json:"epoch"`
	Seq        uint64  `json:"seq"`
	CrawlerIDs []int64 `json:"crawler_ids"`
	// ValidUntil bounds the request as SubscribersRequest.ValidUntil does.
	ValidUntil int64 `json:"valid_until,omitempty"`
}

// SubscriberResult reports the outcome of one upsert.
type SubscriberResult struct {
	CrawlerID int64  `json:"crawler_id"`
	Error     string `json:"error,omitempty"`
}

// SubscribersResponse lists one result per upserted subscriber.
type SubscribersResponse struct {
	Results []SubscriberResult `json:"results"`
}

// Lease lets one subscriber instance count comments until its Reserved
// count reaches Total or the spawn's clock reaches ExpiresAt. Total is
// cumulative for the instance, so a lost, repeated or reordered grant can
// never add up to more than the hub granted. ExpiresAt is on the spawn's own
// clock (PollResponse.Clock), anchored on an answer the hub has already
// received, so no network delay can make a spawn use a lease longer than the
// hub counts it.
type Lease struct {
	CrawlerID int64  `json:"crawler_id"`
	Instance  uint64 `json:"instance"`
	// Seq increases with every grant; a spawn ignores a grant not newer
	// than the one it holds.
	Seq       uint64 `json:"seq"`
	Total     int64  `json:"total"`
	ExpiresAt int64  `json:"expires_at"`
}

// PollRequest is the hub's one request per node per interval.
type PollRequest struct {
	Epoch  string `json:"epoch"`
	NodeID string `json:"node_id"`
	// Seq increases with every request to the node within an epoch; a
	// spawn treats a poll older than a request it has seen as stale: it
	// answers it but applies nothing from it.
	Seq uint64 `json:"seq"`
	// Subscribers are exactly the subscribers the hub wants on the node.
	// Each one named is refreshed against orphaning; one not named is
	// dropped.
	Subscribers []SubscriberRef `json:"subscribers"`
	Leases      []Lease         `json:"leases,omitempty"`
	// Acks are usage increment sequence numbers the hub has applied.
	Acks []uint64 `json:"acks,omitempty"`
	// ValidUntil bounds the request as SubscribersRequest.ValidUntil does.
	ValidUntil int64 `json:"valid_until,omitempty"`
	// StatusBase is the number of the spawn's last answer the hub took in
	// (PollResponse.Answer); the spawn may then answer with only the
	// statuses that changed since (StatusDelta). Zero asks for every
	// status.
	StatusBase uint64 `json:"status_base,omitempty"`
	// Drain tells the spawn the hub drains it (bwctl node drain): it
	// says so in its health and takes no new crawlers.
	Drain bool `json:"drain,omitempty"`
	// RetractionAcks are the spawn's retraction numbers the hub has logged
	// (PollResponse.Retractions).
	RetractionAcks []uint64 `json:"retraction_acks,omitempty"`
	// Retractions are the hub log's entries after the spawn's
	// RetractionsApplied, oldest first, at most a bounded number a poll:
	// what other spawns learned, for this spawn's store.
	Retractions []Retraction `json:"retractions,omitempty"`
}

// SubscriberRef names a subscriber and the spec version the hub expects.
type SubscriberRef struct {
	CrawlerID int64 `json:"crawler_id"`
	Version   int64 `json:"version"`
}

// Increment is a batch of counted comments: usage that travels to the hub
// until it is acknowledged. (NodeID, Seq) identifies it for good.
type Increment struct {
	NodeID    string `json:"node_id"`
	Seq       uint64 `json:"seq"`
	CrawlerID int64  `json:"crawler_id"`
	UserID    int64  `json:"user_id"`
	Instance  uint64 `json:"instance,omitempty"`
	LeaseSeq  uint64 `json:"lease_seq,omitempty"`
	Count     int64  `json:"count"`
	// Newest is the published time of the newest comment counted, carried to
	// the hub as the crawler's cursor.
	Newest time.Time `json:"newest,omitempty"`
	// Position is the highest source log position among the comments
	// counted (a Jetstream time_us), carried to the hub as the crawler's
	// cursor position; 0 for sources without one.
	Position int64 `json:"position,omitempty"`
	// Sources are, by data source key, the newest source id among the
	// comments counted (Cursor.Sources), carried to the hub as the
	// crawler's cursor.
	Sources map[string]string `json:"sources,omitempty"`
	// Analytics describes the same comments (terms, activity, query
	// candidates), so the hub applies it exactly once, with their usage.
	Analytics *IncrementAnalytics `json:"analytics,omitempty"`
}

// SubscriberStatus is one subscriber's state in a poll response.
type SubscriberStatus struct {
	CrawlerID  int64   `json:"crawler_id"`
	Version    int64   `json:"version"`
	QueryUUID  string  `json:"query_uuid,omitempty"`
	State      string  `json:"state"`
	Error      string  `json:"error,omitempty"`
	DataSource string  `json:"data_source,omitempty"`
	Stored     int64   `json:"stored"`
	RatePerSec float64 `json:"rate_per_sec"`
	// Instance identifies this run of the subscriber on the spawn; it
	// changes when the subscriber is removed and created again.
	Instance uint64 `json:"instance"`
	// Reserved counts the comments this instance has counted against its
	// leases (stored or on their way to the store).
	Reserved int64 `json:"reserved"`
	// LeaseSeq and LeaseTotal describe the lease the spawn holds now.
	LeaseSeq   uint64 `json:"lease_seq,omitempty"`
	LeaseTotal int64  `json:"lease_total,omitempty"`
	// Live says the subscriber's data sources deliver its items from now
	// on: connected and subscribed, or able to fill what they miss from
	// the service's history. A crawler leaving a draining spawn stops
	// there only once it is live on its new one.
	Live bool `json:"live,omitempty"`
}

// DataSourceStatus describes one data source on a spawn.
type DataSourceStatus struct {
	Key         string `json:"key"`
	Source      string `json:"source"`
	Subscribers int    `json:"subscribers"`
	Error       string `json:"error,omitempty"`
}

// PollResponse is a spawn's answer to a poll.
type PollResponse struct {
	NodeID string `json:"node_id"`
	// Clock is the spawn's monotonic clock in milliseconds when it answered.
	// Leases in the next poll expire relative to it.
	Clock       int64              `json:"clock"`
	Subscribers []SubscriberStatus `json:"subscribers"`
	Increments  []Increment        `json:"increments,omitempty"`
	// MoreIncrements says the spawn holds increments beyond this answer's.
	MoreIncrements bool               `json:"more_increments,omitempty"`
	DataSources    []DataSourceStatus `json:"data_sources,omitempty"`
	// Pending counts comments waiting for the store, per crawler.
	Pending map[int64]int `json:"pending,omitempty"`
	// Store says whether the comment store keeps up ("ok" or "degraded").
	Store string `json:"store,omitempty"`
	// Answer numbers this answer for the next poll's StatusBase; zero when
	// the spawn keeps no record of it (an answer to a stale poll).
	Answer uint64 `json:"answer,omitempty"`
	// Partial says Subscribers lists only the statuses that changed since
	// the request's StatusBase: every other subscriber the poll listed
	// is as the hub last heard.
	Partial bool `json:"partial,omitempty"`
	// DataSourcesUnchanged says DataSources is left out because it is as
	// the hub last heard (only in a partial answer).
	DataSourcesUnchanged bool `json:"data_sources_unchanged,omitempty"`
	// Draining says the spawn drains.
	Draining bool `json:"draining,omitempty"`
	// Retractions are what the spawn's sources took back, numbered on the
	// spawn, until the hub acknowledges them; MoreRetractions says more
	// wait beyond this answer's.
	Retractions     []Retraction `json:"retractions,omitempty"`
	MoreRetractions bool         `json:"more_retractions,omitempty"`
	// RetractionsApplied is the hub log's highest entry the spawn's store
	// has applied, together with every one before it.
	RetractionsApplied uint64 `json:"retractions_applied,omitempty"`
}

// RecoverRequest asks a spawn for the usage increments of a lost node that
// its store recorded after AfterSeq.
type RecoverRequest struct {
	Epoch    string `json:"epoch"`
	NodeID   string `json:"node_id"`
	AfterSeq uint64 `json:"after_seq"`
}

// RecoverResponse carries the recovered increments, with the lost node's
// ids, so the hub applies each at most once whoever reports it.
type RecoverResponse struct {
	Increments []Increment `json:"increments"`
}
