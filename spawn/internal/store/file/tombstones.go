package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Tombstones live in DIR/_tombstones/tombstones.jsonl, one line each,
// appended under the directory's flock like a day file; every spawn on the
// directory reads what the others append (by offset, as the crawler
// indexes do) and keeps the live ones in memory as 64-bit hashes of their
// keys, a few dozen bytes each: a day of every post deleted on Bluesky is
// a few megabytes. When most lines have expired the file is rewritten
// without them (temporary file, fsync, rename), and readers seeing a new
// inode read it again from the start.
const (
	// tombDir holds the tombstones, the applied mark and nothing else.
	tombDir  = "_tombstones"
	tombFile = "tombstones.jsonl"
	// tombGen is the tombstone file's generation, bumped by a compaction.
	tombGen = "gen"
	// appliedFile holds the hub log's highest retraction applied.
	appliedFile = "applied"
	// storeIDFile names the store for the hub (store.Retractor.ID).
	storeIDFile = "_store_id"
	// compactMinLines is how many lines the tombstone file holds before a
	// rewrite without the expired ones is worth it; it is rewritten when
	// fewer than half of them are live.
	compactMinLines = 4096
	// refreshEvery bounds how often a read brings the set up to date with
	// the file: a read of thousands of comments costs one refresh. Writes
	// refresh before every batch (covers).
	refreshEvery = 100 * time.Millisecond
)

// Key kinds of a tombstone line.
const (
	keyComment = "c" // one comment
	keyAccount = "a" // an inactive account's comments
	keyForget  = "f" // a forgotten author's comments
)

// tombLine is one line of the tombstone file. Lift marks a line that ends
// an earlier one (an account active again).
type tombLine struct {
	Key    string `json:"k"`
	Before int64  `json:"b,omitempty"` // Unix ms; 0 covers every published time
	Until  int64  `json:"u"`           // Unix seconds
	Lift   bool   `json:"l,omitempty"`
}

// tomb is a live tombstone in memory.
type tomb struct {
	until  int64 // Unix seconds
	before int64 // Unix ms, 0 for all
}

// tombstones is the store's view of the tombstone file.
type tombstones struct {
	dir  string
	seed maphash.Seed

	mu     sync.Mutex
	set    map[uint64]tomb
	offset int64  // bytes of the file read into set
	gen    uint64 // the file's generation read (gen.go)
	lines  int    // lines in the file, live or not
	// fresh is when reads last brought the set up to date (coversNow).
	fresh time.Time
}

func newTombstones(dir string) *tombstones {
	return &tombstones{dir: filepath.Join(dir, tombDir), seed: maphash.MakeSeed(), set: map[uint64]tomb{}}
}

func (t *tombstones) path() string { return filepath.Join(t.dir, tombFile) }

// tombKey is the key of one comment, or of an author's tombstone of a kind.
func tombKey(kind, source, target string) string {
	return kind + "|" + source + "|" + target
}

// authorTargets are the spellings an author tombstone is filed under: as
// given (an id compares exactly) and lower-cased (a handle compares
// without regard to case).
func authorTargets(author string) []string {
	if l := strings.ToLower(author); l != author {
		return []string{author, l}
	}
	return []string{author}
}

// linesOf are a tombstone's lines.
func linesOf(ts store.Tombstone) []tombLine {
	until := ts.Until.Unix()
	if ts.CommentID != "" {
		return []tombLine{{Key: tombKey(keyComment, ts.Source, ts.CommentID), Until: until}}
	}
	kind, before := keyForget, int64(0)
	if ts.Account {
		kind = keyAccount
	} else if !ts.Before.IsZero() {
		before = ts.Before.UnixMilli()
	}
	var out []tombLine
	for _, a := range authorTargets(ts.Author) {
		out = append(out, tombLine{Key: tombKey(kind, ts.Source, a), Before: before, Until: until})
	}
	return out
}

// refreshLocked reads what was appended to the file since the last read,
// or all of it when it was replaced. The caller holds t.mu and a lock of
// the directory.
func (t *tombstones) refreshLocked() error {
	gen, err := readGen(filepath.Join(t.dir, tombGen))
	if err != nil {
		return err
	}
	info, err := os.Stat(t.path())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("file: unable to stat %s: %w", t.path(), err)
	}
	if gen != t.gen || info.Size() < t.offset {
		t.set, t.offset, t.gen, t.lines = map[uint64]tomb{}, 0, gen, 0
	}
	if info.Size() == t.offset {
		return nil
	}
	n, err := scanLines(t.path(), t.offset, func(line []byte) {
		var l tombLine
		if json.Unmarshal(line, &l) != nil || l.Key == "" {
			return
		}
		t.lines++
		t.applyLocked(l)
	})
	if err != nil {
		return err
	}
	t.offset += n
	return nil
}

// applyLocked takes one line into the set: a lift removes the key; two
// tombstones of one key merge into one that lasts as long and covers as
// much as both.
func (t *tombstones) applyLocked(l tombLine) {
	h := maphash.String(t.seed, l.Key)
	if l.Lift {
		delete(t.set, h)
		return
	}
	old, ok := t.set[h]
	if !ok || old.until <= time.Now().Unix() {
		t.set[h] = tomb{until: l.Until, before: l.Before}
		return
	}
	merged := tomb{until: max(old.until, l.Until), before: max(old.before, l.Before)}
	if old.before == 0 || l.Before == 0 {
		merged.before = 0
	}
	t.set[h] = merged
}

