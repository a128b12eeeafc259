package api

import "time"

// Paths of the admin API served by the hub.
const (
	PathUsers    = "/v1/users"
	PathCrawlers = "/v1/crawlers"
	PathNodes    = "/v1/nodes"
	PathReload   = "/v1/reload"
	PathComments = "/v1/crawlers/{id}/comments"
)

// User is a customer account as the admin API shows it. Confidential fields
// (e-mail, billing) never leave the hub's database.
type User struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	CommentLimit int64     `json:"comment_limit"`
	Usage        int64     `json:"usage"`
	State        string    `json:"state"`
	CreatedAt    time.Time `json:"created_at"`
	// Crawlers is how many crawlers the user has.
	Crawlers int64 `json:"crawlers"`
	// Retention is the default retention of the user's crawlers that set
	// none ("30d"); empty keeps their comments.
	Retention string `json:"retention,omitempty"`
}

// UserCreate is the body of POST /v1/users.
type UserCreate struct {
	Name         string `json:"name"`
	CommentLimit int64  `json:"comment_limit"`
	Retention    string `json:"retention,omitempty"`
}

// UserUpdate is the body of PATCH /v1/users/{id}.
type UserUpdate struct {
	CommentLimit *int64 `json:"comment_limit,omitempty"`
	// Retention, when present, replaces the user's default ("0": none).
	Retention *string `json:"retention,omitempty"`
}

// MaxCrawlerName is the longest crawler name, in characters.
const MaxCrawlerName = 100

