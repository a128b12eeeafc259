package rss

import (
	"bytes"
	"time"

	"github.com/mmcdole/gofeed"
)

// trimItems cuts a feed document that lists more than n items down to n of
// them before it is parsed: parsing costs time and memory per item (a
// hundred thousand items take seconds and a gigabyte of allocations), and
// only n would be kept anyway. Publishers list items newest first, some
// oldest first; the two ends' dates tell which, and the newest end is kept.
// It returns the document to parse and how many items it left out. The cut
// is made on the items' start tags (<item> for RSS, <entry> for Atom), so
// it needs no parse; a document it cannot cut cleanly is returned whole,
// and the caller parses the original should a cut one fail to parse.
func trimItems(doc []byte, n int) ([]byte, int) {
	tag, closing := []byte("<item"), []byte("</item>")
	starts := tagStarts(doc, tag, n)
	if len(starts) == 0 {
		tag, closing = []byte("<entry"), []byte("</entry>")
		starts = tagStarts(doc, tag, n)
	}
	if len(starts) <= n {
		return doc, 0
	}
	starts = tagStarts(doc, tag, -1)
	end := bytes.LastIndex(doc, closing)
	if end < starts[len(starts)-1] {
		return doc, 0
	}
	end += len(closing)
	head, tail := doc[:starts[0]], doc[end:]
	first := itemDate(head, doc[starts[0]:starts[1]], tail)
	last := itemDate(head, doc[starts[len(starts)-1]:end], tail)
	keep := doc[starts[0]:starts[n]] // the first n
	if last.After(first) {
		keep = doc[starts[len(starts)-n]:end] // the last n: listed oldest first
	}
	out := make([]byte, 0, len(head)+len(keep)+len(tail))
	out = append(append(append(out, head...), keep...), tail...)
	return out, len(starts) - n
}

// tagStarts returns the offsets of the start tags named by open ("<item")
// in doc: stopping past n+1 of them when n >= 0.
func tagStarts(doc, open []byte, n int) []int {
	var out []int
	for off := 0; n < 0 || len(out) <= n; {
		i := bytes.Index(doc[off:], open)
		if i < 0 {
			break
		}
		at := off + i
		off = at + len(open)
		if off < len(doc) {
			switch doc[off] {
			case '>', ' ', '\t', '\r', '\n', '/':
				out = append(out, at)
			}
		}
	}
	return out
}

// itemDate is the published (else updated) time of one item, parsed alone
// within the document's head and tail; zero when it has none.
func itemDate(head, item, tail []byte) time.Time {
	doc := make([]byte, 0, len(head)+len(item)+len(tail))
	doc = append(append(append(doc, head...), item...), tail...)
	parsed, err := gofeed.NewParser().Parse(bytes.NewReader(doc))
	if err != nil || len(parsed.Items) == 0 {
		return time.Time{}
	}
	switch gi := parsed.Items[0]; {
	case gi.PublishedParsed != nil:
		return *gi.PublishedParsed
	case gi.UpdatedParsed != nil:
		return *gi.UpdatedParsed
	}
	return time.Time{}
}
