package node

import (
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Health is the spawn's GET /v1/health document. The open one (full false)
// holds the node's state and counts only: its lists name every crawler and
// crawl target the node serves (target URLs often carry keys), and on a busy
// node run to megabytes that anyone could have it build again and again. A
// caller that showed the node token (full) gets them, with the hub it
// follows and its epoch.
func (n *Node) Health(full bool) api.SpawnHealth {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := api.SpawnHealth{NodeID: n.id, State: n.attach.state, Store: n.writer.health(),
		SubscriberCount: len(n.table.subs), DataSourceCount: len(n.table.sources)}
	if n.drain.active {
		h.State = api.NodeDraining
	}
	if !full {
		return h
	}
	h.Epoch, h.Hub = n.attach.epoch, n.cfg.HubURL
	h.Subscribers, h.DataSources = make([]api.HealthSubscriber, 0, len(n.table.subs)), make([]api.HealthDataSource, 0, len(n.table.sources))
	clock, now := n.clock(), time.Now()
	ids := make([]int64, 0, len(n.table.subs))
	for id := range n.table.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		st := n.statusLocked(n.table.subs[id], clock, now)
		h.Subscribers = append(h.Subscribers, api.HealthSubscriber{CrawlerID: id, QueryUUID: st.QueryUUID, State: st.State,
			DataSource: st.DataSource, Stored: st.Stored, Error: st.Error})
	}
	for _, ds := range n.dataSourcesLocked() {
		h.DataSources = append(h.DataSources, api.HealthDataSource{Key: ds.Key, Subscribers: ds.Subscribers, Error: ds.Error})
	}
	return h
}
