package xv2

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Batch compliance, as X serves it (docs: x-api/compliance/batch-compliance
// and the jobs' schema in openapi.json; recorded answers of api.twitter.com
// in sns-sdks/go-twitter's tests):
//
//	POST /2/compliance/jobs {"type": "tweets", "name": …}
//	    → {"data": {"id", "type", "name", "resumable", "status": "created",
//	       "upload_url", "upload_expires_at", "download_url",
//	       "download_expires_at", "created_at"}}
//	PUT <upload_url>  (text/plain, one id a line; the URL is signed, no token)
//	GET /2/compliance/jobs/:id → {"data": {… "status": created | in_progress
//	       | complete | failed | expired}}
//	GET <download_url> → one JSON object a line, for the ids with an event
//	       only: {"id", "action": "delete", "created_at", "redacted_at",
//	       "reason": "deleted" | "suspended" | "protected" | …}
//
// An upload URL expires after 15 minutes (X-Goog-Expires=900 in the
// recorded URLs) and a download URL after a week (604800): a job not
// uploaded in time turns expired. One job of a type may be in flight per
// app at a time. Tests set how long processing takes, make the next job
// fail, or never finish (it stays in_progress).
const (
	// CompliancePath is where jobs are created and read.
	CompliancePath = "/2/compliance/jobs"
	// uploadPath and downloadPath stand for the signed storage URLs.
	uploadPath   = "/storage/submission/"
	downloadPath = "/storage/delivery/"
	// DefaultUploadExpiry and DefaultDownloadExpiry are the recorded
	// lifetimes of the two URLs.
	DefaultUploadExpiry   = 15 * time.Minute
	DefaultDownloadExpiry = 7 * 24 * time.Hour
	// maxUploadBytes caps an upload.
	maxUploadBytes = 64 << 20
)

// Job statuses.
const (
	JobCreated    = "created"
	JobInProgress = "in_progress"
	JobComplete   = "complete"
	JobFailed     = "failed"
	JobExpired    = "expired"
)

// complianceJobs is the server's compliance state.
type complianceJobs struct {
	mu                  sync.Mutex
	jobs                map[string]*Job
	nextID              int64
	gone                map[string]string // post id → reason X reports it under
	process             time.Duration     // how long a job takes after its upload
	upload              time.Duration     // how long its upload URL lives
	failNext, stallNext bool
	storage             string   // base of the upload and download URLs; "" is the server's own
	created             []string // ids of the jobs created, in order
}

// Job is one compliance job, as a test reads it.
type Job struct {
	ID, Type, Name string
	Status         string
	CreatedAt      time.Time
	UploadBy       time.Time
	DoneAt         time.Time // when an uploaded job completes
	IDs            []string
	Stalled        bool
	Failing        bool
}

func (s *Server) jobs() *complianceJobs {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compliance == nil {
		s.compliance = &complianceJobs{jobs: map[string]*Job{}, nextID: 1_423_000_000_000_000_000, gone: map[string]string{},
			upload: DefaultUploadExpiry}
	}
	return s.compliance
}

// complianceRoutes registers the compliance endpoints and the storage.
func (s *Server) complianceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+CompliancePath, s.auth(s.handleCreateJob))
	mux.HandleFunc("GET "+CompliancePath+"/{id}", s.auth(s.handleGetJob))
	mux.HandleFunc("PUT "+uploadPath+"{id}", s.handleUpload)
	mux.HandleFunc("GET "+downloadPath+"{id}", s.handleDownload)
}

// Compliance settings and events, for tests.

// RemovePost makes X report a post as gone for reason (deleted,
// suspended, protected…) in the jobs that check it.
func (s *Server) RemovePost(id, reason string) {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone[id] = reason
}

// SetComplianceTimings sets how long a job processes after its upload, and
// how long its upload URL lives.
func (s *Server) SetComplianceTimings(process, upload time.Duration) {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.process = process
	if upload > 0 {
		c.upload = upload
	}
}

// SetStorageURL makes the jobs' upload and download URLs point at base
// (scheme and host, no trailing slash) instead of the server itself: as
// X's point at Google Cloud Storage, a host the checker only learns from
// the job document.
func (s *Server) SetStorageURL(base string) {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storage = base
}

// FailNextJob makes the next job turn failed once uploaded.
func (s *Server) FailNextJob() {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failNext = true
}

// StallNextJob makes the next job stay in_progress for ever once uploaded.
func (s *Server) StallNextJob() {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stallNext = true
}

// Jobs lists the jobs created, oldest first, as they stand now.
func (s *Server) Jobs() []Job {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Job, 0, len(c.created))
	for _, id := range c.created {
		j := c.jobs[id]
		c.advanceLocked(j, time.Now())
		out = append(out, *j)
	}
	return out
}

// advanceLocked moves a job along its life: expired when not uploaded in
// time, complete (or failed) once processed.
func (c *complianceJobs) advanceLocked(j *Job, now time.Time) {
	switch j.Status {
	case JobCreated:
		if now.After(j.UploadBy) {
			j.Status = JobExpired
		}
	case JobInProgress:
		if j.Stalled || now.Before(j.DoneAt) {
			return
		}
		if j.Failing {
			j.Status = JobFailed
		} else {
			j.Status = JobComplete
		}
	}
}

// jobJSON is a job as X writes it.
type jobJSON struct {
	ID                string `json:"id"`
	Type              string `json:"type"`
	Name              string `json:"name,omitempty"`
	Resumable         bool   `json:"resumable"`
	Status            string `json:"status"`
	UploadURL         string `json:"upload_url"`
	UploadExpiresAt   string `json:"upload_expires_at"`
	DownloadURL       string `json:"download_url"`
	DownloadExpiresAt string `json:"download_expires_at"`
	CreatedAt         string `json:"created_at"`
}

