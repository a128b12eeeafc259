package file

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Searcher = (*Store)(nil)

// searchCheckEvery is how many lines a search reads between looks at its
// context and its time budget.
const searchCheckEvery = 256

// searchCursor is where a search goes on: a day file, and the byte offset
// the unread part of it ends at (the search reads each file backwards,
// newest line first); -1 is the whole file.
type searchCursor struct {
	Day string `json:"d"`
	End int64  `json:"e"`
}

func (c searchCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeSearchCursor(s string) (searchCursor, error) {
	var c searchCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.End < -1 {
		return searchCursor{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	if _, err := time.Parse(dayLayout, c.Day); err != nil {
		return searchCursor{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	return c, nil
}

// errSearchStop ends a search's scan of a file: its page is full, or it
// reached a bound.
var errSearchStop = errors.New("file: search stops")

// Search reads a crawler's day files newest day first, each from its last
// line back to its first (the order the comments were written in, newest
// first), and keeps the comments s matches. The cursor is a day and the
// offset the unread part of its file ends at, so the next page starts where
// this one stopped and comments written meanwhile are not read twice.
func (s *Store) Search(ctx context.Context, crawlerID int64, q store.Search) (store.SearchPage, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return store.SearchPage{}, ErrClosed
	}
	at := searchCursor{End: -1}
	if q.Cursor != "" {
		var err error
		if at, err = decodeSearchCursor(q.Cursor); err != nil {
			return store.SearchPage{}, err
		}
	}
	limit := max(q.Limit, 1)
	maxScan, deadline := q.Bounds(time.Now())
	dir := s.crawlerDir(crawlerID)
	names, err := dayFiles(dir)
	if err != nil {
		return store.SearchPage{}, err
	}
	slices.Reverse(names)
	page := store.SearchPage{Comments: make([]api.Comment, 0, min(limit, 1024))}
	searched := false
	for _, name := range names {
		day := strings.TrimSuffix(name, fileExt)
		if at.Day != "" && day > at.Day || !dayInRange(day, q.Range) {
			continue
		}
		if searched {
			// Between files too: a crawler of many small day files is
			// bound by the budget and the request as one large file is.
			if err := ctx.Err(); err != nil {
				return store.SearchPage{}, err
			}
			if time.Now().After(deadline) {
				page.Next, page.Frontier = searchCursor{Day: day, End: -1}.encode(), dayEnd(day)
				return page, nil
			}
		}
		searched = true
		end := int64(-1)
		if day == at.Day {
			end = at.End
		}
		next, stopped, err := s.searchFile(ctx, filepath.Join(dir, name), end, q, limit, maxScan, deadline, &page)
		if err != nil {
			return store.SearchPage{}, err
		}
		if stopped {
			if next > 0 {
				page.Next, page.Frontier = searchCursor{Day: day, End: next}.encode(), dayEnd(day)
				return page, nil
			}
			// The file is done: go on at the day before, if any.
			if prev := previousDay(names, day, q.Range); prev != "" {
				page.Next, page.Frontier = searchCursor{Day: prev, End: -1}.encode(), dayEnd(prev)
			}
			return page, nil
		}
	}
	return page, nil
}

// dayEnd is the last instant of a day file's day: a search stopped in it
// (or before it) has read nothing published after it that it has not
// read, the order of a day's lines being the order they were written in.
func dayEnd(day string) time.Time {
	d, _ := time.Parse(dayLayout, day)
	return d.Add(24*time.Hour - time.Nanosecond)
}

// previousDay is the day file before day (names newest first) that can
// hold comments in r, or "".
func previousDay(names []string, day string, r store.Range) string {
	for _, name := range names {
		d := strings.TrimSuffix(name, fileExt)
		if d < day && dayInRange(d, r) {
			return d
		}
	}
	return ""
}

// searchFile reads one day file backwards from end (-1: its end) and
// appends the matches to page. It returns the offset the unread part of
// the file ends at and whether the page stopped (full, or at a bound)
// there; the offset is 0 when the file was read to its start.
func (s *Store) searchFile(ctx context.Context, path string, end int64, q store.Search, limit, maxScan int,
	deadline time.Time, page *store.SearchPage) (int64, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil // removed since it was listed
	}
	if err != nil {
		return 0, false, fmt.Errorf("file: unable to open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("file: unable to stat %s: %w", path, err)
	}
	// A cursor's offset past the end of the file (the file was rewritten
	// shorter since, or the cursor is forged) reads the file from its end:
	// there is nothing to read beyond it.
	if end < 0 || end > st.Size() {
		end = st.Size()
	}
	pos := end
	stop := func(unread int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			pos = unread
			return errSearchStop
		}
		return nil
	}
	err = scanBackward(f, path, end, stop, func(line []byte, start int64) error {
		pos = start
		page.Scanned++
		var c api.Comment
		if json.Unmarshal(line, &c) == nil && q.Range.Contains(c.PublishedAt) && q.Matches(&c) {
			page.Comments = append(page.Comments, c)
		}
		if len(page.Comments) >= limit || page.Scanned >= maxScan {
			return errSearchStop
		}
		if page.Scanned%searchCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return errSearchStop
			}
		}
		return nil
	})
	if errors.Is(err, errSearchStop) {
		return pos, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	return 0, false, nil
}

// scanBackward calls fn with every whole line of f that ends at or before
// end, last line first (trimmed), and the offset the line starts at, until
// fn returns an error. A final line without its newline is a write in
// progress and is not read; an end inside a line (a file rewritten since
// the cursor was made) skips that part line. Before reading each chunk
// after the first it asks check whether to go on, telling it the offset
// the part not yet looked at ends at (everything after it was handed to
// fn, or was blank); check's error ends the scan, so no file, however
// large or blank, holds a scan past its caller's bounds.
func scanBackward(f *os.File, path string, end int64, check func(unread int64) error, fn func(line []byte, start int64) error) error {
	pos := end      // data holds the bytes [pos, pos+len(data))
	var data []byte // a tail of the region not yet handed to fn
	trimmed := false
	chunks := 0
	for {
		if !trimmed {
			// Drop what follows the last newline: a part line.
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				data = data[:i+1]
				trimmed = true
				continue
			}
			data = data[:0]
		} else if len(data) > 0 {
			i := bytes.LastIndexByte(data[:len(data)-1], '\n')
			if i >= 0 || pos == 0 {
				line := data[i+1:]
				start := pos + int64(i+1)
				data = data[:i+1]
				if t := bytes.TrimSpace(line); len(t) > 0 {
					if err := fn(t, start); err != nil {
						return err
					}
				}
				continue
			}
			if len(data) > maxLineBytes {
				return fmt.Errorf("file: %s has a line longer than %d bytes before offset %d", path, maxLineBytes, pos+int64(len(data)))
			}
		}
		if pos == 0 {
			return nil
		}
		if chunks > 0 && check != nil {
			if err := check(pos + int64(len(data))); err != nil {
				return err
			}
		}
		chunks++
		n := min(int64(tailChunk), pos)
		chunk := make([]byte, int(n)+len(data))
		if _, err := f.ReadAt(chunk[:n], pos-n); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("file: unable to read %s: %w", path, err)
		}
		copy(chunk[n:], data)
		data, pos = chunk, pos-n
	}
}
