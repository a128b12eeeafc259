package cluster

import (
	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// crawler is a crawler's configuration and live state. A hub holds a
// million of them: keep it small.
type crawler struct {
	row     sqlstore.Crawler
	limited bool // the subscriber counts against leases (respecLocked)
	// node is where it is routed, the node whose wanted set holds it
	// (wantLocked); nil when it is inactive or no node offers its source.
	node *node
	// sentTo is the node a send of it last succeeded to, whose sent set
	// holds it (sentToLocked); sentVersion is the version sent.
	sentTo      *node
	sentVersion int64
	needSend    bool
	// leaving is the draining node that still runs the crawler until
	// its new node does (drain.go); nil otherwise.
	leaving *node
	state   string
	err     string
	rate    float64
	leases  leaseBook
	// quuid is row.QueryUUID parsed (queryUUID) while quuidState is
	// quuidParsed; upsertCrawlerLocked forgets it when the row changes.
	quuid      uuid.UUID
	quuidState int8
	// heard is the status heardFrom (a node registration) last reported,
	// taken again for every answer that leaves it out as unchanged;
	// heardIn is that answer's number.
	heard     heardStatus
	heardFrom *node
	heardIn   uint64
}

// heardStatus is what the hub keeps of a subscriber's last status.
type heardStatus struct {
	state    string
	err      string
	rate     float64
	version  int64
	instance uint64
	reserved int64
	live     bool
}

// States of crawler.quuid.
const (
	quuidUnknown int8 = iota
	quuidParsed
	quuidInvalid
)

// queryUUID is the crawler's query uuid, parsed once per row.
func (c *crawler) queryUUID() (uuid.UUID, error) {
	switch c.quuidState {
	case quuidParsed:
		return c.quuid, nil
	case quuidUnknown:
		q, err := uuid.Parse(c.row.QueryUUID)
		if err == nil {
			c.quuid, c.quuidState = q, quuidParsed
			return q, nil
		}
		c.quuidState = quuidInvalid
	}
	_, err := uuid.Parse(c.row.QueryUUID)
	return uuid.UUID{}, err
}

// nodeID is the id of the node the crawler is routed to, "" when none.
func (c *crawler) nodeID() string {
	if c.node == nil {
		return ""
	}
	return c.node.id
}

// sentID is the id of the node a send of the crawler last succeeded to,
// "" when none.
func (c *crawler) sentID() string {
	if c.sentTo == nil {
		return ""
	}
	return c.sentTo.id
}

// sentToLocked records that a send of the crawler to n (nil: nowhere)
// succeeded, keeping the node's index of what was sent there.
func (h *Hub) sentToLocked(c *crawler, n *node) {
	if c.sentTo != nil {
		delete(c.sentTo.sent, c.row.ID)
	}
	c.sentTo = n
	if n != nil {
		n.sent[c.row.ID] = c
	}
}

type user struct {
	row sqlstore.User
}
