package file

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Retention. A day file is dropped whole once every comment in it is past
// its retention: each day file has a mark, DIR/<crawler>/<day>.keep,
// holding the Unix second until which it must be kept ("0": for good),
// raised (never lowered) before each write by the retention of the
// comments written. A crawler's retention changed later applies to the
// comments stored from then on: the mark keeps what the earlier ones
// were promised. A day file without a mark (stored before retention
// existed) is kept.
const (
	// keepExt ends a day file's retention mark, a dot file named after
	// it (.2024-03-10.keep).
	keepExt = ".keep"
	// keepForever is the mark of a day that holds a comment kept for good.
	keepForever = 0
	// sourceFile names the source of a crawler's comments, so a removal
	// looks only at the crawlers of its source.
	sourceFile = ".source"
)

var _ store.Expirer = (*Store)(nil)

// keepMark is the mark one comment asks of its day file: the end of its
// day plus its retention, or keepForever.
func keepMark(c *api.Comment) int64 {
	if c.Retention <= 0 {
		return keepForever
	}
	day := c.PublishedAt.UTC().Truncate(24 * time.Hour)
	return day.Add(24*time.Hour + c.Retention).Unix()
}

// mergeKeep is the mark of a day file holding the comments already
// merged into marks[name] and one asking for mark.
func mergeKeep(marks map[string]int64, name string, mark int64) int64 {
	old, ok := marks[name]
	if !ok {
		return mark
	}
	if old == keepForever || mark == keepForever {
		return keepForever
	}
	return max(old, mark)
}

func keepPath(dir, name string) string {
	return filepath.Join(dir, "."+strings.TrimSuffix(name, fileExt)+keepExt)
}

// readKeep reads a day file's mark; ok is false when it has none.
func readKeep(dir, name string) (int64, bool, error) {
	b, err := os.ReadFile(keepPath(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("file: unable to read %s: %w", keepPath(dir, name), err)
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return keepForever, true, nil // a damaged mark keeps the day
	}
	return v, true, nil
}

// raiseKeep makes a day file's mark keep it at least until mark (or for
// good). The caller holds the crawler's locks.
func (c *crawler) raiseKeep(dir, name string, mark int64) error {
	satisfied := func(cur int64) bool {
		return cur == keepForever || (mark != keepForever && cur >= mark)
	}
	if cur, known := c.keep[name]; known && satisfied(cur) {
		return nil
	}
	// Read it: another spawn on the directory may have raised it.
	cur, ok, err := readKeep(dir, name)
	if err != nil {
		return err
	}
	if !ok {
		if fileExists(filepath.Join(dir, name)) {
			cur = keepForever // lines from before marks existed
		} else if mark == keepForever {
			// A new day kept for good: no mark says as much.
			c.keep[name] = keepForever
			return nil
		} else {
			cur = -1
		}
	}
	if satisfied(cur) {
		c.keep[name] = cur
		return nil
	}
	next := mark
	if mark != keepForever {
		next = max(cur, mark)
	}
	tmp := filepath.Join(dir, tmpPrefix+strings.TrimSuffix(name, fileExt)+keepExt+tmpSuffix)
	if err := writeSynced(tmp, []byte(strconv.FormatInt(next, 10)+"\n")); err != nil {
		return err
	}
	if err := os.Rename(tmp, keepPath(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("file: unable to write the retention of %s: %w", name, err)
	}
	c.keep[name] = next
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Expire drops every day file whose mark has passed, in every crawler, and
// returns how many comments they held.
func (s *Store) Expire(ctx context.Context, now time.Time) (int, error) {
	ids, err := s.crawlerIDs()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := s.expireCrawler(id, now)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// expireCrawler drops one crawler's day files past their mark.
func (s *Store) expireCrawler(id int64, now time.Time) (int, error) {
	dir := s.crawlerDir(id)
	names, err := dayFiles(dir)
	if err != nil || len(names) == 0 {
		return 0, err
	}
	var due []string
	for _, name := range names {
		mark, ok, err := readKeep(dir, name)
		if err != nil {
			return 0, err
		}
		if ok && mark != keepForever && mark <= now.Unix() {
			due = append(due, name)
		}
	}
	if len(due) == 0 {
		return 0, nil
	}
	c, err := s.crawler(id)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	unlock, err := lockDir(dir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	dropped := 0
	for _, name := range due {
		// Read again under the lock: a writer may have raised it.
		mark, ok, err := readKeep(dir, name)
		if err != nil {
			return dropped, err
		}
		if !ok || mark == keepForever || mark > now.Unix() {
			continue
		}
		lines := 0
		if _, err := scanLines(filepath.Join(dir, name), 0, func([]byte) { lines++ }); err != nil && !errors.Is(err, os.ErrNotExist) {
			return dropped, err
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return dropped, fmt.Errorf("file: unable to drop %s: %w", name, err)
		}
		if err := os.Remove(keepPath(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return dropped, fmt.Errorf("file: unable to drop the retention of %s: %w", name, err)
		}
		c.forgetDay(name)
		delete(c.keep, name)
		dropped += lines
	}
	if err := c.rewrote(dir); err != nil {
		return dropped, err
	}
	return dropped, syncDir(dir)
}

// crawlerIDs lists the crawlers the store holds.
func (s *Store) crawlerIDs() ([]int64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("file: unable to read %s: %w", s.dir, err)
	}
	var out []int64
	for _, e := range entries {
		if id, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() {
			out = append(out, id)
		}
	}
	return out, nil
}

// writeSource records the source of a new crawler directory's comments.
func writeSource(dir, source string) error {
	if source == "" {
		return nil
	}
	return writeSynced(filepath.Join(dir, sourceFile), []byte(source+"\n"))
}

// crawlerSource is the source a crawler directory holds comments of, ""
// when it does not say (stored before it was recorded).
func crawlerSource(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, sourceFile))
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// readStoreID reads the store's id, making one on first use. Spawns
// sharing the directory share it.
func readStoreID(dir string) (string, error) {
	path := filepath.Join(dir, storeIDFile)
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return "file:" + string(bytes.TrimSpace(b)), nil
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("file: unable to make a store id: %w", err)
	}
	// Written whole under another name, then linked: a spawn starting at
	// the same moment on the same directory reads one id or the other,
	// never half of one, and the link of the second fails.
	tmp := filepath.Join(dir, tmpPrefix+storeIDFile+hex.EncodeToString(raw[:4])+tmpSuffix)
	if err := writeSynced(tmp, []byte(hex.EncodeToString(raw[:])+"\n")); err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("file: unable to create %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("file: unable to read %s: %w", path, err)
	}
	return "file:" + string(bytes.TrimSpace(b)), syncDir(dir)
}
