package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Amender = (*Store)(nil)

// tmpPrefix starts, and tmpSuffix ends, the name of a day file being
// rewritten: neither the store's listings nor a reader's *.jsonl glob match
// it, and Open removes what a crash left.
const (
	tmpPrefix = ".amend-"
	tmpSuffix = ".tmp"
)

// beforeRename, when set (by tests), runs between writing a rewritten day
// file and renaming it over the old one; an error stands for a crash there.
var beforeRename func(tmp, path string) error

// Amend changes stored comments in place. Each affected day file is
// rewritten once per call, under the crawler's locks: the new content goes
// to a temporary file in the same directory, is fsynced, then renamed over
// the old file, so a crash at any point leaves either the old file or the
// new one whole, never a mix. A comment not found changes nothing.
func (s *Store) Amend(ctx context.Context, amendments []store.Amendment) error {
	byCrawler := map[int64]map[string]map[string]store.Amendment{} // crawler → day file → comment id
	for _, a := range amendments {
		if a.CommentID == "" || a.Author == "" {
			continue
		}
		days := byCrawler[a.CrawlerID]
		if days == nil {
			days = map[string]map[string]store.Amendment{}
			byCrawler[a.CrawlerID] = days
		}
		name := a.PublishedAt.UTC().Format(dayLayout) + fileExt
		if days[name] == nil {
			days[name] = map[string]store.Amendment{}
		}
		days[name][a.CommentID] = a
	}
	ids := make([]int64, 0, len(byCrawler))
	for id := range byCrawler {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.amendCrawler(id, byCrawler[id]); err != nil {
			return err
		}
	}
	return nil
}

// amendCrawler rewrites the day files of one crawler that hold comments
// to amend.
func (s *Store) amendCrawler(id int64, days map[string]map[string]store.Amendment) error {
	c, err := s.crawler(id)
	if err != nil {
		return err
	}
	dir := s.crawlerDir(id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // nothing stored: nothing to amend
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.refresh(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(days))
	for name := range days {
		names = append(names, name)
	}
	slices.Sort(names)
	rewrote := false
	for _, name := range names {
		size, changed, err := amendFile(filepath.Join(dir, name), days[name])
		if err != nil {
			return err
		}
		if changed {
			rewrote = true
			// The file was replaced: its index restarts from the new
			// file (amendments never add or remove ids).
			c.indexed[name] = size
		}
	}
	if rewrote {
		if err := c.rewrote(dir); err != nil {
			return err
		}
		return syncDir(dir)
	}
	return nil
}

// amendFile rewrites one day file with the amendments applied, through a
// temporary file, fsync and rename. A missing file, or one holding none of
// the comments, is left alone. It returns the new size and whether the
// file was rewritten.
func amendFile(path string, byID map[string]store.Amendment) (int64, bool, error) {
	return rewriteDay(path, func(line []byte) ([]byte, bool) {
		amended, ok := amendLine(line, byID)
		return amended, ok
	})
}

// rewriteDay rewrites a day file line by line: edit gets each whole line
// (trimmed) and says what becomes of it: kept as it is (changed false),
// dropped (nil, true) or replaced (out, true). The new content goes to a
// temporary file in the same directory, is fsynced, then renamed over the
// old file, so a crash at any point leaves the old file or the new one
// whole, never a mix, and loses no other line. A missing file, or one
// edit leaves as it is, is not rewritten. It returns the new size and
// whether the file was rewritten. The caller holds the crawler's locks.
func rewriteDay(path string, edit func(line []byte) ([]byte, bool)) (int64, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("file: unable to read %s: %w", path, err)
	}
	// Only whole lines: a partial final line (a crash's remains) is cut
	// as every writer cuts it.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var out bytes.Buffer
	out.Grow(len(data) + 256)
	changed := false
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i+1]
		rest = rest[i+1:]
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			out.Write(line)
			continue
		}
		repl, ok := edit(trimmed)
		if !ok {
			out.Write(line)
			continue
		}
		changed = true
		if repl != nil {
			out.Write(repl)
			out.WriteByte('\n')
		}
	}
	if !changed {
		return 0, false, nil
	}
	tmp := filepath.Join(filepath.Dir(path), tmpPrefix+filepath.Base(path)+tmpSuffix)
	if err := writeSynced(tmp, out.Bytes()); err != nil {
		return 0, false, err
	}
	if beforeRename != nil {
		if err := beforeRename(tmp, path); err != nil {
			return 0, false, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return 0, false, fmt.Errorf("file: unable to replace %s: %w", path, err)
	}
	return int64(out.Len()), true, nil
}

// amendLine applies the amendment of a line's comment, if any; ok is false
// when the line is left as it is (another comment, the change already
// made, or a line that is not a comment).
func amendLine(line []byte, byID map[string]store.Amendment) ([]byte, bool) {
	var head struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(line, &head) != nil {
		return nil, false
	}
	a, ok := byID[head.ID]
	if !ok {
		return nil, false
	}
	var c api.Comment
	if json.Unmarshal(line, &c) != nil || c.Author == a.Author {
		return nil, false
	}
	c.Author = a.Author
	out, err := json.Marshal(c)
	if err != nil {
		return nil, false
	}
	return out, true
}

// writeSynced writes data to a new file at path and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("file: unable to create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("file: unable to write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("file: unable to sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("file: unable to close %s: %w", path, err)
	}
	return nil
}

// removeTemps deletes the temporary files an amendment left when the
// process died before renaming them. The caller holds the directory lock.
func removeTemps(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("file: unable to read %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) && strings.HasSuffix(e.Name(), tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("file: unable to remove %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}
