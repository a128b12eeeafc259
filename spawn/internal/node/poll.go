package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// maxIncrementsPerPoll bounds one poll answer; the rest follow on the next
// poll.
const maxIncrementsPerPoll = 10000

// Poll answers the hub's batched status poll.
func (n *Node) Poll(req api.PollRequest) (api.PollResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if req.NodeID != "" && req.NodeID != n.id {
		return api.PollResponse{}, fmt.Errorf("%w: poll for node %s reached node %s", ErrEpoch, req.NodeID, n.id)
	}
	err := n.checkHubLocked(req.Epoch, req.Seq, req.ValidUntil)
	if err != nil && !errors.Is(err, ErrStale) {
		return api.PollResponse{}, err
	}
	fresh := err == nil
	now := time.Now()
	// Only a fresh poll speaks for the hub now: a stale one neither drops
	// subscribers nor grants leases. Acknowledgements hold whatever their
	// order: an increment the hub has applied is never reported again.
	if fresh {
		if req.Drain {
			n.startDrainLocked("the hub drains it")
		}
		n.keepListedLocked(req.Subscribers, now)
		n.enqueueReleasedLocked(n.applyLeasesLocked(req.Leases))
		n.retracts.fromPoll(req.RetractionAcks, req.Retractions)
	}
	n.usage.pruneAckedLocked(req.Acks)
	clock := n.clock()
	resp := api.PollResponse{NodeID: n.id, Clock: clock, Store: n.writer.health(), Draining: n.drain.active}
	// A fresh poll is answered with what changed since the answer the hub
	// last took in; a stale one, which the hub may never read, in full and
	// unrecorded.
	if fresh {
		resp.Answer, resp.Partial = n.delta.Begin(req.StatusBase)
	}
	for _, ref := range req.Subscribers {
		st := api.SubscriberStatus{CrawlerID: ref.CrawlerID, State: api.StateMissing}
		if s, ok := n.table.subs[ref.CrawlerID]; ok {
			st = n.statusLocked(s, clock, now)
		}
		if !fresh || n.delta.Include(st) {
			resp.Subscribers = append(resp.Subscribers, st)
		}
	}
	resp.Retractions, resp.MoreRetractions, resp.RetractionsApplied = n.retracts.forPoll()
	resp.Increments = slices.Clone(n.usage.incs[:min(len(n.usage.incs), maxIncrementsPerPoll)])
	resp.MoreIncrements = len(n.usage.incs) > maxIncrementsPerPoll
	resp.DataSources = n.dataSourcesLocked()
	if fresh {
		if !n.delta.DataSources(resp.DataSources) {
			resp.DataSources, resp.DataSourcesUnchanged = nil, true
		}
		n.delta.End()
	}
	if len(n.usage.pending) > 0 {
		resp.Pending = maps.Clone(n.usage.pending)
	}
	n.metrics.polls.Inc()
	return resp, nil
}

// keepListedLocked marks the subscribers a fresh poll lists as supervised
// and stops every other one: the hub no longer assigns it here.
func (n *Node) keepListedLocked(refs []api.SubscriberRef, now time.Time) {
	wanted := make(map[int64]bool, len(refs))
	for _, ref := range refs {
		wanted[ref.CrawlerID] = true
		if s, ok := n.table.subs[ref.CrawlerID]; ok {
			s.lastPolled = now
		}
	}
	for id := range n.table.subs {
		if !wanted[id] {
			n.logger.Info("subscriber no longer assigned here", "crawler_id", id)
			n.removeLocked(id)
		}
	}
}

// statusLocked is a subscriber's line of the poll answer.
func (n *Node) statusLocked(s *subscriber, clock int64, now time.Time) api.SubscriberStatus {
	st := api.SubscriberStatus{
		CrawlerID:  s.spec.CrawlerID,
		Version:    s.spec.Version,
		QueryUUID:  s.spec.QueryUUID,
		State:      api.StateRunning,
		DataSource: strings.Join(s.keys, ","),
		Stored:     s.stored,
		RatePerSec: s.rate.perSecond(clock),
		Instance:   s.instance,
		Reserved:   s.reserved,
		LeaseSeq:   s.leaseSeq,
		LeaseTotal: s.leaseTotal,
	}
	if s.spec.Limited && (s.reserved >= s.leaseTotal || clock >= s.leaseUntil) {
		st.State = api.StateQuotaWait
	}
	var errs []string
	failing, unreachable := 0, 0
	st.Live = true
	for _, k := range s.keys {
		ds, ok := n.table.sources[k]
		if !ok {
			st.Live = false
			continue
		}
		if r, ok := ds.ds.(source.Readiness); ok && !r.Ready(s.spec) {
			st.Live = false
		}
		err := subscriberErr(ds.ds, s.spec)
		if err == nil {
			continue
		}
		// A source that cannot reach its service shows why first (DNS,
		// refused, TLS, an HTTP error), however long it has failed: the
		// service may come back, and the subscriber with it.
		if reason := source.Unreachable(err); reason != "" {
			unreachable++
			errs = append(errs, reason+": "+err.Error())
			continue
		}
		errs = append(errs, err.Error())
		if !errors.Is(err, source.ErrDegraded) {
			failing++
		}
	}
	switch {
	case failing > 0 && failing == len(s.keys):
		// Failed only when every data source of the subscriber is
		// failing for good.
		st.State = api.StateFailed
	case unreachable > 0 && st.State == api.StateRunning:
		// Degraded while one of its sources cannot reach its service
		// (one waiting for quota says so first); any other passing
		// error shows without changing its state.
		st.State = api.StateDegraded
	}
	if err := n.writer.errFor(s.spec.CrawlerID); err != nil {
		// Its comments are held and retried, so the error is a passing
		// one too; but it stores nothing meanwhile, and says why.
		errs = append(errs, "store: "+err.Error())
	}
	st.Error = strings.Join(errs, "; ")
	return st
}

// subscriberErr is the error of a data source that concerns spec's
// subscriber: only its own query's, on a source that tells them apart.
func subscriberErr(ds source.DataSource, spec api.SubscriberSpec) error {
	if per, ok := ds.(source.SubscriberErrors); ok {
		return per.ErrFor(spec)
	}
	return ds.Err()
}

func (n *Node) dataSourcesLocked() []api.DataSourceStatus {
	out := make([]api.DataSourceStatus, 0, len(n.table.sources))
	for k, ds := range n.table.sources {
		st := api.DataSourceStatus{Key: k, Subscribers: len(ds.subs)}
		if len(ds.subs) > 0 {
			for _, s := range ds.subs {
				st.Source = s.spec.Source
				break
			}
		}
		if err := ds.ds.Err(); err != nil {
			st.Error = err.Error()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b api.DataSourceStatus) int { return strings.Compare(a.Key, b.Key) })
	return out
}
