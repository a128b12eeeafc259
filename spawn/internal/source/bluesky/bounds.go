package bluesky

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// What the service sends is bounded before it can move a position: an
// event's time_us by the spawn's clock, a subscriber's cursor likewise,
// and an event too large to decode is read past (or, when even that is too
// much, the next connection starts after it). Whatever cannot be read
// never pins the cursor, and nothing from the future carries it forward.

// headTimeBytes is how much of an oversized event's start is searched for
// its time_us: the service writes it second, after the DID.
const headTimeBytes = 4 << 10

// timeKey precedes an event's time_us in its JSON.
var timeKey = []byte(`"time_us":`)

// readPos is where the read loop stands on one connection: the position
// of the last event read (bounded), or where the connection started.
type readPos struct {
	pos int64
	// futureSeen says an event from the future was logged on this
	// connection: the others are only counted.
	futureSeen bool
}

// boundEvent keeps ev's time_us when it is at most ClockSlack past now;
// a later one is replaced by the position the connection stands at (the
// event before it, or the connection's start; now for the live tail
// before its first event), so the event moves nothing. It records the
// position reached and reports whether ev came from the future.
func (s *Source) boundEvent(ev *event, at *readPos, now time.Time) bool {
	if ev.timeUS <= now.Add(s.opts.ClockSlack).UnixMicro() {
		at.pos = ev.timeUS
		return false
	}
	claimed := ev.timeUS
	if at.pos <= 0 {
		at.pos = now.UnixMicro()
	}
	ev.timeUS = at.pos
	s.stats.future.Add(1)
	err := fmt.Errorf("%w: time_us %s is %v ahead of this spawn's clock; its post keeps the stream's position %s",
		ErrFutureEvent, usTime(claimed), time.UnixMicro(claimed).Sub(now).Round(time.Second), usTime(at.pos))
	s.errs.Set(source.PartMessages, source.Degraded(err))
	if !at.futureSeen {
		at.futureSeen = true
		s.logger.Warn("bluesky event from the future", "did", ev.did, "time_us", claimed, "position", at.pos)
	}
	return true
}

// boundCursor returns a subscriber's cursor position, or, when it is more
// than ClockSlack past now, now and the notice its subscribers get.
func (s *Source) boundCursor(pos int64, now time.Time) (int64, error) {
	if pos <= now.Add(s.opts.ClockSlack).UnixMicro() {
		return pos, nil
	}
	return now.UnixMicro(), fmt.Errorf("%w: the crawler's cursor %s is %v ahead of this spawn's clock; reading from now",
		ErrFutureCursor, usTime(pos), time.UnixMicro(pos).Sub(now).Round(time.Second))
}

// tooLarge handles an event over MaxMessageBytes: counted (by the
// connection), reported, and logged once. An event the connection read
// past is done with; one that ended the connection has its position
// remembered, so the next connection starts after it rather than meeting
// it again.
func (s *Source) tooLarge(tl *wsconn.TooLargeError, err error) {
	s.errs.Set(source.PartMessages, source.Degraded(err))
	if tl.Skipped {
		s.logger.Warn("bluesky event skipped", "err", err, "bytes", tl.Bytes)
		return
	}
	pos, ok := s.headPosition(tl.Head)
	if !ok {
		s.logger.Warn("bluesky event too large, its position unknown", "err", err)
		return
	}
	pos = min(pos, time.Now().UnixMicro()) // nor past the clock
	s.mu.Lock()
	s.skipPast = max(s.skipPast, pos)
	s.mu.Unlock()
	s.logger.Warn("bluesky event too large: the next connection starts after it", "err", err, "time_us", pos)
}

// headPosition reads the time_us of an event from the start of its
// message, decompressing it first when the connection is compressed.
func (s *Source) headPosition(head []byte) (int64, bool) {
	if s.zstd != nil {
		d, err := zstd.NewReader(bytes.NewReader(head), zstd.WithDecoderDicts(zstdDictionary), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return 0, false
		}
		defer d.Close()
		buf := make([]byte, headTimeBytes)
		n, err := io.ReadFull(d, buf)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) && n == 0 {
			return 0, false
		}
		head = buf[:n]
	}
	head = head[:min(len(head), headTimeBytes)]
	i := bytes.Index(head, timeKey)
	if i < 0 {
		return 0, false
	}
	digits := bytes.TrimLeft(head[i+len(timeKey):], " ")
	end := 0
	for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	if end == len(digits) { // cut inside the number
		return 0, false
	}
	pos, err := strconv.ParseInt(string(digits[:end]), 10, 64)
	if err != nil || pos <= 0 {
		return 0, false
	}
	return pos, true
}