// xTime writes a time as X does (milliseconds, Z).
func xTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (c *complianceJobs) jsonOf(j *Job, base string) jobJSON {
	return jobJSON{
		ID: j.ID, Type: j.Type, Name: j.Name, Status: j.Status,
		UploadURL:         fmt.Sprintf("%s%s%s?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=%d&X-Goog-SignedHeaders=content-type%%3Bhost", base, uploadPath, j.ID, int(c.upload.Seconds())),
		UploadExpiresAt:   xTime(j.UploadBy),
		DownloadURL:       fmt.Sprintf("%s%s%s?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=%d&X-Goog-SignedHeaders=host", base, downloadPath, j.ID, int(DefaultDownloadExpiry.Seconds())),
		DownloadExpiresAt: xTime(j.CreatedAt.Add(DefaultDownloadExpiry)),
		CreatedAt:         xTime(j.CreatedAt),
	}
}

// baseURL is the server's own URL as the client reached it.
func baseURL(r *http.Request) string { return "http://" + r.Host }

// storageBaseLocked is where a job's upload and download URLs point: X's
// jobs name Google Cloud Storage, another host than the API's; by default
// the server serves them itself.
func (c *complianceJobs) storageBaseLocked(r *http.Request) string {
	if c.storage != "" {
		return c.storage
	}
	return baseURL(r)
}

func (s *Server) handleCreateJob(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Resumable bool   `json:"resumable"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, complianceInvalid("the request body is not JSON"))
		return
	}
	if in.Type != "tweets" && in.Type != "users" {
		writeJSON(w, http.StatusBadRequest, complianceInvalid(fmt.Sprintf("The `type` query parameter value [%s] is not one of [tweets,users]", in.Type)))
		return
	}
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, id := range c.created {
		j := c.jobs[id]
		c.advanceLocked(j, now)
		if j.Type == in.Type && (j.Status == JobCreated || j.Status == JobInProgress) {
			writeProblem(w, http.StatusConflict, problem{Title: "Conflict", Type: "about:blank", Status: http.StatusConflict,
				Detail: fmt.Sprintf("A %s compliance job (%s) is already in progress for this app", in.Type, j.ID)})
			return
		}
	}
	c.nextID++
	j := &Job{ID: strconv.FormatInt(c.nextID, 10), Type: in.Type, Name: in.Name, Status: JobCreated, CreatedAt: now, UploadBy: now.Add(c.upload),
		Stalled: c.stallNext, Failing: c.failNext}
	c.stallNext, c.failNext = false, false
	c.jobs[j.ID] = j
	c.created = append(c.created, j.ID)
	writeJSON(w, http.StatusOK, map[string]any{"data": c.jsonOf(j, c.storageBaseLocked(r))})
}

// complianceInvalid is X's answer to a request it cannot take.
func complianceInvalid(msg string) map[string]any {
	return map[string]any{"errors": []map[string]any{{"message": msg}}, "title": "Invalid Request",
		"detail": "One or more parameters to your request was invalid.", "type": "https://api.twitter.com/2/problems/invalid-request"}
}

func (s *Server) handleGetJob(w http.ResponseWriter, r *http.Request) {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[r.PathValue("id")]
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []map[string]any{{"value": r.PathValue("id"), "detail": "Could not find job with id: [" + r.PathValue("id") + "].",
			"title": "Not Found Error", "resource_type": "job", "parameter": "id", "resource_id": r.PathValue("id"), "type": "https://api.twitter.com/2/problems/resource-not-found"}}})
		return
	}
	c.advanceLocked(j, time.Now())
	writeJSON(w, http.StatusOK, map[string]any{"data": c.jsonOf(j, c.storageBaseLocked(r))})
}

// handleUpload takes the ids of a job, one a line, as the storage does.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	c := s.jobs()
	c.mu.Lock()
	j, ok := c.jobs[r.PathValue("id")]
	if ok {
		c.advanceLocked(j, time.Now())
	}
	c.mu.Unlock()
	if !ok {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	var ids []string
	sc := bufio.NewScanner(io.LimitReader(r.Body, maxUploadBytes))
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if j.Status != JobCreated {
		// The signed URL is no longer valid (expired, or used).
		http.Error(w, "ExpiredToken: the signed URL has expired", http.StatusBadRequest)
		return
	}
	j.IDs = ids
	j.Status = JobInProgress
	j.DoneAt = time.Now().Add(c.process)
	w.WriteHeader(http.StatusOK)
}

// handleDownload serves a complete job's results: one JSON object a line
// for each uploaded id X has an event for.
func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request) {
	c := s.jobs()
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[r.PathValue("id")]
	if ok {
		c.advanceLocked(j, time.Now())
	}
	if !ok || j.Status != JobComplete {
		http.Error(w, "NoSuchKey: The specified key does not exist.", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	enc := json.NewEncoder(w)
	now := time.Now()
	for _, id := range j.IDs {
		reason, gone := c.gone[id]
		if !gone {
			continue
		}
		created := ""
		if p := s.postCreated(id); !p.IsZero() {
			created = xTime(p)
		}
		_ = enc.Encode(map[string]string{"id": id, "action": "delete", "created_at": created, "redacted_at": xTime(now), "reason": reason})
	}
}

// postCreated is when a published post was made, zero when unknown.
func (s *Server) postCreated(id string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.posts[id]; ok {
		return p.CreatedAt
	}
	return time.Time{}
}
