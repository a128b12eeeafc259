package rss

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

// feedDoc is a feed document of items numbered from..to in that order,
// item i published i minutes after a base time.
func feedDoc(atom bool, from, to int) []byte {
	var b bytes.Buffer
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 1
	if to < from {
		step = -1
	}
	if atom {
		b.WriteString(`<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>`)
	} else {
		b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><items-note>x</items-note>`)
	}
	for i := from; ; i += step {
		at := base.Add(time.Duration(i) * time.Minute)
		if atom {
			fmt.Fprintf(&b, "<entry><id>g%d</id><title>n</title><updated>%s</updated></entry>\n", i, at.Format(time.RFC3339))
		} else {
			fmt.Fprintf(&b, "<item><guid>g%d</guid><pubDate>%s</pubDate></item>\n", i, at.Format(time.RFC1123Z))
		}
		if i == to {
			break
		}
	}
	if atom {
		b.WriteString(`</feed>`)
	} else {
		b.WriteString(`<ttl>5</ttl></channel></rss>`)
	}
	return b.Bytes()
}

func TestTrimItems_KeepsTheNewestEnd(t *testing.T) {
	cases := []struct {
		name        string
		doc         []byte
		wantSkipped int
		wantIDs     []string // sorted
	}{
		{"rss newest first", feedDoc(false, 10, 1), 7, []string{"g10", "g8", "g9"}},
		{"rss oldest first", feedDoc(false, 1, 10), 7, []string{"g10", "g8", "g9"}},
		{"atom newest first", feedDoc(true, 10, 1), 7, []string{"g10", "g8", "g9"}},
		{"atom oldest first", feedDoc(true, 1, 10), 7, []string{"g10", "g8", "g9"}},
		{"small feed untouched", feedDoc(false, 3, 1), 0, []string{"g1", "g2", "g3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, skipped := trimItems(tc.doc, 3)
			if skipped != tc.wantSkipped {
				t.Fatalf("skipped %d, want %d", skipped, tc.wantSkipped)
			}
			p := gofeed.NewParser()
			p.KeepOriginalFeed = true
			parsed, err := p.Parse(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("the cut document does not parse: %v\n%s", err, out)
			}
			var ids []string
			for _, it := range parsed.Items {
				ids = append(ids, it.GUID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tc.wantIDs) {
				t.Fatalf("kept %v, want %v", ids, tc.wantIDs)
			}
			if parsed.FeedType == "rss" && (parsed.Title != "t" || feedTTL(parsed) != 5*time.Minute) {
				t.Fatalf("the channel around the items was not kept: title %q, ttl %s", parsed.Title, feedTTL(parsed))
			}
		})
	}
}