// coversLocked reports whether a live tombstone covers comment c at now.
// The caller holds t.mu and has refreshed the set.
func (t *tombstones) coversLocked(c *api.Comment, now int64) bool {
	if len(t.set) == 0 {
		return false
	}
	if tb, ok := t.set[maphash.String(t.seed, tombKey(keyComment, c.Source, c.ID))]; ok && tb.until > now {
		return true
	}
	pub := c.PublishedAt.UnixMilli()
	check := func(target string) bool {
		if target == "" {
			return false
		}
		for _, kind := range [...]string{keyAccount, keyForget} {
			tb, ok := t.set[maphash.String(t.seed, tombKey(kind, c.Source, target))]
			if ok && tb.until > now && (tb.before == 0 || pub < tb.before) {
				return true
			}
		}
		return false
	}
	return check(c.AuthorID) || (c.Author != c.AuthorID && check(strings.ToLower(c.Author)))
}

// covers refreshes the set and reports which of comments a tombstone
// covers (nil when none does).
func (t *tombstones) covers(comments []api.Comment, idx []int) (map[int]bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A compaction replaces the file under the exclusive lock: read under
	// the shared one, so what is read is one whole generation.
	unlock, err := lockDirShared(t.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no tombstone yet
	}
	if err != nil {
		return nil, err
	}
	err = t.refreshLocked()
	unlock()
	if err != nil {
		return nil, err
	}
	if len(t.set) == 0 {
		return nil, nil
	}
	now := time.Now().Unix()
	var out map[int]bool
	for _, i := range idx {
		if t.coversLocked(&comments[i], now) {
			if out == nil {
				out = map[int]bool{}
			}
			out[i] = true
		}
	}
	return out, nil
}

// append writes lines to the file under its directory lock and takes
// them into the set; it rewrites the file without its expired lines when
// they are most of it.
func (t *tombstones) append(lines []tombLine) error {
	if len(lines) == 0 {
		return nil
	}
	created, err := mkdir(t.dir)
	if err != nil {
		return err
	}
	if created {
		if err := syncDir(filepath.Dir(t.dir)); err != nil {
			return err
		}
	}
	var buf []byte
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("file: unable to encode a tombstone: %w", err)
		}
		buf = append(append(buf, b...), '\n')
	}
	unlock, err := lockDir(t.dir)
	if err != nil {
		return err
	}
	defer unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.refreshLocked(); err != nil {
		return err
	}
	size, fresh, err := appendLines(t.path(), buf)
	if err != nil {
		return err
	}
	if fresh {
		if err := syncDir(t.dir); err != nil {
			return err
		}
	}
	for _, l := range lines {
		t.lines++
		t.applyLocked(l)
	}
	t.offset = size
	return t.compactLocked()
}

// compactLocked rewrites the file with only its live tombstones when most
// of its lines are dead. The caller holds the directory lock and t.mu.
func (t *tombstones) compactLocked() error {
	now := time.Now().Unix()
	live := 0
	for _, tb := range t.set {
		if tb.until > now {
			live++
		}
	}
	if t.lines < compactMinLines || live*2 >= t.lines {
		return nil
	}
	// One line per live key, saying what the set holds for it (the
	// merge of every line of the key).
	var out []byte
	kept := 0
	written := map[uint64]bool{}
	if _, err := scanLines(t.path(), 0, func(line []byte) {
		var l tombLine
		if json.Unmarshal(line, &l) != nil || l.Lift {
			return
		}
		h := maphash.String(t.seed, l.Key)
		tb, ok := t.set[h]
		if !ok || tb.until <= now || written[h] {
			return // lifted, expired or written
		}
		written[h] = true
		b, err := json.Marshal(tombLine{Key: l.Key, Before: tb.before, Until: tb.until})
		if err != nil {
			return
		}
		out = append(append(out, b...), '\n')
		kept++
	}); err != nil {
		return err
	}
	tmp := filepath.Join(t.dir, tmpPrefix+tombFile+tmpSuffix)
	if err := writeSynced(tmp, out); err != nil {
		return err
	}
	if err := os.Rename(tmp, t.path()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("file: unable to replace %s: %w", t.path(), err)
	}
	if err := syncDir(t.dir); err != nil {
		return err
	}
	for h, tb := range t.set {
		if tb.until <= now {
			delete(t.set, h)
		}
	}
	gen, err := bumpGen(filepath.Join(t.dir, tombGen))
	if err != nil {
		t.set, t.offset, t.gen, t.lines = map[uint64]tomb{}, 0, 0, 0 // read again
		return err
	}
	t.offset, t.gen, t.lines = int64(len(out)), gen, kept
	return nil
}

// coversNow reports whether a live tombstone covers c, reading what other
// spawns appended first. Reads call it for every comment they show, so a
// comment Bury left for Sweep is never shown.
func (t *tombstones) coversNow(c *api.Comment) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fresh.IsZero() || time.Since(t.fresh) > refreshEvery {
		if unlock, err := lockDirShared(t.dir); err == nil {
			_ = t.refreshLocked()
			unlock()
		}
		t.fresh = time.Now()
	}
	return t.coversLocked(c, time.Now().Unix())
}

// any reports whether any tombstone may be live.
func (t *tombstones) any() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if unlock, err := lockDirShared(t.dir); err == nil {
		_ = t.refreshLocked()
		unlock()
	}
	return len(t.set) > 0
}
