package rss

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/htmltext"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// maxItemsPerFetch caps the items taken from one fetch of a feed. A feed
// document under the size cap can still list a hundred thousand items;
// handing them all over at once holds that many comments in memory and
// keeps the spawn matching for seconds. Real feeds list tens; a huge one
// gives its newest maxItemsPerFetch, and the rest are counted as skipped.
const maxItemsPerFetch = 1000

// newest returns the newest n items of a feed (by published, else updated
// time; undated ones count as oldest, and the feed's own order breaks
// ties), and how many it left out.
func newest(items []*gofeed.Item, n int) ([]*gofeed.Item, int) {
	items = slices.DeleteFunc(slices.Clone(items), func(gi *gofeed.Item) bool { return gi == nil })
	if len(items) <= n {
		return items, 0
	}
	claimed := func(gi *gofeed.Item) time.Time {
		t, _ := claimedDate(gi)
		return t
	}
	slices.SortStableFunc(items, func(a, b *gofeed.Item) int { return claimed(b).Compare(claimed(a)) })
	return items[:n:n], len(items) - n
}

// maxUnreadableDateBytes caps the unreadable date an item keeps.
const maxUnreadableDateBytes = 64

// claimedDate is when an item says it was published: its published date,
// else its updated one, as the feed parser read them, else as readDate
// reads what the feed wrote (localized names, a 12-hour clock, no zone).
// Zero when it says nothing; unreadable is then the date it wrote that
// could not be read, if any.
func claimedDate(gi *gofeed.Item) (t time.Time, unreadable string) {
	switch {
	case gi.PublishedParsed != nil && !gi.PublishedParsed.IsZero():
		return *gi.PublishedParsed, ""
	case gi.UpdatedParsed != nil && !gi.UpdatedParsed.IsZero():
		return *gi.UpdatedParsed, ""
	}
	for _, raw := range []string{gi.Published, gi.Updated} {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		if t, ok := readDate(raw); ok {
			return t, ""
		}
		if unreadable == "" {
			unreadable = printableDate(raw)
		}
	}
	return time.Time{}, unreadable
}

// printableDate is an unreadable date as a comment keeps it: one line of
// printable text, at most maxUnreadableDateBytes.
func printableDate(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return truncate(strings.Join(strings.Fields(s), " "), maxUnreadableDateBytes)
}

// skip counts the items a fetch left out, skipped of the listed ones.
func (f *feed) skip(skipped, listed int) {
	if skipped <= 0 {
		return
	}
	f.mu.Lock()
	f.health.Skipped += int64(skipped)
	f.mu.Unlock()
	f.logger.Warn("feed lists more items than one fetch takes, older ones skipped", "items", listed, "kept", listed-skipped, "skipped", skipped)
}

// items turns a parsed feed into source items, oldest first, one per id:
// at most maxItemsPerFetch, the newest.
func (f *feed) items(parsed *gofeed.Feed, now time.Time) []source.Item {
	byFeed := feedAuthor(parsed)
	lang := languageTag(parsed.Language)
	originalOf := originals(parsed)
	kept, skipped := newest(parsed.Items, maxItemsPerFetch)
	f.skip(skipped, len(parsed.Items))
	out := make([]source.Item, 0, len(kept))
	dup := make(map[string]bool, len(kept))
	for _, gi := range kept {
		if gi == nil {
			continue
		}
		id := itemID(gi)
		if dup[id] {
			continue
		}
		dup[id] = true
		e, ok := f.known[id]
		if !ok {
			e = &entry{firstSeen: now}
			f.known[id] = e
		}
		e.lastPoll = f.polls
		claimed, unreadable := claimedDate(gi)
		d := originalOf(gi)
		author := d.author
		if author == "" {
			author = personName(gi.Authors)
		}
		if author == "" {
			author = byFeed
		}
		text := d.text
		if !d.plain {
			text = itemText(gi)
		}
		itemLang := lang
		if d.lang != "" {
			itemLang = d.lang
		}
		page := source.WebURL(f.resolve(d.url))
		out = append(out, source.Item{
			ID:             id,
			Author:         author,
			Text:           truncate(text, maxTextBytes),
			URL:            page,
			Links:          f.webLinks(d.links, d.url, page),
			Lang:           itemLang,
			PublishedAt:    source.PublishedAt(claimed, e.firstSeen),
			UnreadableDate: unreadable,
			FetchedAt:      now.UTC(),
		})
	}
	// Feeds list newest first; reversing before the stable sort keeps
	// undated items (all first seen now) in publication order.
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b source.Item) int { return a.PublishedAt.Compare(b.PublishedAt) })
	return out
}

// forget bounds the remembered ids: when there are too many, it drops the
// ones absent from the feed for longest. Ids in the current feed are never
// dropped, or their items would be emitted again.
func (f *feed) forget(feedLen int) {
	limit := max(f.opts.SeenLimit, 2*feedLen)
	if len(f.known) <= limit {
		return
	}
	type aged struct {
		id   string
		poll uint64
	}
	var old []aged
	for id, e := range f.known {
		if e.lastPoll != f.polls {
			old = append(old, aged{id, e.lastPoll})
		}
	}
	slices.SortFunc(old, func(a, b aged) int { return compareUint(a.poll, b.poll) })
	// Drop to 90% of the limit, so pruning does not run on every poll.
	target := limit - limit/10
	for _, a := range old {
		if len(f.known) <= target {
			break
		}
		delete(f.known, a.id)
	}
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *feed) resolve(link string) string {
	link = strings.TrimSpace(link)
	if link == "" {
		return ""
	}
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	return f.base.ResolveReference(u).String()
}

// itemID is stable for the same upstream item: its GUID (hashed when it is
// too long to keep), else a hash of its link, else a hash of its title and
// date, else a hash of its text.
func itemID(gi *gofeed.Item) string {
	if g := strings.TrimSpace(gi.GUID); g != "" {
		return source.ItemID(g)
	}
	if l := strings.TrimSpace(gi.Link); l != "" {
		return hashID(l)
	}
	if gi.Title != "" || gi.Published != "" || gi.Updated != "" {
		return hashID(gi.Title + "\n" + gi.Published + "\n" + gi.Updated)
	}
	return hashID(gi.Description + "\n" + gi.Content)
}

func hashID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func personName(ps []*gofeed.Person) string {
	for _, p := range ps {
		if p == nil {
			continue
		}
		if n := strings.TrimSpace(p.Name); n != "" {
			return n
		}
		if e := strings.TrimSpace(p.Email); e != "" {
			return e
		}
	}
	return ""
}

// itemText is the title and the body (the full content when the feed has
// it, else the description) as plain text.
func itemText(gi *gofeed.Item) string {
	title := htmltext.Text(gi.Title)
	body := htmltext.Text(gi.Content)
	if body == "" {
		body = htmltext.Text(gi.Description)
	}
	return joinText(title, body)
}

// joinText is an item's title and body, each on its own line; one of
// them alone when the other is empty or says the same.
func joinText(title, body string) string {
	switch {
	case body == "" || body == title:
		return title
	case title == "":
		return body
	}
	return title + "\n" + body
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxLangBytes caps a language tag; real ones are a few bytes.
const maxLangBytes = 35

// languageTag is a feed's declared language as a lowercased tag ("en-us"),
// or "" when it is absent or not a plausible tag.
func languageTag(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > maxLangBytes {
		return ""
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return strings.ReplaceAll(s, "_", "-")
}
