package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// ErrNoNode is returned when a request needs a spawn and none is live.
var ErrNoNode = errors.New("cluster: no spawn node is live")

// CrawlerView joins a crawler's SQL row with its live state.
func (h *Hub) CrawlerView(row sqlstore.Crawler) api.Crawler {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.crawlerViewLocked(row)
}

func (h *Hub) crawlerViewLocked(row sqlstore.Crawler) api.Crawler {
	v := api.Crawler{
		ID: row.ID, UserID: row.UserID, Name: row.Name, Source: row.Source,
		Query: orEmpty(row.Query), Keywords: orEmpty(row.Keywords),
		CommentLimit: row.CommentLimit, Enabled: row.Enabled, Usage: row.Usage,
		QueryUUID: row.QueryUUID, Version: row.Version, UpdatedAt: row.UpdatedAt,
		State: api.StatePending, QueryCanonical: row.CanonicalQuery(),
	}
	if d := h.retentionLocked(row); d > 0 {
		v.Retention, v.RetentionFrom = api.FormatRetention(d), "crawler"
		if row.RetentionSeconds == 0 {
			v.RetentionFrom = "user"
		}
	}
	c, ok := h.crawlers[row.ID]
	pos := row.CursorPos
	if ok && c.row.Version == row.Version {
		v.State, v.Error, v.Node, v.RatePerSec = c.state, c.err, c.nodeID(), c.rate
		v.Usage = max(v.Usage, c.row.Usage)
		pos = c.row.CursorPos
	}
	if note := futureCursorNote(pos, time.Now()); note != "" {
		v.Error = strings.Join(slices.DeleteFunc([]string{v.Error, note}, func(s string) bool { return s == "" }), "; ")
	}
	if state, byUser, resting := h.restingStateLocked(&row); resting {
		v.State, v.Node = state, ""
		if !byUser {
			v.Error = ""
		}
	}
	return v
}

// futureCursorNote is what a crawler whose saved cursor position lies in
// the future says (it was saved before cursors were bounded): it reads from
// now until a real position replaces it. "" for any other cursor.
func futureCursorNote(pos int64, now time.Time) string {
	if !sqlstore.FutureCursor(pos, now) {
		return ""
	}
	return fmt.Sprintf("saved cursor position %s is in the future: reading from now",
		time.UnixMicro(pos).UTC().Format(time.RFC3339Nano))
}

// restingStateLocked decides from a crawler's row itself the states that
// need no node, so a change shows at once, before the soft reload it
// triggers; byUser says the crawler rests only because its user reached
// the user's limit.
func (h *Hub) restingStateLocked(row *sqlstore.Crawler) (state string, byUser, resting bool) {
	switch {
	case !row.Enabled:
		return api.StateDisabled, false, true
	case row.LimitReached:
		return api.StateLimitReached, false, true
	}
	if u, ok := h.users[row.UserID]; ok && u.row.CommentLimit > 0 && u.row.Usage >= u.row.CommentLimit {
		return api.StateLimitReached, true, true
	}
	return "", false, false
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// UserUsage is the in-memory usage of a user, which can run ahead of a row
// read from SQL a moment ago.
func (h *Hub) UserUsage(id int64, fromSQL int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if u, ok := h.users[id]; ok {
		return max(u.row.Usage, fromSQL)
	}
	return fromSQL
}

// Nodes lists the live nodes sorted by id.
func (h *Hub) Nodes() []api.Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]api.Node, 0, len(h.nodes))
	for _, id := range h.sortedNodeIDsLocked() {
		out = append(out, h.nodeViewLocked(h.nodes[id]))
	}
	return out
}

// Node states in the node list.
const (
	nodeOK      = "ok"
	nodeFailing = "failing"
)

// nodeViewLocked is a node as the node list shows it: "draining" while it
// drains (its subscribers count those it still runs for the drain),
// "failing" while contacts with it fail, else "ok".
func (h *Hub) nodeViewLocked(n *node) api.Node {
	state := nodeOK
	switch {
	case n.drain.active:
		state = api.NodeDraining
	case n.failures > 0:
		state = nodeFailing
	}
	return api.Node{
		ID: n.id, URL: n.url, State: state, Subscribers: len(n.want) + len(n.drain.keep),
		RegisteredAt: n.registeredAt.UTC(), LastPoll: n.lastPoll.UTC(), Failures: n.failures,
		Sources: slices.Clone(n.sources), Store: n.store, DataSources: slices.Clone(n.dataSources),
	}
}

// Health is the hub's GET /v1/health document.
func (h *Hub) Health() api.HubHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	hh := api.HubHealth{Epoch: h.epoch, Role: api.RoleLeader, Leader: h.cfg.URL, Routing: h.cfg.RoutingName, Nodes: []api.HealthNode{},
		Crawlers: api.HealthCrawlers{ByState: map[string]int{}}}
	for _, id := range h.sortedNodeIDsLocked() {
		n := h.nodes[id]
		hh.Nodes = append(hh.Nodes, api.HealthNode{ID: n.id, URL: n.url, Subscribers: len(n.want)})
	}
	for _, c := range h.crawlers {
		hh.Crawlers.Total++
		// The state crawlerViewLocked shows, without building the view:
		// health is read on every scrape, at a million crawlers too.
		state := c.state
		if rest, _, resting := h.restingStateLocked(&c.row); resting {
			state = rest
		}
		hh.Crawlers.ByState[state]++
		if c.node != nil {
			hh.Crawlers.Assigned++
		}
	}
	return hh
}

// RecentComments asks the spawn running a crawler (or, when it runs nowhere,
// any live spawn: they share the store) for its latest comments.
func (h *Hub) RecentComments(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error) {
	h.mu.Lock()
	var target *node
	if c, ok := h.crawlers[crawlerID]; ok && c.node != nil {
		target = h.nodes[c.node.id]
	}
	if target == nil {
		for _, id := range h.sortedNodeIDsLocked() {
			target = h.nodes[id]
			break
		}
	}
	h.mu.Unlock()
	if target == nil {
		return nil, ErrNoNode
	}
	out, err := h.nodeAPI(target).RecentComments(ctx, crawlerID, n)
	if err != nil {
		return nil, fmt.Errorf("cluster: comments: %w", err)
	}
	return out, nil
}
