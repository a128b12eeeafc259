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

// Compliance: checking stored items with their service. X's developer
// terms require removing posts deleted at X, and its batch compliance API
// tells, for a list of post ids, which are gone; a source kind with such a
// check declares it (api.SourceInfo.Recheck). The leading hub (a hub runs
// this loop only while it leads) asks, every ComplianceInterval, one spawn
// offering each such kind — the one holding the kind's fleet connection
// first — to check the stored items of the kind's crawlers; the spawn runs
// the check and takes back what the service reports gone, which reaches
// every store like any other retraction. Each run is recorded in SQL
// (compliance_runs) and shown by GET /v1/compliance/runs. Runs never
// overlap: X allows one job of a type in flight per app.
const (
	// DefaultComplianceInterval is how often stored items are checked:
	// daily.
	DefaultComplianceInterval = 24 * time.Hour
	// complianceCallTimeout bounds a spawn's answer: the job at the
	// service, with its upload and download (the spawn's own bound is an
	// hour).
	complianceCallTimeout = 70 * time.Minute
	// complianceRunsShown is how many runs GET /v1/compliance/runs lists.
	complianceRunsShown = 50
	// Run statuses the hub sets itself, besides the job's.
	complianceRunning = "running"
	complianceError   = "error"
)

// ErrComplianceBusy is returned when a compliance run is already going.
var ErrComplianceBusy = errors.New("cluster: a compliance check is already running")

// ErrNothingToCheck is returned when no crawler of a kind with a check
// exists.
var ErrNothingToCheck = errors.New("cluster: no crawler of a source with a compliance check has items to check")

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
		for _, kind := range h.checkedKinds() {
			if _, err := h.RunCompliance(ctx, kind); err != nil && ctx.Err() == nil && !errors.Is(err, ErrComplianceBusy) && !errors.Is(err, ErrNothingToCheck) {
				h.logger.Warn("compliance check failed", "source", kind, "err", err)
			}
		}
	}
}

// checkedKinds lists, sorted, the kinds whose declaration has a check.
func (h *Hub) checkedKinds() []string {
	var out []string
	for _, info := range h.Sources().All() {
		if info.Recheck > 0 {
			out = append(out, info.Name)
		}
	}
	return out
}

// RunCompliance runs one check of a kind's stored items now and returns
// its record; an empty kind picks the first kind with a check that has
// crawlers. A run with no crawler to check records nothing.
func (h *Hub) RunCompliance(ctx context.Context, kind string) (api.ComplianceRun, error) {
	if kind == "" {
		for _, k := range h.checkedKinds() {
			if h.crawlersOf(k) != nil {
				kind = k
				break
			}
		}
		if kind == "" {
			return api.ComplianceRun{}, ErrNothingToCheck
		}
	} else if info, ok := h.Sources().Lookup(kind); !ok || info.Recheck <= 0 {
		return api.ComplianceRun{}, fmt.Errorf("%w: source %s has no compliance check", ErrNothingToCheck, kind)
	}
	if !h.complianceBusy.CompareAndSwap(false, true) {
		return api.ComplianceRun{}, ErrComplianceBusy
	}
	defer h.complianceBusy.Store(false)
	crawlers := h.crawlersOf(kind)
	h.mu.Lock()
	epoch := h.epoch
	// The spawn holding the kind's one fleet connection first, then any
	// other that offers it (one that cannot check, as X over v1.1,
	// answers 501).
	var nodes []*node
	if holder, ok := h.nodes[h.fleetHolders[kind]]; ok {
		nodes = append(nodes, holder)
	}
	for _, id := range h.sortedNodeIDsLocked() {
		n := h.nodes[id]
		if slices.Contains(n.sources, kind) && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	h.mu.Unlock()
	if len(crawlers) == 0 {
		return api.ComplianceRun{}, ErrNothingToCheck
	}
	run, err := h.cfg.Store.StartComplianceRun(ctx, kind, "")
	if err != nil {
		return api.ComplianceRun{}, err
	}
	run.Status, run.Error = complianceError, fmt.Sprintf("no live spawn can check %s items", kind)
	for _, n := range nodes {
		cctx, cancel := context.WithTimeout(ctx, complianceCallTimeout)
		res, err := h.nodeAPI(n).Compliance(cctx, api.ComplianceRequest{Epoch: epoch, Source: kind, CrawlerIDs: crawlers})
		cancel()
		var status *api.StatusError
		if errors.As(err, &status) && status.Code == http.StatusNotImplemented {
			continue // this spawn cannot check the kind's items
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
	h.events.add("compliance", fmt.Sprintf("%s compliance check %s: %d items checked, %d gone and removed%s", kind, run.Status, run.Checked, run.Deleted, errNote(run.Error)))
	h.mu.Unlock()
	runs, err := h.cfg.Store.ComplianceRuns(fctx, 1)
	if err == nil && len(runs) == 1 && runs[0].ID == run.ID {
		return runView(runs[0]), nil
	}
	return runView(run), nil
}

// crawlersOf lists, sorted, the ids of the crawlers of a kind.
func (h *Hub) crawlersOf(kind string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for id, c := range h.crawlers {
		if c.row.Source == kind {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
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
	v := api.ComplianceRun{ID: r.ID, Source: r.Source, StartedAt: r.StartedAt.UTC(), Node: r.Node, JobID: r.JobID, Status: r.Status,
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
