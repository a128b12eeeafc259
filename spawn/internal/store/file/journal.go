package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// journalDir holds one file of intents per node, next to the crawler
// directories: DIR/_journal/<node id>.jsonl.
const journalDir = "_journal"

// nodeFile restricts node ids to names safe as a file name.
var nodeFile = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

var _ store.UsageJournal = (*Store)(nil)

// intentLine is one line of a node's journal.
type intentLine struct {
	Seq       uint64 `json:"seq"`
	CrawlerID int64  `json:"crawler_id"`
	UserID    int64  `json:"user_id"`
	Instance  uint64 `json:"instance,omitempty"`
	LeaseSeq  uint64 `json:"lease_seq,omitempty"`
}

func (s *Store) journalPath(nodeID string) (string, error) {
	if !nodeFile.MatchString(nodeID) || nodeID == "." || nodeID == ".." {
		return "", fmt.Errorf("file: node id %q cannot name a journal file", nodeID)
	}
	return filepath.Join(s.dir, journalDir, nodeID+fileExt), nil
}

// Intend appends the intents to their node's journal and fsyncs it.
func (s *Store) Intend(ctx context.Context, intents []store.Intent) error {
	byNode := map[string][]byte{}
	var nodes []string
	for _, in := range intents {
		line, err := json.Marshal(intentLine{in.Seq, in.CrawlerID, in.UserID, in.Instance, in.LeaseSeq})
		if err != nil {
			return fmt.Errorf("file: unable to encode intent %d: %w", in.Seq, err)
		}
		if _, ok := byNode[in.NodeID]; !ok {
			nodes = append(nodes, in.NodeID)
		}
		byNode[in.NodeID] = append(append(byNode[in.NodeID], line...), '\n')
	}
	if len(nodes) == 0 {
		return ctx.Err()
	}
	dir := filepath.Join(s.dir, journalDir)
	created, err := mkdir(dir)
	if err != nil {
		return err
	}
	if created {
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	for _, id := range nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		path, err := s.journalPath(id)
		if err != nil {
			return err
		}
		_, fresh, err := appendLines(path, byNode[id])
		if err != nil {
			return err
		}
		if fresh {
			if err := syncDir(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// Recover reads the node's intents after afterSeq and counts, in their
// crawlers' files, the comments stored under each.
func (s *Store) Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error) {
	path, err := s.journalPath(nodeID)
	if err != nil {
		return nil, err
	}
	intents := map[uint64]*api.Increment{}
	var crawlers []int64
	if _, err := scanLines(path, 0, func(line []byte) {
		var in intentLine
		if json.Unmarshal(line, &in) != nil || in.Seq <= afterSeq {
			return
		}
		if _, ok := intents[in.Seq]; !ok {
			intents[in.Seq] = &api.Increment{NodeID: nodeID, Seq: in.Seq, CrawlerID: in.CrawlerID, UserID: in.UserID, Instance: in.Instance, LeaseSeq: in.LeaseSeq}
			if !slices.Contains(crawlers, in.CrawlerID) {
				crawlers = append(crawlers, in.CrawlerID)
			}
		}
	}); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	for _, id := range crawlers {
		dir := s.crawlerDir(id)
		names, err := dayFiles(dir)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, err := scanLines(filepath.Join(dir, name), 0, func(line []byte) {
				var c api.Comment
				if json.Unmarshal(line, &c) != nil || c.NodeID != nodeID || c.CrawlerID != id {
					return
				}
				inc, ok := intents[c.IncSeq]
				if !ok || inc.CrawlerID != id {
					return
				}
				inc.Count++
				if c.PublishedAt.After(inc.Newest) {
					inc.Newest = c.PublishedAt
				}
			}); err != nil {
				return nil, err
			}
		}
	}
	out := make([]api.Increment, 0, len(intents))
	for _, inc := range intents {
		out = append(out, *inc)
	}
	slices.SortFunc(out, func(a, b api.Increment) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out, nil
}
