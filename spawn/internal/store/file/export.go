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

// cursor is where an export goes on: a day file and the byte offset of the
// next line to read in it.
type cursor struct {
	Day    string `json:"d"`
	Offset int64  `json:"o"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Offset < 0 {
		return cursor{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	if _, err := time.Parse(dayLayout, c.Day); err != nil {
		return cursor{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	return c, nil
}

// Export reads a crawler's comments day file by day file, oldest first, in
// the order they were written. The cursor is the day and byte offset of the
// next line, so a page costs one seek, not a rescan of what came before.
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
		offset := int64(0)
		if day == at.Day {
			offset = at.Offset
		}
		next, full, err := readPage(ctx, filepath.Join(dir, name), offset, r, limit, &page.Comments)
		if err != nil {
			return store.Page{}, err
		}
		if full {
			page.Next = cursor{Day: day, Offset: next}.encode()
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

// readPage appends the comments in r of one day file, from offset, to out
// until it holds limit. It returns the offset after the last line it read
// and whether the page is full.
func readPage(ctx context.Context, path string, offset int64, r store.Range, limit int, out *[]api.Comment) (int64, bool, error) {
	if len(*out) >= limit {
		return offset, true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("file: unable to open %s: %w", path, err)
	}
	defer f.Close()
	pos := offset
	err = scanFrom(f, path, offset, func(line []byte, end int64) error {
		pos = end
		var c api.Comment
		if json.Unmarshal(line, &c) != nil || !r.Contains(c.PublishedAt) {
			return nil // a damaged line costs that comment, not the export
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
		return pos, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	return pos, false, nil
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
