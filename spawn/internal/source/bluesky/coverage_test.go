package bluesky

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// step is one post read, and who should get it: "*" for everyone, a
// comma list of query uuids, or "" for nobody.
type step struct {
	pos  int64
	uri  string
	want string
}

func routeAll(t *testing.T, c *coverage, steps []step) {
	t.Helper()
	for _, s := range steps {
		all, uuids := c.route(s.uri, s.pos)
		got := strings.Join(uuids, ",")
		if all {
			got = "*"
		}
		if got != s.want {
			t.Errorf("post %s at %d went to %q, want %q", s.uri, s.pos, got, s.want)
		}
	}
}

func TestCoverage_Routes(t *testing.T) {
	const overlap = 10
	cases := []struct {
		name    string
		cursors []map[string]int64 // successive subscriber sets; steps run after the first
		steps   [][]step           // steps after each set
		behind  []int64            // what each set reports
		connect []int64            // where a reconnect starts after each set; 0 for none
	}{
		{
			name:    "live, then the resume overlap repeats nothing",
			cursors: []map[string]int64{{"a": 0, "b": 0}},
			steps: [][]step{{
				{100, "p1", "*"}, {110, "p2", "*"}, {120, "p3", "*"},
				// reconnect from 120-10
				{110, "p2", ""}, {120, "p3", ""}, {130, "p4", "*"},
			}},
			behind:  []int64{0},
			connect: []int64{0},
		},
		{
			name:    "a post that reached the service late is still delivered at the seam",
			cursors: []map[string]int64{{"a": 0}},
			steps: [][]step{{
				{100, "p1", "*"}, {120, "p3", "*"},
				{115, "p2", "*"}, {120, "p3", ""}, {130, "p4", "*"},
			}},
			behind:  []int64{0},
			connect: []int64{0},
		},
		{
			name:    "a late subscriber with an older cursor is replayed alone",
			cursors: []map[string]int64{{"a": 0}, {"a": 0, "b": 105}},
			steps: [][]step{
				{{100, "p1", "*"}, {110, "p2", "*"}, {120, "p3", "*"}},
				// reconnect from 105-10
				{{100, "p1", ""}, {110, "p2", "b"}, {120, "p3", "b"}, {130, "p4", "*"}},
			},
			behind:  []int64{0, 105},
			connect: []int64{0, 95},
		},
		{
			name:    "a subscriber whose cursor is ahead skips what it had",
			cursors: []map[string]int64{{"a": 0}, {"a": 0, "b": 200}},
			steps: [][]step{
				{{100, "p1", "*"}},
				{{150, "p2", "a"}, {200, "p3", "a"}, {210, "p4", "*"}},
			},
			behind:  []int64{0, 0},
			connect: []int64{0, 0},
		},
		{
			name:    "subscribers leaving end their replay",
			cursors: []map[string]int64{{"a": 0}, {"a": 0, "b": 105}, {"a": 0}},
			steps: [][]step{
				{{100, "p1", "*"}, {120, "p3", "*"}},
				{{110, "p2", "b"}},
				{{120, "p3", ""}, {130, "p4", "*"}},
			},
			behind:  []int64{0, 105, 0},
			connect: []int64{0, 95, 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoverage(overlap, 100)
			c.connected(0)
			for i, cursors := range tc.cursors {
				if got := c.set(cursors); got != tc.behind[i] {
					t.Errorf("set %d: behind %d, want %d", i, got, tc.behind[i])
				}
				if tc.connect[i] > 0 {
					c.connected(tc.connect[i])
				}
				routeAll(t, c, tc.steps[i])
			}
		})
	}
}

func TestCoverage_ResumesFromTheOldestNeed(t *testing.T) {
	c := newCoverage(10, 100)
	if got := c.resumeFrom(); got != 0 {
		t.Errorf("fresh coverage resumes from %d, want the live tail", got)
	}
	c.set(map[string]int64{"a": 0, "b": 500})
	if got := c.resumeFrom(); got != 500 {
		t.Errorf("resume from %d, want b's cursor", got)
	}
	c.route("p", 600)
	c.set(map[string]int64{"a": 0, "b": 500, "c": 300})
	if got := c.resumeFrom(); got != 300 {
		t.Errorf("resume from %d, want c's cursor", got)
	}
	if got := c.afters(); got["a"] != 600 || got["c"] != 300 {
		t.Errorf("afters %v", got)
	}
}

func TestCoverage_RecentIsBounded(t *testing.T) {
	c := newCoverage(10, 50)
	c.set(map[string]int64{"a": 0})
	for i := range 1000 {
		c.route(fmt.Sprint("p", i), int64(1000+i))
	}
	if len(c.recent) > 50 || len(c.order) > 50 {
		t.Errorf("remembers %d uris (%d in order)", len(c.recent), len(c.order))
	}
	// Only the overlap's worth (2×10 µs) is needed at one post a µs.
	if !slices.ContainsFunc(c.order, func(p recentPost) bool { return p.uri == "p999" }) || len(c.order) > 21 {
		t.Errorf("recent %v", c.order)
	}
}
