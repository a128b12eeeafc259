package source

import (
	"strings"
	"testing"
	"time"
)

func TestItemID(t *testing.T) {
	long := strings.Repeat("g", 1<<20)
	cases := []struct {
		name, in string
		kept     bool
	}{
		{"short guid kept", "tag:example.com,2026:1", true},
		{"at uri kept", "at://did:plc:abc/app.bsky.feed.post/3k", true},
		{"1 MiB guid hashed", long, false},
		{"control character hashed", "id\x00x", false},
		{"invalid utf-8 hashed", "id\xff", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ItemID(tc.in)
			if tc.kept != (got == tc.in) {
				t.Fatalf("ItemID kept=%v, want kept=%v (got %.40q)", got == tc.in, tc.kept, got)
			}
			if len(got) > MaxIDBytes {
				t.Fatalf("id of %d bytes, cap %d", len(got), MaxIDBytes)
			}
			if ItemID(tc.in) != got {
				t.Fatal("id not stable")
			}
		})
	}
	if ItemID(long) == ItemID(long+"x") {
		t.Fatal("different long ids hash alike")
	}
}

func TestWebURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://example.com/a?b=c", "https://example.com/a?b=c"},
		{" http://example.com/ ", "http://example.com/"},
		{"javascript:alert(1)", ""},
		{"JavaScript:alert(1)", ""},
		{"data:text/html,<b>x</b>", ""},
		{"ftp://example.com/file", ""},
		{"httP://0", "http://0"},
		{"HTTPS://Example.com/A", "https://Example.com/A"},
		{"/relative/path", ""},
		{"http:///nohost", ""},
		{"https://example.com/" + strings.Repeat("a", MaxURLBytes), ""},
		{"https://example.com/\x07", ""},
		{"", ""},
	}
	for _, tc := range cases {
		if got := WebURL(tc.in); got != tc.want {
			t.Errorf("WebURL(%.60q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPublishedAt(t *testing.T) {
	seen := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		claimed time.Time
		want    time.Time
	}{
		{"plausible kept", seen.Add(-time.Hour), seen.Add(-time.Hour)},
		{"year 0", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), seen},
		{"unix zero", time.Unix(0, 0), seen},
		{"zero", time.Time{}, seen},
		{"future", seen.Add(24 * time.Hour), seen},
		{"earliest kept", EarliestPublished, EarliestPublished},
		{"other zone to utc", seen.Add(-time.Hour).In(time.FixedZone("x", 3600)), seen.Add(-time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PublishedAt(tc.claimed, seen)
			if !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Fatalf("got %v, want %v UTC", got, tc.want)
			}
		})
	}
}
