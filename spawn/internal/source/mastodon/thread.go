package mastodon

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

var _ source.SubscriberErrors = (*instance)(nil)

// parentOf is the status st replies to, as the source links it: from the
// statuses it has seen on the instance, else from the reply's context on
// the instance (its ancestors, the thread's first status first, the parent
// last), whose statuses it then remembers too. nil when st is not a reply,
// or its parent stays unknown: the instance does not know it or hides it,
// the look-up failed, or the look-ups a second are spent.
func (s *session) parentOf(ctx context.Context, st *status) *link {
	if st.InReplyToID == nil || *st.InReplyToID == "" {
		return nil
	}
	pid := *st.InReplyToID
	if !localID(pid) {
		s.stats.unresolved.Add(1)
		return nil
	}
	if l, ok := s.recent.get(pid); ok {
		return &l
	}
	if !s.resolve.take(time.Now()) {
		s.stats.unresolved.Add(1)
		return nil
	}
	var doc struct {
		Ancestors []struct {
			ID          string  `json:"id"`
			URI         string  `json:"uri"`
			InReplyToID *string `json:"in_reply_to_id"`
		} `json:"ancestors"`
	}
	s.busy.Store(true)
	_, err := s.api(ctx, http.MethodGet, "/api/v1/statuses/"+url.PathEscape(st.ID)+"/context", maxContextBytes, &doc)
	s.seen()
	s.busy.Store(false)
	if err != nil {
		s.stats.unresolved.Add(1)
		if !notFound(err) && ctx.Err() == nil {
			s.logger.Warn("mastodon reply context look-up failed", "status", st.ID, "err", err)
		}
		return nil
	}
	s.stats.resolved.Add(1)
	// The first ancestor is the thread's first status only when it replies
	// to nothing: the instance leaves out what it does not know or may not
	// show, and then the thread's first status is unknown.
	var root string
	orphan := len(doc.Ancestors) > 0 && doc.Ancestors[0].InReplyToID != nil && *doc.Ancestors[0].InReplyToID != ""
	var parent *link
	for n, a := range doc.Ancestors {
		uri := strings.TrimSpace(a.URI)
		if !localID(a.ID) || uri == "" {
			orphan = true // the chain is broken from here on
			continue
		}
		l := link{uri: source.ItemID(uri), thread: root, orphan: orphan}
		if n == 0 && !orphan {
			root = l.uri
		}
		if _, known := s.recent.get(a.ID); !known {
			s.recent.put(a.ID, l)
		}
		if a.ID == pid {
			parent = &l
		}
	}
	if parent == nil {
		s.stats.unresolved.Add(1)
	}
	return parent
}

// bucket is a token bucket: rate tokens a second, at most burst saved.
// Its owner is one goroutine.
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, burst int) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// take spends a token when there is one.
func (b *bucket) take(now time.Time) bool {
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
