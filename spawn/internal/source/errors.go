package source

import (
	"errors"
	"maps"
	"slices"
	"sync"
)

// recentKept is how many past errors an ErrorSet remembers for diagnostics.
const recentKept = 32

// ErrorSet is the current errors of a data source made of parts (its
// connections, its queries), which Err joins, and the recent ones for
// diagnostics. Setting a part's error to nil clears it. The zero value is
// ready to use and safe for concurrent use.
type ErrorSet struct {
	mu     sync.Mutex
	cur    map[string]error
	recent []error
}

// Set records (or, with nil, clears) a part's error.
func (s *ErrorSet) Set(part string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.cur, part)
		return
	}
	if s.cur == nil {
		s.cur = map[string]error{}
	}
	s.cur[part] = err
	s.recent = append(s.recent, err)
	if over := len(s.recent) - recentKept; over > 0 {
		s.recent = append(s.recent[:0], s.recent[over:]...)
	}
}

// Err joins the current errors, ordered by part; nil when there are none.
func (s *ErrorSet) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := slices.Sorted(maps.Keys(s.cur))
	errs := make([]error, len(parts))
	for i, p := range parts {
		errs[i] = s.cur[p]
	}
	return errors.Join(errs...)
}

// ErrOf joins the current errors of the parts keep selects, ordered by
// part; nil when there are none.
func (s *ErrorSet) ErrOf(keep func(part string) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(s.cur)) {
		if keep(p) {
			errs = append(errs, s.cur[p])
		}
	}
	return errors.Join(errs...)
}

// Clear drops the current errors of the parts drop selects.
func (s *ErrorSet) Clear(drop func(part string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.cur, func(part string, _ error) bool { return drop(part) })
}

// Saw reports whether one of the recent errors, cleared or not, matches
// target.
func (s *ErrorSet) Saw(target error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.recent, func(err error) bool { return errors.Is(err, target) })
}
