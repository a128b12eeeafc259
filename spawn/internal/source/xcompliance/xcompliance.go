// Package xcompliance checks stored X posts with X API v2's batch
// compliance endpoints, so posts deleted at X (or whose author was
// suspended, protected or deleted) are removed from the stores, as X's
// developer terms require. One check is one job: create it
// (POST /2/compliance/jobs, type tweets), upload the post ids to its
// upload_url (one id a line), poll the job (GET /2/compliance/jobs/:id)
// until it is complete, failed or expired — or the check's deadline
// passes — and read the results from its download_url (one JSON object a
// line, for the ids X has an event for). Jobs run one at a time: X allows
// one job of a type in flight per app, and the hub asks one spawn at a
// time.
package xcompliance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
)

// Defaults of Options.
const (
	// DefaultPollEvery is how often a job's status is read once it has
	// run a while. X allows 150 reads of a job per 15 minutes, one every 6
	// seconds; 10 s stays under. The first reads come sooner (firstPoll,
	// doubling), for a small job done in seconds.
	DefaultPollEvery = 10 * time.Second
	// firstPoll is the wait before the first status read.
	firstPoll = 500 * time.Millisecond
	// DefaultJobTimeout bounds one check from the job's creation to its
	// results: X processes millions of ids in minutes; a job still not
	// done after this is given up (timed out) and the next check starts
	// another.
	DefaultJobTimeout = time.Hour
	// DefaultRequestTimeout bounds one HTTP request other than the upload
	// and the download.
	DefaultRequestTimeout = 30 * time.Second
	// maxAnswerBytes caps a job document.
	maxAnswerBytes = 1 << 20
	// maxResultBytes caps the results read (a line is ~150 bytes: a
	// million events).
	maxResultBytes = 256 << 20
	// maxClip caps text of X quoted in an error.
	maxClip = 200
)

// Outcomes of a check (Result.Status): X's final job statuses, and
// timed_out for a job given up at the deadline.
const (
	StatusComplete = "complete"
	StatusFailed   = "failed"
	StatusExpired  = "expired"
	StatusTimedOut = "timed_out"
)

// Errors of Check, checked with errors.Is.
var (
	// ErrBusy means a check is already running on this spawn.
	ErrBusy = errors.New("xcompliance: a compliance check is already running")
	// ErrJob means the job did not complete: X failed or expired it, or
	// the deadline passed (Result.Status says which).
	ErrJob = errors.New("xcompliance: the compliance job did not complete")
	// ErrAPI means X answered a request with an error.
	ErrAPI = errors.New("xcompliance: X refused a request")
)

// Options configure a Checker.
type Options struct {
	// APIURL is X's API base (--twitter-api-url); the jobs live under
	// /2/compliance/jobs.
	APIURL      string
	BearerToken string
	// Client makes the requests; nil means a client with no timeout of
	// its own (each request is bounded by RequestTimeout or the check).
	Client         *http.Client
	PollEvery      time.Duration
	JobTimeout     time.Duration
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// Checker runs compliance checks, one at a time.
type Checker struct {
	opts    Options
	running sync.Mutex
}

// New returns a checker.
func New(opts Options) (*Checker, error) {
	if opts.BearerToken == "" {
		return nil, errors.New("xcompliance: a bearer token is required")
	}
	if !strings.HasPrefix(opts.APIURL, "http://") && !strings.HasPrefix(opts.APIURL, "https://") {
		return nil, fmt.Errorf("xcompliance: API URL %q is not an http(s) URL", opts.APIURL)
	}
	opts.APIURL = strings.TrimRight(opts.APIURL, "/")
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = DefaultPollEvery
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = DefaultJobTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Checker{opts: opts}, nil
}

// Gone is a post X reports: deleted, or its author suspended, protected
// or deleted; it may no longer be kept.
type Gone struct {
	ID     string
	Reason string
}

// Result is one check's outcome.
type Result struct {
	JobID   string
	Status  string
	Checked int
	Gone    []Gone
}

// job is X's compliance job document.
type job struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	UploadURL   string `json:"upload_url"`
	DownloadURL string `json:"download_url"`
}

