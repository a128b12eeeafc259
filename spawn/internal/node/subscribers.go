package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// The subscriber table: the subscribers the hub assigns to the node, each a
// crawler's consumer, and the data sources they share. A data source is
// started by its first subscriber and stopped when its last one leaves;
// subscribers whose queries need the same data share one.

// subscriberTable is the node's subscribers and data sources. Guarded by
// Node.mu.
type subscriberTable struct {
	// runCtx is Run's context, the parent of every data source's; nil
	// before Run.
	runCtx  context.Context
	subs    map[int64]*subscriber
	sources map[string]*dataSource
	// instances numbers the subscribers started, so a restarted one is
	// told apart from its previous run.
	instances uint64
	// deferred collects the data sources to tell about subscriber changes
	// at the end of the batch being applied (nil outside a batch).
	deferred map[*dataSource]bool
	// wg joins the data sources' goroutines and those handing released
	// items to the writer (enqueueReleasedLocked).
	wg sync.WaitGroup
	// indexBuilder compiles query indexes (buildIndex; a test may slow
	// it down to watch the node work while one compiles).
	indexBuilder func(prev *match.QueryIndex, byID map[int64]*query.Query) *match.QueryIndex
}

// subscriber is one crawler's consumer on this node.
type subscriber struct {
	spec api.SubscriberSpec
	// filter is the query an item must match (the query of a search
	// source, the keyword filter of a feed crawler); nil takes every item.
	filter     *query.Query
	instance   uint64
	keys       []string
	kind       source.Kind
	lastPolled time.Time
	stored     int64
	reserved   int64
	rejected   int64
	rate       rateMeter
	leaseSeq   uint64
	leaseTotal int64 // cumulative allowance of this instance
	leaseUntil int64 // spawn clock, ms
	seen       seenIDs
	backlog    []heldItem // items waiting for a lease
	// rejectedTotal is the node's bw_spawn_comments_rejected_total.
	rejectedTotal prometheus.Counter
}

// heldItem is an item a limited subscriber holds until a lease covers
// it, with the key of the data source it came from.
type heldItem struct {
	item source.Item
	key  string
}

// dataSource is one shared crawl and the subscribers it feeds.
type dataSource struct {
	key    string
	ds     source.DataSource
	subs   map[int64]*subscriber
	cancel context.CancelFunc
	// index finds the subscribers whose queries an item matches; open
	// are the subscribers without a filter, who see every item. Both are
	// rebuilt from subs on the first emit after a change (stale), so a
	// burst of subscriber changes costs one rebuild, and an item costs one
	// pass over its text however many subscribers share the source. gen
	// counts the changes, so a rebuild made without the node lock knows
	// whether it is still current.
	index *match.QueryIndex
	open  []*subscriber
	stale bool
	gen   uint64
	hits  []match.QueryHit // reused by the emitter
	// enrichFirst says what the subscribers' queries test of an item's
	// language and sentiment, which are then worked out before matching
	// (an enrichFirst, enrich.go).
	enrichFirst atomic.Uint32
	// deferred is the node's set of sources to tell at the end of the
	// batch being applied, nil outside a batch.
	deferred map[*dataSource]bool
}

// Upsert applies a SubscribersRequest.
func (n *Node) Upsert(req api.SubscribersRequest) (api.SubscribersResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.checkHubLocked(req.Epoch, req.Seq, req.ValidUntil); err != nil {
		return api.SubscribersResponse{}, err
	}
	// Tell each touched data source about its subscribers once, at the end.
	deferred := map[*dataSource]bool{}
	for _, ds := range n.table.sources {
		ds.deferred = deferred
	}
	n.table.deferred = deferred
	defer func() {
		n.table.deferred = nil
		for _, ds := range n.table.sources {
			ds.deferred = nil
		}
		for ds := range deferred {
			if n.table.sources[ds.key] == ds {
				ds.tellLocked()
			}
		}
	}()
	resp := api.SubscribersResponse{Results: make([]api.SubscriberResult, 0, len(req.Subscribers))}
	keep := make(map[int64]bool, len(req.Subscribers))
	for _, spec := range req.Subscribers {
		keep[spec.CrawlerID] = true
		res := api.SubscriberResult{CrawlerID: spec.CrawlerID}
		if err := n.upsertLocked(spec); err != nil {
			res.Error = err.Error()
		}
		resp.Results = append(resp.Results, res)
	}
	if req.Exact {
		for id := range n.table.subs {
			if !keep[id] {
				n.removeLocked(id)
			}
		}
	}
	return resp, nil
}

// Remove applies a RemoveRequest.
func (n *Node) Remove(req api.RemoveRequest) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.checkHubLocked(req.Epoch, req.Seq, req.ValidUntil); err != nil {
		return err
	}
	for _, id := range req.CrawlerIDs {
		n.removeLocked(id)
	}
	return nil
}

