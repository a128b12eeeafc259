package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// X compliance. X's developer terms require removing posts deleted at X;
// its batch compliance API tells, for a list of post ids, which are gone.
// The leading hub (a hub runs this loop only while it leads) asks, every
// ComplianceInterval, one spawn holding X API v2 credentials to check the
// stored posts of every X crawler; the spawn runs the job at X and takes
// back what X reports gone, which reaches every store like any other
// retraction. Each run is recorded in SQL (compliance_runs) and shown by
// GET /v1/compliance/runs. Runs never overlap: X allows one job of a type
// in flight per app.
const (
	// DefaultComplianceInterval is how often the stored X posts are
	// checked: daily.
	DefaultComplianceInterval = 24 * time.Hour
	// complianceCallTimeout bounds a spawn's answer: the job at X, with
	// its upload and download (the spawn's own bound is an hour).
	complianceCallTimeout = 70 * time.Minute
	// complianceRunsShown is how many runs GET /v1/compliance/runs lists.
	complianceRunsShown = 50
	// Run statuses the hub sets itself, besides the job's.
	complianceRunning = "running"
	complianceError   = "error"
)

// ErrComplianceBusy is returned when a compliance run is already going.
var ErrComplianceBusy = errors.New("cluster: a compliance check is already running")

// ErrNothingToCheck is returned when no X crawler exists.
var ErrNothingToCheck = errors.New("cluster: no X crawler has posts to check")

func (h *Hub) complianceLoop(ctx context.Context) {
	if h.cfg.ComplianceInterval <= 0 {
		return
	}
	t := time.NewTicker(h.cfg.ComplianceInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := h.RunCompliance(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrComplianceBusy) && !errors.Is(err, ErrNothingToCheck) {
			h.logger.Warn("x compliance check failed", "err", err)
		}
	}
}

// RunCompliance runs one check now and returns its record. A run with no
// X crawler records nothing.
func (h *Hub) RunCompliance(ctx context.Context) (api.ComplianceRun, error) {
	if !h.complianceBusy.CompareAndSwap(false, true) {
		return api.ComplianceRun{}, ErrComplianceBusy
	}
	defer h.complianceBusy.Store(false)
	h.mu.Lock()
	epoch := h.epoch
	var crawlers []int64
	for id, c := range h.crawlers {
		if c.row.Source == api.SourceTwitter {
			crawlers = append(crawlers, id)
		}
	}
	slices.Sort(crawlers)
	// The spawn holding X's one fleet connection first, then any other
	// that offers twitter (one with v1.1 credentials only answers 501).
	var nodes []*node
	if holder, ok := h.nodes[h.fleetHolders[api.SourceTwitter]]; ok {
		nodes = append(nodes, holder)
	}
	for _, id := range h.sortedNodeIDsLocked() {
		n := h.nodes[id]
		if slices.Contains(n.sources, api.SourceTwitter) && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	h.mu.Unlock()
	if len(crawlers) == 0 {
		return api.ComplianceRun{}, ErrNothingToCheck
	}
	run, err := h.cfg.Store.StartComplianceRun(ctx, "")
	if err != nil {
		return api.ComplianceRun{}, err
	}
	run.Status, run.Error = complianceError, "no live spawn holds X API v2 credentials"
	for _, n := range nodes {
		cctx, cancel := context.WithTimeout(ctx, complianceCallTimeout)
		res, err := h.nodeAPI(n).Compliance(cctx, api.ComplianceRequest{Epoch: epoch, CrawlerIDs: crawlers})
		cancel()
		var status *api.StatusError
		if errors.As(err, &status) && status.Code == http.StatusNotImplemented {
			continue // no X API v2 credentials there
		}
		run.Node = n.id
		if err != nil {
			run.Status, run.Error = complianceError, err.Error()
			break
		}
		run.JobID, run.Status, run.Checked, run.Deleted, run.Error = res.JobID, res.Status, res.Checked, res.Deleted, res.Error
		break
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeReadTimeout)
	defer cancel()
	if err := h.cfg.Store.FinishComplianceRun(fctx, run); err != nil {
		return runView(run), err
	}
	h.mu.Lock()
	h.events.add("compliance", fmt.Sprintf("x compliance check %s: %d posts checked, %d gone and removed%s", run.Status, run.Checked, run.Deleted, errNote(run.Error)))
	h.mu.Unlock()
	runs, err := h.cfg.Store.ComplianceRuns(fctx, 1)
	if err == nil && len(runs) == 1 && runs[0].ID == run.ID {
		return runView(runs[0]), nil
	}
	return runView(run), nil
}

func errNote(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// ComplianceRuns lists the latest runs, newest first.
func (h *Hub) ComplianceRuns(ctx context.Context) ([]api.ComplianceRun, error) {
	runs, err := h.cfg.Store.ComplianceRuns(ctx, complianceRunsShown)
	if err != nil {
		return nil, err
	}
	out := make([]api.ComplianceRun, 0, len(runs))
	for _, r := range runs {
		out = append(out, runView(r))
	}
	return out, nil
}

func runView(r sqlstore.ComplianceRun) api.ComplianceRun {
	v := api.ComplianceRun{ID: r.ID, StartedAt: r.StartedAt.UTC(), Node: r.Node, JobID: r.JobID, Status: r.Status,
		Checked: r.Checked, Deleted: r.Deleted, Error: r.Error}
	if r.FinishedAt != nil {
		t := r.FinishedAt.UTC()
		v.FinishedAt = &t
	}
	if v.Status == "" {
		v.Status = complianceRunning
	}
	return v
}
