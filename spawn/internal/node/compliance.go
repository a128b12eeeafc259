package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Compliance: checking stored items with their service. A source kind
// whose service says which of a list of items are gone (X's batch
// compliance API) declares how often to ask (api.SourceInfo.Recheck) and
// implements source.Rechecker. The hub asks a spawn offering the kind to
// check the stored items of the kind's crawlers (api.ComplianceRequest);
// the spawn reads their ids from the store (an export of each crawler),
// hands them to the kind, and takes back every item reported gone like
// any other retraction: removed here at once, then, through the hub, from
// every other store.

// complianceExportPage is how many comments one export page reads.
const complianceExportPage = 5000

// ErrNoCompliance is returned when this spawn cannot check the kind's
// items: the kind is not offered here or has no check (X over v1.1), or
// the store cannot list its items.
var ErrNoCompliance = errors.New("node: this spawn cannot check the stored items of that source with its service")

// Compliance runs one check of the crawlers' stored items of req.Source.
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
	kind, err := n.cfg.Sources.Lookup(req.Source)
	rc, canCheck := kind.(source.Rechecker)
	ex, canList := n.cfg.Store.(store.Exporter)
	if err != nil || !canCheck || !canList {
		return api.ComplianceResult{}, fmt.Errorf("%w (%s)", ErrNoCompliance, req.Source)
	}
	prefix := n.info(req.Source).IDPrefix
	seen := map[string]bool{}
	var ids []string
	for _, crawler := range req.CrawlerIDs {
		cur := ""
		for {
			page, err := ex.Export(ctx, crawler, store.Range{}, cur, complianceExportPage)
			if err != nil {
				return api.ComplianceResult{}, fmt.Errorf("node: read the items of crawler %d: %w", crawler, err)
			}
			for _, c := range page.Comments {
				if strings.HasPrefix(c.ID, prefix) && !seen[c.ID] {
					seen[c.ID] = true
					ids = append(ids, c.ID)
				}
			}
			if page.Next == "" {
				break
			}
			cur = page.Next
		}
	}
	checked, err := rc.Recheck(ctx, ids)
	res := api.ComplianceResult{JobID: checked.JobID, Status: checked.Status, Checked: int64(len(ids)), Deleted: int64(len(checked.Gone))}
	if len(checked.Gone) > 0 {
		now := time.Now().UTC()
		xs := make([]api.Retraction, 0, len(checked.Gone))
		for id, reason := range checked.Gone {
			xs = append(xs, api.Retraction{Op: api.RetractDelete, Source: req.Source, ID: id, At: now, Reason: reason})
		}
		n.retracts.learn(xs)
	}
	if err != nil {
		res.Error = err.Error()
		n.logger.Warn("compliance check did not complete", "source", req.Source, "job_id", checked.JobID, "status", checked.Status, "err", err)
	} else {
		n.logger.Info("compliance check done", "source", req.Source, "job_id", checked.JobID, "checked", len(ids), "gone", len(checked.Gone))
	}
	return res, nil
}
