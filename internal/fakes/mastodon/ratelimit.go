package mastodon

import (
	"net/http"
	"strconv"
	"time"
)

// Mastodon's limit on a token's REST calls (config/initializers/
// rack_attack.rb, throttle_per_token_api): 300 calls in 5 minutes.
const (
	DefaultRateLimit  = 300
	DefaultRatePeriod = 5 * time.Minute
)

// errTooManyRequests is the error of a 429 (errors.429 of Mastodon's
// locale).
const errTooManyRequests = "Too many requests"

// rateWindow counts the REST calls of one period, as Rack::Attack counts
// them: fixed windows aligned on multiples of the period since the epoch,
// the count starting again at each.
type rateWindow struct {
	n     int64 // the window's number: now / period
	calls int
}

// throttle counts a REST call and answers as Mastodon does: every answer
// carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
// (the end of the window, ISO 8601 with microseconds; RateLimitHeaders);
// a call past the limit gets 429 with Remaining 0 and the JSON error
// (Rack::Attack's throttled_responder). A call with a token counts against
// the token, one without against the client's address (the server has one
// token, and only loopback clients). It reports whether the call may
// proceed. (Mastodon leaves loopback clients unthrottled; this server,
// which only they reach, does not.)
func (s *Server) throttle(w http.ResponseWriter, r *http.Request) bool {
	limit, period := s.opts.RateLimit, s.opts.RatePeriod
	key := "ip"
	if s.authenticated(r) {
		key = "token"
	}
	now := time.Now()
	s.mu.Lock()
	n := now.UnixNano() / int64(period)
	win := s.rate[key]
	if win.n != n {
		win = rateWindow{n: n}
	}
	win.calls++
	s.rate[key] = win
	calls := win.calls
	if calls > limit {
		s.throttled++
	}
	s.mu.Unlock()
	reset := time.Unix(0, (n+1)*int64(period)).UTC()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, limit-calls)))
	h.Set("X-RateLimit-Reset", reset.Format("2006-01-02T15:04:05.000000Z07:00"))
	if calls > limit {
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": errTooManyRequests})
		return false
	}
	return true
}

// Throttled is how many REST calls the server refused with 429 for going
// past its rate limit.
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttled
}
