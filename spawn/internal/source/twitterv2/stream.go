package twitterv2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
)

// streamQuery asks for what an item needs: the fields of the post (its
// entities, whose t.co links are expanded; note_tweet, the whole text of a
// long post; its public_metrics for the engagement that weighs query
// suggestions), the posts it references (a repost's original, whose whole
// text the repost's own text cuts to "RT @user: …", and a quoted post),
// with the same fields, and the user names of its author and of theirs.
// Recent search asks for the same, so a gap's posts are items as the
// stream's are.
var (
	streamParams = url.Values{
		"tweet.fields": {"author_id,conversation_id,created_at,entities,lang,note_tweet,public_metrics,referenced_tweets"},
		"expansions":   {"author_id,referenced_tweets.id,referenced_tweets.id.author_id"},
		"user.fields":  {"username"},
	}
	streamQuery = streamParams.Encode()
)

// maxErrorBodyBytes is how much of an error answer is read.
const maxErrorBodyBytes = 4 << 10

// newBackoff is the reconnect policy of X's guide.
func newBackoff(o Options) *linestream.Backoff {
	return linestream.NewBackoff(linestream.Policies{
		NetworkStep: o.NetworkBackoffStep, NetworkMax: o.NetworkBackoffMax,
		HTTPMin: o.HTTPBackoffMin, HTTPMax: o.HTTPBackoffMax,
		RateLimitMin: o.RateLimitBackoffMin, RateLimitMax: o.RateLimitBackoffMax,
	})
}

// runStream keeps the stream open until ctx ends, reconnecting with the
// back-off the last failure asks for: the short schedule for the first
// TooManyConnections in a row, X's guide otherwise.
func (s *Source) runStream(ctx context.Context, emit source.Emit) {
	fails := newBackoff(s.opts)
	short := s.opts.HandoverRetries
	connected := func() {
		fails.Reset()
		short = s.opts.HandoverRetries
	}
	for {
		class, err := s.session(ctx, emit, connected)
		if ctx.Err() != nil {
			return
		}
		s.gaps.broke(s.heldTexts())
		if errors.Is(err, ErrTooManyConnections) && short > 0 && s.streamRemaining.Load() != 0 &&
			(s.streamRemaining.Load() < 0 || s.streamRemaining.Load() > int64(s.opts.StreamRequestReserve)) {
			// Expected right after a handover: the connection that went
			// away still counts for a few seconds.
			short--
			s.stats.shortRetries.Add(1)
			s.errs.Set(streamPart, source.Degraded(err))
			s.logger.Info("twitter stream held elsewhere, as after a handover: retrying soon", "retry_in", s.opts.HandoverRetryInterval, "short_retries_left", short)
			if !s.sleep(ctx, s.opts.HandoverRetryInterval) {
				return
			}
			continue
		}
		wait := fails.Next(class)
		s.setErr(streamPart, err)
		s.logger.Warn("twitter stream failed", "err", err, "retry_in", wait)
		if !s.sleep(ctx, wait) {
			return
		}
	}
}

// observeStreamLimit keeps x-rate-limit-remaining of a stream answer.
func (s *Source) observeStreamLimit(h http.Header) {
	if n, err := strconv.ParseInt(h.Get("x-rate-limit-remaining"), 10, 64); err == nil {
		s.streamRemaining.Store(n)
	}
}