// Crawler is a crawler as the admin API shows it, with its live state.
type Crawler struct {
	ID     int64 `json:"id"`
	UserID int64 `json:"user_id"`
	// Name is what people call the crawler ("Acme launch"); empty when it
	// was given none.
	Name     string   `json:"name"`
	Source   string   `json:"source"`
	Query    []string `json:"query"`
	Keywords []string `json:"keywords"`
	// QueryCanonical is the query in canonical form: the query language's
	// for search sources, the rss feed URLs joined by commas for rss (whose
	// keyword filter, in the language, is Keywords).
	QueryCanonical string    `json:"query_canonical"`
	CommentLimit   int64     `json:"comment_limit"`
	Enabled        bool      `json:"enabled"`
	State          string    `json:"state"`
	Error          string    `json:"error,omitempty"`
	Node           string    `json:"node"`
	Usage          int64     `json:"usage"`
	QueryUUID      string    `json:"query_uuid"`
	Version        int64     `json:"version"`
	RatePerSec     float64   `json:"rate_per_sec"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Retention is how long the crawler's comments are kept after their
	// published time ("30d"); empty keeps them. RetentionFrom says where it
	// comes from: "crawler", "user" (the user's default) or "" (none).
	Retention     string `json:"retention,omitempty"`
	RetentionFrom string `json:"retention_from,omitempty"`
}

// CrawlerCreate is the body of POST /v1/crawlers.
type CrawlerCreate struct {
	UserID int64 `json:"user_id"`
	// Name is optional, at most MaxCrawlerName characters.
	Name         string   `json:"name,omitempty"`
	Source       string   `json:"source"`
	Query        []string `json:"query"`
	Keywords     []string `json:"keywords,omitempty"`
	CommentLimit int64    `json:"comment_limit"`
	// Enabled defaults to true when omitted.
	Enabled *bool `json:"enabled,omitempty"`
	// Retention keeps the crawler's comments this long after their
	// published time ("30d", api.ParseRetention); empty takes the user's
	// default.
	Retention string `json:"retention,omitempty"`
}

// CrawlerUpdate is the body of PATCH /v1/crawlers/{id}; absent fields keep
// their value.
type CrawlerUpdate struct {
	// Name, when present, renames the crawler ("" removes its name).
	Name         *string  `json:"name,omitempty"`
	Query        []string `json:"query,omitempty"`
	Keywords     []string `json:"keywords,omitempty"`
	CommentLimit *int64   `json:"comment_limit,omitempty"`
	Enabled      *bool    `json:"enabled,omitempty"`
	// Retention, when present, replaces the crawler's ("0" removes it: the
	// user's default applies). It applies to comments stored from then on.
	Retention *string `json:"retention,omitempty"`
}

// Node is a spawn as the hub knows it.
type Node struct {
	ID           string             `json:"id"`
	URL          string             `json:"url"`
	State        string             `json:"state"`
	Subscribers  int                `json:"subscribers"`
	RegisteredAt time.Time          `json:"registered_at"`
	LastPoll     time.Time          `json:"last_poll"`
	Failures     int                `json:"failures"`
	Sources      []string           `json:"sources"` // source kinds it crawls
	Store        string             `json:"store,omitempty"`
	DataSources  []DataSourceStatus `json:"data_sources,omitempty"`
}

// ReloadRequest is the body of POST /v1/reload.
type ReloadRequest struct {
	Kind string `json:"kind"` // "hard" or "soft"
}

// ReloadResponse reports what a reload did.
type ReloadResponse struct {
	Kind     string `json:"kind"`
	Assigned int    `json:"assigned"`
	Moved    int    `json:"moved"`
	Removed  int    `json:"removed"`
	Failed   int    `json:"failed"`
}

// Comment is one stored comment, as the store keeps it and the API shows it.
type Comment struct {
	ID        string `json:"id"`
	CrawlerID int64  `json:"crawler_id"`
	Source    string `json:"source"`
	// Author is the name people know the author by (a handle, a screen
	// name, an account address); AuthorID is the service's stable id of
	// the account (a Bluesky DID, an X user id, a Mastodon account URI)
	// when the source has one.
	Author      string    `json:"author,omitempty"`
	AuthorID    string    `json:"author_id,omitempty"`
	Text        string    `json:"text"`
	URL         string    `json:"url,omitempty"`
	PublishedAt time.Time `json:"published_at"`
	FetchedAt   time.Time `json:"fetched_at"`
	Matched     []string  `json:"matched,omitempty"`
	// Lang is the comment's language: the one its source says ("en"), or
	// the one the spawn detected in its text when the source says none
	// (LangDetected); empty when neither is known.
	Lang string `json:"lang,omitempty"`
	// LangDetected says Lang was detected from the text, not given by the
	// source.
	LangDetected bool `json:"lang_detected,omitempty"`
	// Sentiment is what the comment's words say of the author's mood,
	// scored on the spawn; nil when its language is not one the product
	// scores.
	Sentiment *Sentiment `json:"sentiment,omitempty"`
	// ReplyTo and ThreadID link a reply to its parent and to the first
	// comment of its conversation (comment ids of the same source).
	ReplyTo  string `json:"reply_to,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
	// Links lists every URL the post carries in full (link facets,
	// expanded short links, link cards, attachments), in order of
	// appearance, without repeats.
	Links []string `json:"links,omitempty"`
	// RepostOf is the comment id of the post a repost shares (X's
	// retweets: "tw:<original id>"); the repost's Text is the original's
	// whole text.
	RepostOf string `json:"repost_of,omitempty"`
	// Engagement is the reposts and likes its source reported when the
	// comment was fetched; nil when the source gives none (rss, stream,
	// bluesky), which is not the same as a post nobody shared.
	Engagement *Engagement `json:"engagement,omitempty"`
	// UnreadableDate is the publication date the source gave when the
	// spawn could not read it (a feed's date in no form it knows):
	// PublishedAt is then when the spawn first fetched the item. Left out
	// otherwise.
	UnreadableDate string `json:"unreadable_date,omitempty"`
	// EditedAt is when the post was last edited at its source (Bluesky
	// update commits, Mastodon status.update): Text and Links are then the
	// edited ones. Zero (and left out) when it never was.
	EditedAt time.Time `json:"edited_at,omitzero"`
	// Retention is how long after its published time the store keeps the
	// comment (its crawler's retention when it was stored); 0 keeps it.
	// It travels with the comment inside a spawn and is neither stored as
	// a field nor sent.
	Retention time.Duration `json:"-"`
	// Position is where the comment's item stands in its source's log (see
	// Increment.Position). It travels with the comment inside a spawn, to
	// move the crawler's cursor, and is neither stored nor sent.
	Position int64 `json:"-"`
	// NodeID and IncSeq name the usage increment the comment was counted
	// under, so usage a spawn stored but never reported (it was killed)
	// can be recovered from the store.
	NodeID string `json:"node_id,omitempty"`
	IncSeq uint64 `json:"inc_seq,omitempty"`
}

// Sentiment labels a comment positive, neutral or negative, with a score
// from -1 (most negative) to 1 (most positive).
type Sentiment struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// Sentiment labels, also the values of the query language's sentiment:
// atom.
const (
	SentimentPositive = "positive"
	SentimentNeutral  = "neutral"
	SentimentNegative = "negative"
)

// SentimentLabel is the label of s, "" for nil: a comment without a
// sentiment.
func SentimentLabel(s *Sentiment) string {
	if s == nil {
		return ""
	}
	return s.Label
}

