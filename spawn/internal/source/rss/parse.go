package rss

import (
	"bytes"

	"github.com/mmcdole/gofeed"
)

// parseDocument turns a fetched feed document into a parsed feed: read as
// UTF-8 whatever its character set (decodeDocument), cut to the newest
// maxItemsPerFetch items (trimItems), then parsed. It returns how many
// items the cut left out and how the document was decoded.
func parseDocument(body []byte, contentType string) (*gofeed.Feed, int, decoded, error) {
	dec := decodeDocument(body, contentType)
	p := gofeed.NewParser()
	p.KeepOriginalFeed = true
	doc, skipped := trimItems(dec.body, maxItemsPerFetch)
	parsed, err := p.Parse(bytes.NewReader(doc))
	if err != nil && skipped > 0 {
		// The cut went wrong (a start tag inside CDATA?): take it all.
		skipped = 0
		parsed, err = p.Parse(bytes.NewReader(dec.body))
	}
	if err != nil {
		return nil, 0, dec, err
	}
	return parsed, skipped, dec, nil
}

// noteCharset logs, once per change, a feed whose declared character set
// its bytes contradict or whose bytes are invalid in it: what the parser
// read is still stored, and the publisher may want to know.
func (f *feed) noteCharset(dec decoded) {
	note := dec.corrected
	if dec.replaced {
		note += "|replaced"
	}
	if note == f.charsetNote {
		return
	}
	f.charsetNote = note
	switch {
	case dec.corrected != "":
		f.logger.Info("feed character set overruled by its bytes", "declared", dec.corrected, "read_as", dec.charset, "invalid_bytes_replaced", dec.replaced)
	case dec.replaced:
		f.logger.Info("feed bytes invalid in its character set replaced", "charset", dec.charset, "from", dec.from)
	}
}
