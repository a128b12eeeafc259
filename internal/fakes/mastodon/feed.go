package mastodon

import (
	"encoding/json"
	"strings"
)

// Names of the streams the server serves, as clients subscribe them.
const (
	streamPublic       = "public"
	streamPublicLocal  = "public:local"
	streamPublicRemote = "public:remote"
	streamHashtag      = "hashtag"
	streamHashtagLocal = "hashtag:local"
	streamUser         = "user"
)

// permissionViewFeeds is the role permission bit that reads disabled
// feeds (Role entity: "View live and topic feeds").
const permissionViewFeeds = 0x100000

// fanOutLocked delivers an update or status.update of rec as Mastodon's
// FanOutOnWriteService and streaming server do:
//
//   - Only a public status that is not a reblog is broadcast: to the
//     hashtag streams of each of its tags, and to the public streams unless
//     it replies to another account; the streaming server then drops it
//     from a public or hashtag stream whose feed access is disabled for
//     local (or remote) statuses.
//   - The token account's home timeline (stream user) gets its own
//     statuses, those of the accounts it follows (reblogs included, replies
//     only to itself or to accounts it follows) and, once per followed tag
//     of the status, a broadcast status of another account with a tag it
//     follows: one FeedInsertWorker job per tag follow, each pushing to
//     home.
func (s *Server) fanOutLocked(event string, rec *record) {
	frame := func(stream []string) []byte {
		b, _ := json.Marshal(eventFrame{Stream: stream, Event: event, Payload: string(rec.entity)})
		return b
	}
	if rec.visibility == VisibilityPublic && !rec.reblog {
		hashtagOpen := s.feedOpenLocked(s.opts.TimelinesAccess.HashtagFeeds, rec.local)
		for _, t := range rec.tags {
			s.publishLocked(hashtagKey(t), hashtagOpen, frame)
			if rec.local {
				s.publishLocked(hashtagLocalKey(t), hashtagOpen, frame)
			}
		}
		if !rec.replyToOther {
			liveOpen := s.feedOpenLocked(s.opts.TimelinesAccess.LiveFeeds, rec.local)
			s.publishLocked(streamPublic, liveOpen, frame)
			if rec.local {
				s.publishLocked(streamPublicLocal, liveOpen, frame)
			} else {
				s.publishLocked(streamPublicRemote, liveOpen, frame)
			}
		}
		if rec.accountID != selfAccountID {
			for _, t := range rec.tags {
				if _, ok := s.tagFollows[t]; ok {
					s.pushHomeLocked(rec, frame)
				}
			}
		}
	}
	switch {
	case rec.accountID == selfAccountID:
		s.pushHomeLocked(rec, frame)
	case s.following[rec.acct] && rec.visibility != VisibilityDirect && s.homeReplyLocked(rec):
		s.pushHomeLocked(rec, frame)
	}
}

// homeReplyLocked reports whether a status of a followed account belongs
// in the home timeline: not a reply, or a reply to itself, to the token's
// account or to an account it follows (FeedManager#filter_from_home).
func (s *Server) homeReplyLocked(rec *record) bool {
	if rec.inReplyToID == "" || !rec.replyToOther {
		return true
	}
	p, ok := s.statuses[rec.inReplyToID]
	return ok && (p.accountID == selfAccountID || s.following[p.acct])
}

// pushHomeLocked delivers a frame to the user streams and remembers that
// the status is in the home timeline.
func (s *Server) pushHomeLocked(rec *record, frame func([]string) []byte) {
	rec.home = true
	s.publishLocked(streamUser, true, frame)
}

// removeLocked delivers the delete event of rec as RemoveStatusService
// does: to the public and hashtag streams when it was public, whatever it
// replied to (the streaming server passes deletes through its feed
// filter), and to the home timeline when it was there.
func (s *Server) removeLocked(rec *record) {
	frame := func(stream []string) []byte {
		b, _ := json.Marshal(eventFrame{Stream: stream, Event: "delete", Payload: rec.id})
		return b
	}
	if rec.home {
		s.publishLocked(streamUser, true, frame)
	}
	if rec.visibility != VisibilityPublic {
		return
	}
	for _, t := range rec.tags {
		s.publishLocked(hashtagKey(t), true, frame)
		if rec.local {
			s.publishLocked(hashtagLocalKey(t), true, frame)
		}
	}
	s.publishLocked(streamPublic, true, frame)
	if rec.local {
		s.publishLocked(streamPublicLocal, true, frame)
	} else {
		s.publishLocked(streamPublicRemote, true, frame)
	}
}

// publishLocked sends a frame to every connection subscribed to key, named
// as each subscribed it, unless the feed is closed to it.
func (s *Server) publishLocked(key string, open bool, frame func([]string) []byte) {
	for c := range s.conns {
		name, ok := c.subs[key]
		if !ok || (!open && !s.opts.ViewFeeds) {
			continue
		}
		s.sendLocked(c, frame(name))
	}
}

// feedOpenLocked reports whether a feed carries a local (or remote)
// status to a token: the streaming server filters only what is disabled,
// since every streaming client is authenticated.
func (s *Server) feedOpenLocked(fa FeedAccess, local bool) bool {
	if local {
		return fa.Local != AccessDisabled
	}
	return fa.Remote != AccessDisabled
}

// SendEvent sends one event frame in its real shape to the connections
// subscribed to stream ("public", "user", "hashtag:golang"): the way to
// deliver events the fan-out does not make, such as a delete of a status
// the test never posted.
func (s *Server) SendEvent(stream, event, payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(strings.ToLower(stream), true, func(name []string) []byte {
		b, _ := json.Marshal(eventFrame{Stream: name, Event: event, Payload: payload})
		return b
	})
}

func hashtagKey(tag string) string      { return streamHashtag + ":" + tag }
func hashtagLocalKey(tag string) string { return streamHashtagLocal + ":" + tag }

// eventFrame is one event as the streaming server sends it.
type eventFrame struct {
	Stream  []string `json:"stream"`
	Event   string   `json:"event"`
	Payload string   `json:"payload,omitempty"`
}