// Engagement is how often a post had been shared and liked when it was
// fetched: a snapshot, not kept up to date. Query suggestions weigh a
// comment's terms by it.
type Engagement struct {
	// Reposts are reblogs (Mastodon) or retweets (X, Twitter).
	Reposts int64 `json:"reposts"`
	// Likes are favourites (Mastodon) or likes (X, Twitter).
	Likes int64 `json:"likes"`
}

// Counts returns the reposts and likes and whether the source gave them
// (false for a nil Engagement).
func (e *Engagement) Counts() (reposts, likes int64, known bool) {
	if e == nil {
		return 0, 0, false
	}
	return e.Reposts, e.Likes, true
}

// Error is the body of every non-2xx answer of both servers.
type Error struct {
	Error string `json:"error"`
}

// HubHealth is the hub's GET /v1/health document.
type HubHealth struct {
	Epoch string `json:"epoch"`
	// Role is RoleLeader or RoleStandby; Leader is the leading hub's URL
	// (empty while none leads). Several hubs share one PostgreSQL
	// database; one leads.
	Role     string         `json:"role"`
	Leader   string         `json:"leader"`
	Routing  string         `json:"routing"`
	Nodes    []HealthNode   `json:"nodes"`
	Crawlers HealthCrawlers `json:"crawlers"`
}

// HealthNode is one node in the hub's health document.
type HealthNode struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Subscribers int    `json:"subscribers"`
}

// HealthCrawlers counts crawlers in the hub's health document.
type HealthCrawlers struct {
	Total    int            `json:"total"`
	Assigned int            `json:"assigned"`
	ByState  map[string]int `json:"by_state"`
}

// SpawnHealth is a spawn's GET /v1/health document. Anyone may read its
// state and counts; the hub it follows, its epoch and the lists of
// subscribers and data sources (which name crawlers and crawl targets, and
// run to megabytes on a busy spawn) only a caller with the node token.
type SpawnHealth struct {
	NodeID          string             `json:"node_id"`
	State           string             `json:"state"`
	Epoch           string             `json:"epoch,omitempty"`
	Hub             string             `json:"hub,omitempty"`
	Store           string             `json:"store"`
	SubscriberCount int                `json:"subscriber_count"`
	DataSourceCount int                `json:"data_source_count"`
	Subscribers     []HealthSubscriber `json:"subscribers,omitzero"`
	DataSources     []HealthDataSource `json:"data_sources,omitzero"`
}

// HealthSubscriber is one subscriber in a spawn's health document.
type HealthSubscriber struct {
	CrawlerID  int64  `json:"crawler_id"`
	QueryUUID  string `json:"query_uuid"`
	State      string `json:"state"`
	DataSource string `json:"data_source"`
	Stored     int64  `json:"stored"`
	Error      string `json:"error,omitempty"`
}

// HealthDataSource is one data source in a spawn's health document.
type HealthDataSource struct {
	Key         string `json:"key"`
	Subscribers int    `json:"subscribers"`
	Error       string `json:"error,omitempty"`
}

// Event is something an operator may want to know happened: a node joined or
// was lost, a reload, a crawler reaching its limit, a detach.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
}

// Paths of the dashboard's admin routes.
const (
	PathScaling        = "/v1/scaling"
	PathCrawlerHistory = "/v1/crawlers/{id}/history"
)

// Scaling is the hub's autoscaling signal (GET /v1/scaling): how many spawn
// nodes the current load wants at the configured subscribers per node.
type Scaling struct {
	// Nodes is the number of live spawn nodes.
	Nodes int `json:"nodes"`
	// Subscribers counts the subscribers the hub runs or wants to run: every
	// enabled crawler that is not at its (or its user's) limit.
	Subscribers int `json:"subscribers"`
	// TargetSubscribersPerNode is the hub's --scaling-target.
	TargetSubscribersPerNode int `json:"target_subscribers_per_node"`
	// DesiredNodes is max(1, ceil(subscribers / target)).
	DesiredNodes int `json:"desired_nodes"`
}

// CrawlerHistory is a crawler's recent comment rate (GET
// /v1/crawlers/{id}/history): one sample per step of the comments counted as
// usage in that step, expressed per minute, oldest first. The hub keeps it in
// memory, so it starts empty (all zeros) after a hub restart.
type CrawlerHistory struct {
	CrawlerID   int64 `json:"crawler_id"`
	StepSeconds int   `json:"step_seconds"`
	// Until is the end of the newest sample.
	Until             time.Time `json:"until"`
	CommentsPerMinute []float64 `json:"comments_per_minute"`
}
