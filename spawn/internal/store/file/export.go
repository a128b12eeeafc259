package file

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Exporter = (*Store)(nil)

// cursor is where an export goes on: a day file, the byte offset of the
// next line to read in it, and the ids of the last lines read (newest
// first). The offset is trusted only when the line that ends there is
// still the last one read: a day file rewritten since (an amendment, an
// edit, a removal) has other offsets, and the export then finds its place
// again by those ids, which a rewrite keeps in order, rather than starting
// mid-line or past lines not yet read.
type cursor struct {
	Day    string   `json:"d"`
	Offset int64    `json:"o"`
	Last   []string `json:"i,omitempty"`
}

// cursorIDs is how many of the last ids read a cursor keeps: the place is
// lost only if all of them are removed between two pages.
const cursorIDs = 4

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Offset < 0 || len(c.Last) > cursorIDs {
		return cursor{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	if _, err := time.Parse(dayLayout, c.Day); err != nil {
		return cursor{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	return c, nil
}

// Export reads a crawler's comments day file by day file, oldest first, in
// the order they were written. The cursor is the day and byte offset of the
// next line, so a page costs one seek, not a rescan of what came before;
// only a day file rewritten since the cursor was made is read from its
// start to find the place again.
func (s *Store) Export(ctx context.Context, crawlerID int64, r store.Range, cur string, limit int) (store.Page, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return store.Page{}, ErrClosed
	}
	at := cursor{}
	if cur != "" {
		var err error
		if at, err = decodeCursor(cur); err != nil {
			return store.Page{}, err
		}
	}
	dir := s.crawlerDir(crawlerID)
	names, err := dayFiles(dir)
	if err != nil {
		return store.Page{}, err
	}
	page := store.Page{Comments: make([]api.Comment, 0, min(limit, 1024))}
	for _, name := range names {
		day := strings.TrimSuffix(name, fileExt)
		if day < at.Day || !dayInRange(day, r) {
			continue
		}
		from := place{}
		if day == at.Day {
			from = place{offset: at.Offset, after: at.Last}
		}
		next, full, err := readPage(ctx, filepath.Join(dir, name), from, r, limit, s.tombs.coversNow, &page.Comments)
		if err != nil {
			return store.Page{}, err
		}
		if full {
			page.Next = cursor{Day: day, Offset: next.offset, Last: next.after}.encode()
			return page, nil
		}
	}
	return page, nil
}

// dayInRange reports whether a day (YYYY-MM-DD) can hold comments
// published in r.
func dayInRange(day string, r store.Range) bool {
	if !r.Since.IsZero() && day < r.Since.UTC().Format(dayLayout) {
		return false
	}
	if !r.Until.IsZero() {
		// Until is exclusive: a range ending at midnight holds nothing of
		// that day.
		last := r.Until.UTC().Add(-time.Nanosecond).Format(dayLayout)
		if day > last {
			return false
		}
	}
	return true
}

// errPageFull stops a scan once a page is full.
var errPageFull = errors.New("file: page full")

// place is where reading a day file goes on: the offset of the next line,
// and the ids of the last lines read, newest first (to check the offset,
// and to find the place in a rewritten file).
type place struct {
	offset int64
	after  []string
}

// readPage appends the comments in r of one day file that no tombstone
// covers (buried), from its place, to out until it holds limit. It returns the place after the last line it
// read and whether the page is full.
func readPage(ctx context.Context, path string, from place, r store.Range, limit int, buried func(*api.Comment) bool, out *[]api.Comment) (place, bool, error) {
	if len(*out) >= limit {
		return from, true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return place{}, false, fmt.Errorf("file: unable to open %s: %w", path, err)
	}
	defer f.Close()
	offset := from.offset
	if len(from.after) > 0 {
		still, err := lineEndsAt(f, path, offset, from.after[0])
		if err != nil {
			return place{}, false, err
		}
		if !still {
			// Rewritten since: go on after the newest id still there.
			if offset, err = seekAfter(f, path, from.after); err != nil {
				return place{}, false, err
			}
		}
	}
	at := place{offset: offset, after: from.after}
	err = scanFrom(f, path, offset, func(line []byte, end int64) error {
		at.offset = end
		var c api.Comment
		if json.Unmarshal(line, &c) != nil {
			return nil // a damaged line costs that comment, not the export
		}
		at.after = append([]string{c.ID}, at.after[:min(len(at.after), cursorIDs-1)]...)
		if !r.Contains(c.PublishedAt) || buried(&c) {
			return nil
		}
		*out = append(*out, c)
		if len(*out) >= limit {
			return errPageFull
		}
		if len(*out)%256 == 0 {
			return ctx.Err()
		}
		return nil
	})
	if errors.Is(err, errPageFull) {
		// The page is full; it is complete only if nothing follows.
		return at, true, nil
	}
	if err != nil {
		return place{}, false, err
	}
	return at, false, nil
}

// lineEndsAt reports whether the line of comment id ends just before
// offset in f.
func lineEndsAt(f *os.File, path string, offset int64, id string) (bool, error) {
	if offset <= 0 {
		return false, nil
	}
	var nl [1]byte
	if _, err := f.ReadAt(nl[:], offset-1); err != nil || nl[0] != '\n' {
		return false, nil // past the end, or mid-line: not where it was
	}
	start, err := lastNewline(f, offset-1)
	if err != nil {
		return false, err
	}
	if offset-start > maxLineBytes {
		return false, nil
	}
	line := make([]byte, offset-1-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return false, fmt.Errorf("file: unable to read %s: %w", path, err)
	}
	var head struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(line, &head) == nil && head.ID == id, nil
}

// seekAfter finds, in a rewritten day file, the offset just after the line
// of the newest of ids (newest first) that it still holds; 0 when it holds
// none of them (with no ids, the cursor pointed at the file's start).
func seekAfter(f *os.File, path string, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	rank := make(map[string]int, len(ids))
	for i, id := range ids {
		rank[id] = i
	}
	best, bestRank := int64(0), len(ids)
	err := scanFrom(f, path, 0, func(line []byte, end int64) error {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &head) != nil {
			return nil
		}
		if r, ok := rank[head.ID]; ok && r < bestRank {
			best, bestRank = end, r
			if r == 0 {
				return errPageFull // the newest: nothing better to find
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return 0, err
	}
	return best, nil
}

// scanFrom calls fn with every whole line of f from offset on (trimmed) and
// the offset just after it, until fn returns an error. A final line without
// its newline is a write in progress and is not read.
func scanFrom(f *os.File, path string, offset int64, fn func(line []byte, end int64) error) error {
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("file: unable to seek %s: %w", path, err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	pos := offset
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLineBytes {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("file: %s has a line longer than %d bytes at offset %d", path, maxLineBytes, pos)
		}
		if err != nil {
			return fmt.Errorf("file: unable to read %s: %w", path, err)
		}
		pos += int64(len(line))
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if err := fn(trimmed, pos); err != nil {
				return err
			}
		}
	}
}
