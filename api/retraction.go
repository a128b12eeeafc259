package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Operations of a Retraction.
const (
	// RetractDelete removes one comment (its source deleted the post) from
	// every crawler that stored it, and keeps it from being stored again.
	RetractDelete = "delete"
	// RetractUpdate replaces a stored comment's text and links with the
	// post's edited ones and sets its EditedAt.
	RetractUpdate = "update"
	// RetractAccount tells an account's status: inactive (Status deleted
	// or takendown) removes every comment of the author and stores none
	// of theirs while it lasts; Active lifts that.
	RetractAccount = "account"
	// RetractForget removes every comment of an author that was published
	// before the request (erasure), and keeps those from being stored
	// again.
	RetractForget = "forget"
)

// Account statuses of a RetractAccount that remove the author's comments
// (the atproto #account event's status when active is false). Other
// statuses (suspended, deactivated) hide an account for a while without
// taking its posts back, so they change nothing.
const (
	AccountDeleted   = "deleted"
	AccountTakendown = "takendown"
)

// Retraction is something a source took back, or changed, after its item
// was handed over: a post deleted or edited, an account deleted or taken
// down (or back), or an author erased on request. It travels from the
// spawn that learned it to the hub in a poll answer, and from the hub to
// every other spawn in their polls, so it reaches each store whichever
// spawn stored the comments.
type Retraction struct {
	// Seq numbers the retraction: in a poll answer, on the spawn that
	// reports it (acknowledged in PollRequest.RetractionAcks); in a poll
	// request, in the hub's log (acknowledged by
	// PollResponse.RetractionsApplied).
	Seq    uint64 `json:"seq"`
	Op     string `json:"op"`
	Source string `json:"source"`
	// ID is the comment id (delete, update).
	ID string `json:"id,omitempty"`
	// Author is the author's id (a DID, an X user id, a Mastodon account
	// URI) or handle (account, forget).
	Author string `json:"author,omitempty"`
	// Active and Status describe an account (account).
	Active bool   `json:"active,omitempty"`
	Status string `json:"status,omitempty"`
	// Text, Links and EditedAt are the edited post (update).
	Text     string    `json:"text,omitempty"`
	Links    []string  `json:"links,omitempty"`
	EditedAt time.Time `json:"edited_at,omitzero"`
	// At is when the source announced it (or the operator asked).
	At time.Time `json:"at"`
	// Reason says where it came from, for the log: "bluesky delete",
	// "x compliance", "forget request".
	Reason string `json:"reason,omitempty"`
}

// Removes reports whether the retraction removes comments.
func (r Retraction) Removes() bool {
	switch r.Op {
	case RetractDelete, RetractForget:
		return true
	case RetractAccount:
		return !r.Active && (r.Status == AccountDeleted || r.Status == AccountTakendown)
	}
	return false
}

// Key names what the retraction is about, for de-duplication: the same
// post or author told by several spawns is one retraction.
func (r Retraction) Key() string {
	target := r.ID
	if r.Op == RetractAccount || r.Op == RetractForget {
		target = r.Author
	}
	return r.Op + "|" + r.Source + "|" + target
}

// Forget is the body of POST /v1/forget: every comment of an author in
// every crawler of a source is removed.
type Forget struct {
	Source string `json:"source"`
	// Author is the author's author_id (a DID, an X user id, a Mastodon
	// account URI) or handle.
	Author string `json:"author"`
}

// ForgetResult says how many comments a forget removed, counted per
// crawler (a post stored by two crawlers counts twice), and how many
// stores had not answered yet: they apply it when they next hear from the
// hub.
type ForgetResult struct {
	Removed int64 `json:"removed"`
	Pending int   `json:"pending,omitempty"`
}

// PathForget is where an operator asks to forget an author.
const PathForget = "/v1/forget"

// PathNodeRetract is where the hub hands a spawn retractions to apply at
// once (a forget), rather than in its next poll.
const PathNodeRetract = "/v1/retractions"

// RetractRequest hands a spawn retractions from the hub's log to apply now.
type RetractRequest struct {
	Epoch       string       `json:"epoch"`
	Retractions []Retraction `json:"retractions"`
}

// RetractResponse counts the comments the spawn's store removed, per
// crawler.
type RetractResponse struct {
	Removed map[int64]int64 `json:"removed"`
	// Store names the store the spawn writes to, so the hub counts a store
	// that several spawns share once.
	Store string `json:"store,omitempty"`
}

// ParseRetention reads a retention: a number of days ("30d"), or a Go
// duration ("36h"); "" and "0" mean none (0). It refuses negative and
// sub-hour values (a store drops comments by the day or the hour) and
// anything past MaxRetention, however many digits it has: a count of days
// is compared before it becomes a time.Duration, which would wrap.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	tooLong := fmt.Errorf("retention %q: must be at most %s", s, FormatRetention(MaxRetention))
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, tooLong
		case err != nil || n == 0:
			return 0, fmt.Errorf("retention %q: want a positive number of days like 30d", s)
		case n > uint64(MaxRetention/(24*time.Hour)):
			return 0, tooLong
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("retention %q: want days like 30d or a duration like 36h", s)
		}
		d = v
	}
	if d < time.Hour {
		return 0, fmt.Errorf("retention %q: must be at least an hour", s)
	}
	if d > MaxRetention {
		return 0, tooLong
	}
	return d, nil
}

// MaxRetention bounds a retention: Cassandra's TTL is at most 20 years.
const MaxRetention = 20 * 365 * 24 * time.Hour

// FormatRetention writes a retention as ParseRetention reads it: whole
// days as "30d", anything else as a Go duration, none as "".
func FormatRetention(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	default:
		return d.String()
	}
}

// PathNodeCompliance is where the hub asks a spawn to check the stored
// items of a source kind with its service (X's batch compliance API): the
// kinds that declare a Recheck.
const PathNodeCompliance = "/v1/compliance"

// PathComplianceRuns lists the compliance checks the hub ran.
const PathComplianceRuns = "/v1/compliance/runs"

// ComplianceRequest asks a spawn to check the stored items of the named
// crawlers of one source kind.
type ComplianceRequest struct {
	Epoch      string  `json:"epoch"`
	Source     string  `json:"source"`
	CrawlerIDs []int64 `json:"crawler_ids"`
}

// ComplianceResult is one check's outcome: the service's job (X runs
// one), its final status (complete, failed, expired, timed_out), how many
// items were checked and how many the service reported gone (removed from
// every store).
type ComplianceResult struct {
	JobID   string `json:"job_id,omitempty"`
	Status  string `json:"status"`
	Checked int64  `json:"checked"`
	Deleted int64  `json:"deleted"`
	Error   string `json:"error,omitempty"`
}

// ComplianceRun is a check the hub ran, as GET /v1/compliance/runs shows
// it; Status is running until it ends.
type ComplianceRun struct {
	ID         int64      `json:"id"`
	Source     string     `json:"source,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Node       string     `json:"node,omitempty"`
	JobID      string     `json:"job_id,omitempty"`
	Status     string     `json:"status"`
	Checked    int64      `json:"checked"`
	Deleted    int64      `json:"deleted"`
	Error      string     `json:"error,omitempty"`
}