// Check runs one job over ids (X post ids, without the tw: prefix) and
// returns the posts X reports gone. An error says why the check did not
// complete; Result still names the job and its last status.
func (c *Checker) Check(ctx context.Context, ids []string) (Result, error) {
	if !c.running.TryLock() {
		return Result{}, ErrBusy
	}
	defer c.running.Unlock()
	res := Result{Checked: len(ids)}
	if len(ids) == 0 {
		res.Status = StatusComplete
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.JobTimeout)
	defer cancel()

	body, _ := json.Marshal(map[string]string{"type": "tweets", "name": "blackwidow-" + time.Now().UTC().Format("20060102T150405Z")})
	var created struct {
		Data job `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, c.opts.APIURL+"/2/compliance/jobs", body, &created); err != nil {
		return res, fmt.Errorf("xcompliance: create a job: %w", err)
	}
	j := created.Data
	res.JobID, res.Status = j.ID, j.Status
	if j.ID == "" || j.UploadURL == "" || j.DownloadURL == "" {
		return res, fmt.Errorf("%w: the created job has no id, upload_url or download_url", ErrAPI)
	}
	c.opts.Logger.Info("x compliance job created", "job_id", j.ID, "ids", len(ids))

	if err := c.upload(ctx, j.UploadURL, ids); err != nil {
		// Say where the job stands (expired, when the upload came late).
		var got struct {
			Data job `json:"data"`
		}
		if c.call(ctx, http.MethodGet, c.opts.APIURL+"/2/compliance/jobs/"+j.ID, nil, &got) == nil && got.Data.Status != "" {
			res.Status = got.Data.Status
		}
		return res, fmt.Errorf("%w: upload the ids of job %s: %w", ErrJob, j.ID, err)
	}
	wait := min(firstPoll, c.opts.PollEvery)
	for {
		if !backoff.Sleep(ctx, wait) {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				res.Status = StatusTimedOut
				return res, fmt.Errorf("%w: job %s still %s after %s", ErrJob, j.ID, orUnknown(res.Status), c.opts.JobTimeout)
			}
			return res, ctx.Err()
		}
		wait = min(2*wait, c.opts.PollEvery)
		var got struct {
			Data job `json:"data"`
		}
		err := c.call(ctx, http.MethodGet, c.opts.APIURL+"/2/compliance/jobs/"+j.ID, nil, &got)
		if err == nil {
			res.Status = got.Data.Status
			switch got.Data.Status {
			case StatusComplete:
				gone, err := c.results(ctx, j.DownloadURL)
				res.Gone = gone
				if err != nil {
					return res, fmt.Errorf("xcompliance: read the results of job %s: %w", j.ID, err)
				}
				c.opts.Logger.Info("x compliance job complete", "job_id", j.ID, "checked", len(ids), "gone", len(gone))
				return res, nil
			case StatusFailed, StatusExpired:
				return res, fmt.Errorf("%w: job %s is %s", ErrJob, j.ID, got.Data.Status)
			}
		} else if ctx.Err() == nil {
			// A failed read is tried again at the next poll.
			c.opts.Logger.Warn("x compliance job status not read", "job_id", j.ID, "err", err)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// call makes one API request with the bearer token and decodes a 2xx
// answer into out; an error document becomes ErrAPI with X's words.
func (c *Checker) call(ctx context.Context, method, url string, body []byte, out any) error {
	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.opts.BearerToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: %s answered %s: %s", ErrAPI, method, resp.Status, clip(data))
	}
	// X answers some errors with 200 and an errors list (a job not found).
	var doc struct {
		Errors []struct {
			Detail string `json:"detail"`
			Title  string `json:"title"`
		} `json:"errors"`
	}
	if json.Unmarshal(data, &doc) == nil && len(doc.Errors) > 0 && !bytes.Contains(data, []byte(`"data"`)) {
		return fmt.Errorf("%w: %s", ErrAPI, clip([]byte(doc.Errors[0].Title+": "+doc.Errors[0].Detail)))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: the answer is not the job document: %v", ErrAPI, err)
	}
	return nil
}

// upload puts the ids to the job's signed upload URL, one a line.
func (c *Checker) upload(ctx context.Context, url string, ids []string) error {
	var buf bytes.Buffer
	for _, id := range ids {
		buf.WriteString(id)
		buf.WriteByte('\n')
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain")
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxClip))
		return fmt.Errorf("%w: the upload answered %s: %s", ErrAPI, resp.Status, clip(data))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	return nil
}

// results reads a complete job's results: the ids X has an event for.
// Every action X reports (delete, for each reason) means the post may no
// longer be kept.
func (c *Checker) results(ctx context.Context, url string) ([]Gone, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxClip))
		return nil, fmt.Errorf("%w: the download answered %s: %s", ErrAPI, resp.Status, clip(data))
	}
	var out []Gone
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxResultBytes))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	bad := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev struct {
			ID     string `json:"id"`
			Action string `json:"action"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.ID == "" || !digits(ev.ID) {
			bad++
			continue
		}
		out = append(out, Gone{ID: ev.ID, Reason: ev.Reason})
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	if bad > 0 {
		c.opts.Logger.Warn("x compliance results skipped", "lines", bad)
	}
	return out, nil
}

// digits reports whether s is a post id: decimal digits.
func digits(s string) bool {
	if len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxClip {
		return s[:maxClip] + "…"
	}
	return s
}
