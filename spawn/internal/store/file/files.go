package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// appendLines appends data (whole lines) to a file with one write on an
// O_APPEND descriptor and fsyncs it. A partial final line left by a crash
// is cut first; a failed write is cut back, so the file holds the lines
// whole or not at all. The caller holds the directory lock. It returns the
// file's new size and whether the file was created.
func appendLines(path string, data []byte) (int64, bool, error) {
	_, statErr := os.Stat(path)
	// Read access lets cutPartialLine look at the tail; writes still
	// land at the end, whatever the offset.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return 0, false, fmt.Errorf("file: unable to open %s: %w", path, err)
	}
	defer f.Close()
	size, err := cutPartialLine(f)
	if err != nil {
		return 0, false, err
	}
	if _, err := f.Write(data); err != nil {
		// Take back whatever part of the write landed.
		_ = f.Truncate(size)
		return 0, false, fmt.Errorf("file: unable to write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(size)
		return 0, false, fmt.Errorf("file: unable to sync %s: %w", path, err)
	}
	return size + int64(len(data)), errors.Is(statErr, os.ErrNotExist), nil
}

// cutPartialLine truncates f after its last newline and returns the new
// size. f must be open for reading and writing.
func cutPartialLine(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("file: unable to stat %s: %w", f.Name(), err)
	}
	size := info.Size()
	end, err := lastNewline(f, size)
	if err != nil {
		return 0, err
	}
	if end == size {
		return size, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("file: unable to cut the partial line of %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("file: unable to sync %s: %w", f.Name(), err)
	}
	return end, nil
}

// lastNewline returns the offset just past the last '\n' among the first
// size bytes of the file (0 when there is none), reading backwards.
func lastNewline(f *os.File, size int64) (int64, error) {
	buf := make([]byte, tailChunk)
	for end := size; end > 0; {
		start := max(end-tailChunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("file: unable to read %s: %w", f.Name(), err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// scanLines calls fn with every complete line of a file from offset on and
// returns how many bytes the complete lines took. A final line without its
// newline is left out: it is a write in progress or a crash's remains.
func scanLines(path string, offset int64, fn func(line []byte)) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("file: unable to open %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("file: unable to seek %s: %w", path, err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var n int64
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(full) <= maxLineBytes {
				line, err = r.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return n, fmt.Errorf("file: %s has a line longer than %d bytes at offset %d", path, maxLineBytes, offset+n)
			}
			return n, fmt.Errorf("file: unable to read %s: %w", path, err)
		}
		n += int64(len(line))
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			fn(trimmed)
		}
	}
}

// dayFiles lists a crawler directory's day files, oldest day first. A
// missing directory has none.
func dayFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("file: unable to read %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && dayFile.MatchString(e.Name()) {
			if _, err := time.Parse(dayLayout, strings.TrimSuffix(e.Name(), fileExt)); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// mkdir creates dir if needed and reports whether it did.
func mkdir(dir string) (bool, error) {
	err := os.Mkdir(dir, dirPerm)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	return false, fmt.Errorf("file: unable to create %s: %w", dir, err)
}

// lockDir takes an exclusive flock on a directory and returns its release.
func lockDir(dir string) (func(), error) { return flockDir(dir, syscall.LOCK_EX) }

// lockDirShared takes a shared flock on a directory: readers that must not
// see a rewrite half done take it, writers the exclusive one.
func lockDirShared(dir string) (func(), error) { return flockDir(dir, syscall.LOCK_SH) }

func flockDir(dir string, how int) (func(), error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("file: unable to open %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(d.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("file: unable to lock %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}

// inodeOf is a file's inode number, 0 when the system does not say.
func inodeOf(info os.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// inode is the inode number of the file at path, 0 when unknown.
func inode(path string) uint64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return inodeOf(info)
}

// syncDir makes a directory's new entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("file: unable to open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("file: unable to sync %s: %w", dir, err)
	}
	return nil
}
