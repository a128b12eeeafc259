// Package file is the embedded comment store, file://DIR: JSON Lines on
// local disk, one comment object a line, in DIR/<crawler id>/<YYYY-MM-DD>.jsonl
// by the UTC day of the comment's published time. It needs no server, so a
// whole cluster runs on one machine.
package file

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

const (
	// Scheme starts every file store URI.
	Scheme = "file://"
	// dayLayout names a day file (plus the ".jsonl" extension).
	dayLayout = "2006-01-02"
	// fileExt ends every day file.
	fileExt = ".jsonl"
	// maxCachedCrawlers bounds the crawlers whose id index stays in memory;
	// an evicted index is rebuilt from the files when next needed.
	maxCachedCrawlers = 256
	// maxLineBytes caps one line when reading, far above any real comment.
	maxLineBytes = 16 << 20
	// tailChunk is how much of a file is read at a time when looking for
	// its last newline.
	tailChunk = 64 << 10
	// dirPerm and filePerm are the modes of created directories and files.
	dirPerm  = 0o755
	filePerm = 0o644
)

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("file: store is closed")

// dayFile matches the names of day files.
var dayFile = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}\.jsonl$`)

// ParseURI returns the directory of a file store URI: file://./data and
// file://data are relative to the working directory, file:///srv/data is
// absolute. Percent-escapes are decoded.
func ParseURI(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, Scheme)
	if !ok {
		return "", fmt.Errorf("file: store URI %q must start with %s", uri, Scheme)
	}
	if strings.ContainsAny(rest, "?#") {
		return "", fmt.Errorf("file: store URI %q must not carry a query or fragment", uri)
	}
	dir, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("file: store URI %q: %w", uri, err)
	}
	if dir == "" {
		return "", fmt.Errorf("file: store URI %q names no directory (want file://./data or file:///abs/path)", uri)
	}
	return filepath.Clean(dir), nil
}

// Store is the file store. It is safe for concurrent use, and several
// spawns (processes or stores in one process) may share one directory.
//
// Its promises: Write returns only after the lines are fsynced; a line is
// written whole or not at all, so readers never see half a comment; and a
// comment already stored for a crawler is never written a second time.
// Writers of a crawler take an exclusive flock on the crawler's directory,
// so these hold across processes; readers take no lock and ignore a final
// line that has no newline yet.
type Store struct {
	dir string

	// tombs are the tombstones every writer checks (tombstones.go).
	tombs *tombstones
	// id names the store (store.Retractor.ID).
	id string
	// dirty says a Bury left covered comments for Sweep.
	dirty atomic.Bool

	mu       sync.Mutex // guards the fields below
	closed   bool
	crawlers map[int64]*crawler
	lru      []int64 // crawler ids, least recently used first
}

var _ store.Store = (*Store)(nil)

// Open opens (creating) the store in dir and cuts any half-written final
// line a crash left behind.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("file: unable to create %s: %w", dir, err)
	}
	s := &Store{dir: dir, crawlers: map[int64]*crawler{}, tombs: newTombstones(dir)}
	id, err := readStoreID(dir)
	if err != nil {
		return nil, err
	}
	s.id = id
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("file: unable to read %s: %w", dir, err)
	}
	for _, e := range entries {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || !e.IsDir() {
			continue
		}
		if err := s.repair(id); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) crawlerDir(id int64) string {
	return filepath.Join(s.dir, strconv.FormatInt(id, 10))
}

// repair truncates the partial final line of each of a crawler's files.
func (s *Store) repair(id int64) error {
	unlock, err := lockDir(s.crawlerDir(id))
	if err != nil {
		return err
	}
	defer unlock()
	if err := removeTemps(s.crawlerDir(id)); err != nil {
		return err
	}
	names, err := dayFiles(s.crawlerDir(id))
	if err != nil {
		return err
	}
	for _, name := range names {
		path := filepath.Join(s.crawlerDir(id), name)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("file: unable to open %s: %w", path, err)
		}
		_, err = cutPartialLine(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Close releases the store. Writes in flight finish first.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.crawlers = map[int64]*crawler{}
	s.lru = nil
	return nil
}

// crawler returns a crawler's index, evicting the least recently used one
// when too many are held.
func (s *Store) crawler(id int64) (*crawler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if i := slices.Index(s.lru, id); i >= 0 {
		s.lru = append(slices.Delete(s.lru, i, i+1), id)
		return s.crawlers[id], nil
	}
	c := newCrawler()
	s.crawlers[id] = c
	s.lru = append(s.lru, id)
	if len(s.lru) > maxCachedCrawlers {
		// An index still in use by a writer stays valid for it; the
		// next writer builds a fresh one from the files.
		delete(s.crawlers, s.lru[0])
		s.lru = s.lru[1:]
	}
	return c, nil
}

// Write appends the comments not yet stored, one JSON line each, and
// returns once they are on disk. A retried batch writes nothing twice.
func (s *Store) Write(ctx context.Context, comments []api.Comment) error {
	_, err := s.WriteFresh(ctx, comments)
	return err
}

// WriteFresh is Write reporting which comments were new to the store.
func (s *Store) WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error) {
	fresh := make([]bool, len(comments))
	byCrawler := map[int64][]int{}
	for i, c := range comments {
		byCrawler[c.CrawlerID] = append(byCrawler[c.CrawlerID], i)
	}
	ids := make([]int64, 0, len(byCrawler))
	for id := range byCrawler {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return fresh, err
		}
		if err := s.writeCrawler(id, comments, byCrawler[id], fresh); err != nil {
			return fresh, err
		}
	}
	return fresh, nil
}

// writeCrawler appends the comments at idx (all of one crawler) and sets
// fresh for each it stored for the first time.
func (s *Store) writeCrawler(id int64, all []api.Comment, idx []int, fresh []bool) error {
	c, err := s.crawler(id)
	if err != nil {
		return err
	}
	dir := s.crawlerDir(id)
	created, err := mkdir(dir)
	if err != nil {
		return err
	}
	if created {
		if err := writeSource(dir, all[idx[0]].Source); err != nil {
			return err
		}
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	// Another writer (another spawn on this directory) may have appended
	// since this index was last brought up to date.
	if err := c.refresh(dir); err != nil {
		return err
	}
	// Read under the crawler's lock: a Bury appends its tombstones before
	// it takes the lock to remove lines, so either this write sees the
	// tombstone or the Bury sees the line.
	buried, err := s.tombs.covers(all, idx)
	if err != nil {
		return err
	}
	now := time.Now()

	byDay := map[string]*bytes.Buffer{}
	keepUntil := map[string]int64{}
	var newIDs, newDays []string
	var newIdx []int
	batch := map[string]bool{}
	for _, i := range idx {
		cm := all[i]
		if _, dup := c.ids[cm.ID]; cm.ID != "" && (dup || batch[cm.ID]) {
			continue
		}
		if buried[i] || store.TTLFor(&cm, now) < 0 {
			continue // taken back, or already past its retention: not stored
		}
		line, err := json.Marshal(cm)
		if err != nil {
			return fmt.Errorf("file: unable to encode comment %q of crawler %d: %w", cm.ID, id, err)
		}
		name := cm.PublishedAt.UTC().Format(dayLayout) + fileExt
		buf := byDay[name]
		if buf == nil {
			buf = &bytes.Buffer{}
			byDay[name] = buf
		}
		buf.Write(line)
		buf.WriteByte('\n')
		batch[cm.ID] = true
		newIDs = append(newIDs, cm.ID)
		newDays = append(newDays, name)
		newIdx = append(newIdx, i)
		keepUntil[name] = mergeKeep(keepUntil, name, keepMark(&cm))
	}
	names := make([]string, 0, len(byDay))
	for name := range byDay {
		names = append(names, name)
	}
	slices.Sort(names)
	createdFile := false
	for _, name := range names {
		path := filepath.Join(dir, name)
		// The retention mark goes first: a mark that keeps the day longer
		// than its lines need is harmless, lines the mark does not cover
		// would be dropped too early.
		if err := c.raiseKeep(dir, name, keepUntil[name]); err != nil {
			return err
		}
		size, fresh, err := appendLines(path, byDay[name].Bytes())
		if err != nil {
			return err
		}
		createdFile = createdFile || fresh
		c.indexed[name] = size
	}
	if createdFile {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	for k, cid := range newIDs {
		c.ids[cid] = newDays[k]
		cm := &all[newIdx[k]]
		c.noteAuthor(cid, cm.Author, cm.AuthorID)
	}
	for _, i := range newIdx {
		fresh[i] = true
	}
	return nil
}

// Recent returns up to n of a crawler's comments, newest published first,
// reading day files from the newest day back until it has enough.
func (s *Store) Recent(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if n <= 0 {
		return []api.Comment{}, nil
	}
	dir := s.crawlerDir(crawlerID)
	names, err := dayFiles(dir)
	if err != nil {
		return nil, err
	}
	slices.Reverse(names)
	out := []api.Comment{}
	seen := map[string]bool{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var day []api.Comment
		_, err := scanLines(filepath.Join(dir, name), 0, func(line []byte) {
			var c api.Comment
			if json.Unmarshal(line, &c) != nil || seen[c.ID] || s.tombs.coversNow(&c) {
				return // a damaged line costs that comment, not the answer; a buried one is not shown
			}
			seen[c.ID] = true
			day = append(day, c)
		})
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(day, func(a, b api.Comment) int {
			if c := b.PublishedAt.Compare(a.PublishedAt); c != 0 {
				return c
			}
			return cmp.Compare(b.ID, a.ID)
		})
		out = append(out, day...)
		// Days do not overlap: once n are found, older days hold only
		// older comments.
		if len(out) >= n {
			return out[:n], nil
		}
	}
	return out, nil
}
