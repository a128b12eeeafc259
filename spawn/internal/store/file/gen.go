package file

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Generations. A file replaced by a rewrite (an amendment, an edit, a
// removal, a compaction) may get back the inode number of the file it
// replaced, so neither its inode nor its size tells a reader that what it
// read before is gone. Every rewrite therefore bumps a generation kept
// next to the files it rewrites (DIR/<crawler>/.gen, DIR/_tombstones/gen),
// under the directory's lock; a reader that finds another generation than
// the one it indexed reads the files again from their start.

// genName is the generation file of a crawler directory (a dot file, so no
// listing of day files sees it).
const genName = ".gen"

// readGen reads a generation; a missing file is generation 0.
func readGen(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("file: unable to read %s: %w", path, err)
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("file: %s holds %q, not a generation", path, bytes.TrimSpace(b))
	}
	return v, nil
}

// bumpGen raises a generation by one and returns it. The caller holds the
// directory's lock.
func bumpGen(path string) (uint64, error) {
	g, err := readGen(path)
	if err != nil {
		return 0, err
	}
	g++
	tmp := filepath.Join(filepath.Dir(path), tmpPrefix+filepath.Base(path)+tmpSuffix)
	if err := writeSynced(tmp, []byte(strconv.FormatUint(g, 10)+"\n")); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("file: unable to write %s: %w", path, err)
	}
	return g, nil
}