// upsertLocked creates a subscriber, or updates one in place: a re-sent spec
// changes nothing, and a changed spec with the same data source keys keeps
// its data sources running.
func (n *Node) upsertLocked(spec api.SubscriberSpec) error {
	kind, err := n.cfg.Sources.Lookup(spec.Source)
	if err != nil {
		return err
	}
	// The query is parsed here, once: the data sources get it parsed.
	filter, err := filterOf(spec, n.info(spec.Source))
	if err != nil {
		return err
	}
	keys, err := kind.Keys(source.Sub{Spec: spec, Query: filter})
	if err != nil {
		return err
	}
	slices.Sort(keys)
	now := time.Now()
	if s, ok := n.table.subs[spec.CrawlerID]; ok {
		s.lastPolled = now
		if s.spec.Version == spec.Version && s.spec.QueryUUID == spec.QueryUUID {
			return nil
		}
		if slices.Equal(s.keys, keys) {
			s.spec, s.filter = spec, filter
			for _, k := range keys {
				n.table.sources[k].refreshLocked()
			}
			return nil
		}
		n.removeLocked(spec.CrawlerID)
	}
	n.table.instances++
	s := &subscriber{spec: spec, filter: filter, instance: n.table.instances, keys: keys, kind: kind, lastPolled: now, seen: newSeenIDs(), rejectedTotal: n.metrics.commentsRejected}
	for _, k := range keys {
		ds, ok := n.table.sources[k]
		if !ok {
			if ds, err = n.startSourceLocked(kind, k); err != nil {
				// Undo the keys joined so far: nothing half-applied.
				for _, done := range keys {
					if done == k {
						break
					}
					n.leaveLocked(done, spec.CrawlerID)
				}
				return err
			}
		}
		ds.subs[spec.CrawlerID] = s
		ds.refreshLocked()
	}
	n.table.subs[spec.CrawlerID] = s
	n.logger.Info("subscriber started", "crawler_id", spec.CrawlerID, "query_uuid", spec.QueryUUID, "data_sources", strings.Join(keys, ","))
	return nil
}

// filterOf is the query a subscriber's items must match: the crawler's
// keyword filter for a kind whose query is a list of URLs (nil when it
// has none: every item of its feeds), the query itself for every other.
// Both are in the query language, a list being the OR of its terms.
func filterOf(spec api.SubscriberSpec, info api.SourceInfo) (*query.Query, error) {
	terms := spec.Query
	if info.Query == api.QueryURLs {
		terms = spec.Keywords
		if len(terms) == 0 {
			return nil, nil
		}
	}
	q, err := query.ParseFields(terms, info.QueryFields)
	if err != nil {
		return nil, fmt.Errorf("crawler %d: %w", spec.CrawlerID, err)
	}
	return q, nil
}

// startSourceLocked starts the data source of key and its goroutine, which
// n.wg joins; it stops with its context, cancelled when its last subscriber
// leaves or the node stops.
func (n *Node) startSourceLocked(kind source.Kind, key string) (*dataSource, error) {
	impl, err := kind.New(key)
	if err != nil {
		return nil, err
	}
	if n.table.runCtx == nil {
		return nil, errors.New("node: not running")
	}
	if namer, ok := impl.(source.AuthorNamer); ok && namer.NameAuthors(n.names.learn) {
		n.names.namers.Add(1)
	}
	if r, ok := impl.(source.Retracter); ok {
		r.Retractions(n.retracts.learn)
	}
	ctx, cancel := context.WithCancel(n.table.runCtx)
	ds := &dataSource{key: key, ds: impl, subs: map[int64]*subscriber{}, cancel: cancel, deferred: n.table.deferred}
	n.table.sources[key] = ds
	n.table.wg.Add(1)
	go func() {
		defer n.table.wg.Done()
		impl.Run(ctx, n.emitter(ds))
	}()
	n.metrics.dataSourcesStarted.Inc()
	n.logger.Info("data source started", "key", key)
	return ds, nil
}

// refreshLocked runs after the source's subscriber set or a subscriber's
// spec changed: it tells the source (tellLocked), which also marks the
// keyword index for a rebuild on the next emit. Inside a batch (d.deferred
// set) it only marks the source, and the batch's end tells it once: an
// upsert of thousands of subscribers on one source then costs one pass, not
// one per subscriber.
func (d *dataSource) refreshLocked() {
	if d.deferred != nil {
		d.deferred[d] = true
		return
	}
	d.tellLocked()
}

// tellLocked hands the source its subscribers, their queries parsed, and
// marks the keyword index stale.
func (d *dataSource) tellLocked() {
	subs := make([]source.Sub, 0, len(d.subs))
	var first enrichFirst
	for _, s := range d.subs {
		subs = append(subs, source.Sub{Spec: s.spec, Query: s.filter})
		if s.filter != nil {
			first |= testsEnrichment(s.filter)
		}
	}
	d.enrichFirst.Store(uint32(first))
	d.stale = true
	d.gen++
	d.ds.SetSubscribers(subs)
}

// leaveLocked takes a subscriber off a data source, stopping the source when
// it was the last one.
func (n *Node) leaveLocked(key string, crawlerID int64) {
	ds, ok := n.table.sources[key]
	if !ok {
		return
	}
	delete(ds.subs, crawlerID)
	if len(ds.subs) == 0 {
		ds.cancel()
		delete(n.table.sources, key)
		n.logger.Info("data source stopped", "key", key)
		return
	}
	ds.refreshLocked()
}

// removeLocked stops a subscriber, and every data source it was the last
// one on.
func (n *Node) removeLocked(crawlerID int64) {
	s, ok := n.table.subs[crawlerID]
	if !ok {
		return
	}
	for _, k := range s.keys {
		n.leaveLocked(k, crawlerID)
	}
	delete(n.table.subs, crawlerID)
	n.logger.Info("subscriber stopped", "crawler_id", crawlerID)
}

// dropAllLocked stops every subscriber (detach, shutdown).
func (n *Node) dropAllLocked() {
	for id := range n.table.subs {
		n.removeLocked(id)
	}
}