// session runs one connection until it fails. answered is called when X
// sends its first bytes (a keep-alive will do): a stream that X accepts
// and ends at once is a failure like any other, and its waits keep
// growing.
func (s *Source) session(ctx context.Context, emit source.Emit, answered func()) (linestream.Class, error) {
	o := s.opts
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// notice is the last in-stream error X sent (an operational
	// disconnect); X ends the stream after it, and the failure names it.
	notice := ""
	classify := func(err error) (linestream.Class, error) {
		if ctx.Err() != nil {
			return linestream.ClassNone, ctx.Err()
		}
		s.stats.networkErrors.Add(1)
		switch cause := context.Cause(sctx); {
		case notice != "" && errors.Is(err, io.EOF):
			return linestream.ClassNetwork, fmt.Errorf("%w: X ended the stream: %s", ErrDisconnected, notice)
		case errors.Is(cause, linestream.ErrSilent):
			s.stats.stalls.Add(1)
			return linestream.ClassNetwork, fmt.Errorf("%w: nothing received for %v", ErrStalled, o.StallTimeout)
		case errors.Is(cause, linestream.ErrNoAnswer):
			return linestream.ClassNetwork, fmt.Errorf("%w: no answer within %v", ErrDisconnected, o.ConnectTimeout)
		case errors.Is(err, errTruncated) && errors.Is(err, io.EOF):
			return linestream.ClassNetwork, fmt.Errorf("%w: X closed the stream inside a message", ErrDisconnected)
		case errors.Is(err, io.EOF):
			return linestream.ClassNetwork, fmt.Errorf("%w: X closed the stream", ErrDisconnected)
		}
		return linestream.ClassNetwork, fmt.Errorf("%w: %w", ErrDisconnected, err)
	}

	req, err := http.NewRequestWithContext(sctx, http.MethodGet, s.streamURL+"?"+streamQuery, nil)
	if err != nil {
		return linestream.ClassHTTP, fmt.Errorf("twitter: unable to build the stream request: %w", err)
	}
	s.authorize(req)
	s.stats.attempts.Add(1)
	resp, err := linestream.Open(s.stream, req, o.ConnectTimeout, cancel)
	if err != nil {
		return classify(err)
	}
	defer resp.Body.Close()
	s.observeStreamLimit(resp.Header)
	if resp.StatusCode != http.StatusOK {
		return s.refused(resp)
	}
	s.stats.connects.Add(1)
	s.setErr(streamPart, nil)
	s.logger.Info("twitter stream connected")
	// The stream is live: the gaps of the rules X holds can be filled.
	s.gaps.connected(time.Now())
	source.Signal(s.gapWake)

	stall := linestream.Watch(o.StallTimeout, cancel)
	defer stall.Stop()
	lines := newLineReader(stall.Reader(resp.Body), o.MaxLineBytes)
	for first := true; ; first = false {
		line, err := lines.Next()
		if err == nil {
			s.gaps.alive(time.Now())
		}
		if first && (err == nil || errors.Is(err, ErrOversized)) {
			answered()
		}
		switch {
		case errors.Is(err, ErrOversized):
			s.stats.oversized.Add(1)
			s.setErr(messagesPart, err)
			s.logger.Warn("twitter stream message skipped", "err", err)
			continue
		case err != nil:
			return classify(err)
		case len(line) == 0:
			s.stats.keepAlives.Add(1)
			continue
		}
		msg, err := decodeLine(line, time.Now())
		if err != nil {
			s.stats.malformed.Add(1)
			s.setErr(messagesPart, err)
			s.logger.Warn("twitter stream message skipped", "err", err, "bytes", len(line))
			continue
		}
		if !msg.post {
			s.stats.notices.Add(1)
			notice = msg.notice
			s.setErr(streamPart, fmt.Errorf("%w: %s", ErrDisconnected, msg.notice))
			s.logger.Warn("twitter stream notice", "notice", msg.notice)
			continue
		}
		s.stats.read.Add(1)
		s.setErr(messagesPart, nil) // a good post ends an earlier bad message's report
		tags := s.countRead(msg.tags)
		s.gaps.saw(s.textsOf(msg.tags), itemID(msg.item))
		if !s.markSeen(msg.item.ID) {
			s.stats.duplicates.Add(1)
			continue
		}
		// Time spent handing over (the store pushing back) is not
		// silence from X.
		stall.Pause()
		if err := emit(ctx, []source.Item{msg.item}); err != nil {
			if ctx.Err() != nil {
				return linestream.ClassNone, err
			}
			return linestream.ClassNetwork, fmt.Errorf("twitter: unable to hand over a post: %w", err)
		}
		stall.Resume()
		s.stats.emitted.Add(1)
		s.countEmitted(tags)
	}
}

func (s *Source) authorize(req *http.Request) {
	req.Header.Set("Authorization", "Bearer "+s.opts.BearerToken)
	req.Header.Set("User-Agent", s.opts.UserAgent)
}

// problemDoc is X's error document.
type problemDoc struct {
	Title           string `json:"title"`
	Detail          string `json:"detail"`
	Type            string `json:"type"`
	ConnectionIssue string `json:"connection_issue"`
	Errors          []struct {
		Message string `json:"message"`
		Title   string `json:"title"`
		Detail  string `json:"detail"`
	} `json:"errors"`
}

func readProblem(resp *http.Response) problemDoc {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	var p problemDoc
	if json.Unmarshal(body, &p) != nil && len(body) > 0 {
		p.Detail = clip(string(body))
	}
	if p.Detail == "" && len(p.Errors) > 0 {
		p.Detail = firstOf(p.Errors[0].Detail, p.Errors[0].Message, p.Errors[0].Title)
	}
	return p
}

// refused turns a stream answer other than 200 into its failure class.
func (s *Source) refused(resp *http.Response) (linestream.Class, error) {
	p := readProblem(resp)
	status := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case p.ConnectionIssue == "TooManyConnections":
		s.stats.tooManyConnections.Add(1)
		s.stats.rateLimited.Add(1)
		return linestream.ClassRateLimit, fmt.Errorf("%w: X answered %s: %s", ErrTooManyConnections, status, clip(p.Detail))
	case resp.StatusCode == http.StatusTooManyRequests:
		s.stats.rateLimited.Add(1)
		return linestream.ClassRateLimit, fmt.Errorf("%w: X answered %s", ErrRateLimited, status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		s.stats.httpErrors.Add(1)
		return linestream.ClassHTTP, fmt.Errorf("%w: X answered %s; check --twitter-bearer-token", ErrUnauthorized, status)
	}
	s.stats.httpErrors.Add(1)
	if d := firstOf(p.Detail, p.Title); d != "" {
		return linestream.ClassHTTP, fmt.Errorf("%w: X answered %s: %s", ErrStatus, status, clip(d))
	}
	return linestream.ClassHTTP, fmt.Errorf("%w: X answered %s", ErrStatus, status)
}
