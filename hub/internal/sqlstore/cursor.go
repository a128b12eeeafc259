package sqlstore

import (
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// MaxCursorAhead is how far past the hub's clock a crawler's cursor may lie:
// its position (a Jetstream time_us) and its publication time. It allows for
// the clocks of hub, spawns and service differing; a later cursor comes from
// a broken or hostile clock, and saved it would make every item to come look
// delivered already.
const MaxCursorAhead = time.Minute

// FutureCursor reports whether a cursor position (a time_us) lies more than
// MaxCursorAhead past now.
func FutureCursor(pos int64, now time.Time) bool {
	return pos > now.Add(MaxCursorAhead).UnixMicro()
}

// NextCursorPos is the cursor position after an increment reaching pos is
// counted: it moves forward, never back, and never into the future; a
// saved position in the future (written before cursors were bounded) gives
// way to the first real one.
func NextCursorPos(cur, pos int64, now time.Time) int64 {
	switch {
	case pos <= 0 || FutureCursor(pos, now):
		return cur
	case pos > cur || FutureCursor(cur, now):
		return pos
	}
	return cur
}

// boundCursor drops the cursor of an increment that lies in the future,
// keeping its count: the cursor of its crawler does not move.
func (s *Store) boundCursor(inc *api.Increment, now time.Time) {
	if FutureCursor(inc.Position, now) {
		s.logger.Warn("usage increment cursor position in the future ignored", "node_id", inc.NodeID, "seq", inc.Seq,
			"crawler_id", inc.CrawlerID, "position", inc.Position)
		inc.Position = 0
	}
	if inc.Newest.After(now.Add(MaxCursorAhead)) {
		s.logger.Warn("usage increment cursor time in the future ignored", "node_id", inc.NodeID, "seq", inc.Seq,
			"crawler_id", inc.CrawlerID, "newest", inc.Newest)
		inc.Newest = time.Time{}
	}
}
