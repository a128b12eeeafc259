package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// X compliance. The hub asks the spawn holding the X credentials to check
// the stored X posts of the X crawlers (api.ComplianceRequest); the spawn
// reads their ids from the store (an export of each crawler), runs one job
// through its ComplianceChecker, and takes back every post X reports gone
// like any other retraction: removed here at once, then, through the hub,
// from every other store.

// ComplianceChecker checks post ids (without the tw: prefix) with X and
// returns the job's id and final status, and the ids X reports gone with
// their reasons.
type ComplianceChecker func(ctx context.Context, ids []string) (jobID, status string, gone map[string]string, err error)

// xIDPrefix starts every X comment id.
const xIDPrefix = "tw:"

// complianceExportPage is how many comments one export page reads.
const complianceExportPage = 5000

// ErrNoCompliance is returned when the spawn holds no X credentials for
// the compliance API (or its store cannot list its posts).
var ErrNoCompliance = fmt.Errorf("node: this spawn cannot run X compliance checks")

// Compliance runs one check of the crawlers' stored X posts.
func (n *Node) Compliance(ctx context.Context, req api.ComplianceRequest) (api.ComplianceResult, error) {
	n.mu.Lock()
	attached, epoch := n.attach.state == api.NodeAttached, n.attach.epoch
	n.mu.Unlock()
	if !attached {
		return api.ComplianceResult{}, ErrNotAttached
	}
	if req.Epoch != epoch {
		return api.ComplianceResult{}, fmt.Errorf("%w: compliance asked by epoch %s, attached to %s", ErrEpoch, req.Epoch, epoch)
	}
	ex, ok := n.cfg.Store.(store.Exporter)
	if n.cfg.Compliance == nil || !ok {
		return api.ComplianceResult{}, ErrNoCompliance
	}
	seen := map[string]bool{}
	var ids []string
	for _, crawler := range req.CrawlerIDs {
		cur := ""
		for {
			page, err := ex.Export(ctx, crawler, store.Range{}, cur, complianceExportPage)
			if err != nil {
				return api.ComplianceResult{}, fmt.Errorf("node: read the posts of crawler %d: %w", crawler, err)
			}
			for _, c := range page.Comments {
				if id, ok := strings.CutPrefix(c.ID, xIDPrefix); ok && !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
			if page.Next == "" {
				break
			}
			cur = page.Next
		}
	}
	jobID, status, gone, err := n.cfg.Compliance(ctx, ids)
	res := api.ComplianceResult{JobID: jobID, Status: status, Checked: int64(len(ids)), Deleted: int64(len(gone))}
	if len(gone) > 0 {
		now := time.Now().UTC()
		xs := make([]api.Retraction, 0, len(gone))
		for id, reason := range gone {
			xs = append(xs, api.Retraction{Op: api.RetractDelete, Source: api.SourceTwitter, ID: xIDPrefix + id, At: now,
				Reason: "x compliance: " + reason})
		}
		n.retracts.learn(xs)
	}
	if err != nil {
		res.Error = err.Error()
		n.logger.Warn("x compliance check did not complete", "job_id", jobID, "status", status, "err", err)
	} else {
		n.logger.Info("x compliance check done", "job_id", jobID, "checked", len(ids), "gone", len(gone))
	}
	return res, nil
}
