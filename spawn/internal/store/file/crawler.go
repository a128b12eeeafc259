package file

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// crawler is one crawler's index: the comment ids its files hold, and how
// far each file has been read into it. mu serialises the crawler's writers
// in this process; the directory flock serialises them across processes.
type crawler struct {
	mu  sync.Mutex
	ids map[string]string // comment id → the day file holding it
	// authors are the comment ids of each author, by id and by lower-cased
	// handle (entries of removed comments linger: ids is the truth).
	authors map[string][]string
	indexed map[string]int64 // file name → bytes indexed (up to a newline)
	// gen is the directory's generation the index was built in (gen.go):
	// a rewrite elsewhere bumps it, and the index is then built again.
	gen uint64
	// keep caches the day files' retention marks (retention.go).
	keep map[string]int64
}

func newCrawler() *crawler {
	return &crawler{ids: map[string]string{}, authors: map[string][]string{}, indexed: map[string]int64{}, keep: map[string]int64{}}
}

// noteAuthor indexes a comment under its author's id and handle.
func (c *crawler) noteAuthor(id, author, authorID string) {
	if authorID != "" {
		c.authors[authorID] = append(c.authors[authorID], id)
	}
	if author != "" && author != authorID {
		if l := strings.ToLower(author); l != authorID {
			c.authors[l] = append(c.authors[l], id)
		}
	}
}

// reset empties the index, to be built again from the files.
func (c *crawler) reset() {
	c.ids, c.authors, c.indexed, c.keep, c.gen = map[string]string{}, map[string][]string{}, map[string]int64{}, map[string]int64{}, 0
}

// rewrote records a rewrite this index saw made (its caller updated the
// index): the generation it bumped to.
func (c *crawler) rewrote(dir string) error {
	g, err := bumpGen(filepath.Join(dir, genName))
	if err != nil {
		c.reset()
		return err
	}
	c.gen = g
	return nil
}

// refresh brings the crawler's index up to date with its files: the first
// time by reading them all, then by reading what was appended since.
func (c *crawler) refresh(dir string) error {
	gen, err := readGen(filepath.Join(dir, genName))
	if err != nil {
		return err
	}
	if gen != c.gen {
		// Rewritten elsewhere since: build the index again.
		c.reset()
		c.gen = gen
	}
	names, err := dayFiles(dir)
	if err != nil {
		return err
	}
	for name := range c.indexed {
		if _, ok := slices.BinarySearch(names, name); !ok {
			c.forgetDay(name) // dropped past its retention
		}
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("file: unable to stat %s: %w", path, err)
		}
		off := c.indexed[name]
		if info.Size() < off {
			// The file shrank under us (edited by hand?): start over.
			c.reset()
			c.gen = gen
			return c.refresh(dir)
		}
		if info.Size() == off {
			continue
		}
		n, err := scanLines(path, off, func(line []byte) {
			var head struct {
				ID       string `json:"id"`
				Author   string `json:"author"`
				AuthorID string `json:"author_id"`
			}
			if json.Unmarshal(line, &head) == nil && head.ID != "" {
				c.ids[head.ID] = name
				c.noteAuthor(head.ID, head.Author, head.AuthorID)
			}
		})
		if err != nil {
			return err
		}
		c.indexed[name] = off + n
	}
	return nil
}

// forgetDay drops from the index the ids of a day file that was replaced
// or removed.
func (c *crawler) forgetDay(name string) {
	for id, day := range c.ids {
		if day == name {
			delete(c.ids, id)
		}
	}
	delete(c.indexed, name)
}
