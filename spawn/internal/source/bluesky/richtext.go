package bluesky

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// What a post shows beyond its text, as the record carries it.
const (
	// linkFeature is a rich-text facet feature that links a span of the
	// text to a URI; index.byteStart and index.byteEnd are UTF-8 byte
	// offsets into the text, end exclusive.
	linkFeature = "app.bsky.richtext.facet#link"
	// The embeds a post may carry.
	embedExternal        = "app.bsky.embed.external"
	embedImages          = "app.bsky.embed.images"
	embedVideo           = "app.bsky.embed.video"
	embedRecord          = "app.bsky.embed.record"
	embedRecordWithMedia = "app.bsky.embed.recordWithMedia"
	// maxFacets bounds the facets read from one post: the app writes one
	// per link, mention or tag of a 300-grapheme post.
	maxFacets = 256
	// maxExtraLines bounds the lines an embed adds to a post's text (a
	// card's title and URI, four images, a quote).
	maxExtraLines = 16
)

// facet is one rich-text annotation of a post's text.
type facet struct {
	Index struct {
		ByteStart int `json:"byteStart"`
		ByteEnd   int `json:"byteEnd"`
	} `json:"index"`
	Features []struct {
		Type string `json:"$type"`
		URI  string `json:"uri"`
	} `json:"features"`
}

// embed is a post's embed: a link card, images, a video, a quoted record,
// or a quoted record with media.
type embed struct {
	Type     string `json:"$type"`
	External *struct {
		URI   string `json:"uri"`
		Title string `json:"title"`
	} `json:"external"`
	Images []struct {
		Alt string `json:"alt"`
	} `json:"images"`
	// Alt is a video's alt text.
	Alt string `json:"alt"`
	// Record is the quoted record: a strong reference ({uri, cid}) in
	// app.bsky.embed.record, an app.bsky.embed.record ({record: {uri,
	// cid}}) in recordWithMedia.
	Record *struct {
		URI    string `json:"uri"`
		Record *struct {
			URI string `json:"uri"`
		} `json:"record"`
	} `json:"record"`
	// Media is recordWithMedia's images, video or link card.
	Media *embed `json:"media"`
}

// postContent is what a user sees of a post: its words with every link
// facet's full URI in place of the shortened span the app shows, then —
// after a blank line, each on a line of its own — the link card's title,
// the card's URI unless the words already hold it, every image's (and a
// video's) alt text, and the quoted post's web address (another quoted
// record's at:// URI). links are the facets' URIs in text order, the card's
// URI and the quoted post's web address: web URLs only, without repeats.
func postContent(p *postRecord) (text string, links []string) {
	text, links = expandLinks(p.Text, p.Facets)
	var extra []string
	addLink := func(u string) {
		if u = source.WebURL(u); u != "" && !slices.Contains(links, u) {
			links = append(links, u)
		}
	}
	var walk func(e *embed, depth int)
	walk = func(e *embed, depth int) {
		if e == nil || depth > 1 {
			return
		}
		switch e.Type {
		case embedExternal:
			if x := e.External; x != nil {
				extra = appendLine(extra, x.Title)
				if u := source.WebURL(x.URI); u != "" && !strings.Contains(text, u) {
					extra = appendLine(extra, u)
				}
				addLink(x.URI)
			}
		case embedImages:
			for _, img := range e.Images {
				extra = appendLine(extra, img.Alt)
			}
		case embedVideo:
			extra = appendLine(extra, e.Alt)
		case embedRecord:
			if r := e.Record; r != nil {
				ref := quoteRef(r.URI)
				extra = appendLine(extra, ref)
				addLink(ref)
			}
		case embedRecordWithMedia:
			walk(e.Media, depth+1)
			if r := e.Record; r != nil && r.Record != nil {
				ref := quoteRef(r.Record.URI)
				extra = appendLine(extra, ref)
				addLink(ref)
			}
		}
	}
	walk(p.Embed, 0)
	if len(extra) == 0 {
		return text, links
	}
	if len(extra) > maxExtraLines {
		extra = extra[:maxExtraLines]
	}
	tail := strings.Join(extra, "\n")
	if strings.TrimSpace(text) == "" {
		return tail, links
	}
	return text + "\n\n" + tail, links
}

// appendLine adds s, trimmed, to lines unless it is empty.
func appendLine(lines []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" && utf8.ValidString(s) {
		lines = append(lines, s)
	}
	return lines
}

// quoteRef is how a quoted record is shown: a post's web address, any
// other record's at:// URI; "" for a URI that is neither.
func quoteRef(uri string) string {
	uri = atURI(uri)
	if uri == "" {
		return ""
	}
	did, rest, ok := strings.Cut(strings.TrimPrefix(uri, IDPrefix), "/")
	if !ok {
		return uri
	}
	collection, rkey, ok := strings.Cut(rest, "/")
	if collection == PostCollection && ok && validDID(did) && validRKey(rkey) {
		return fmt.Sprintf(profileURL, did, rkey)
	}
	return uri
}

// expandLinks puts each link facet's URI in place of the span of text it
// annotates, and returns the URIs that are web URLs in text order. A facet
// whose offsets fall outside the text, are not on character boundaries, or
// overlap an earlier one is ignored (the service relays what clients
// wrote, and some write such facets); so is a link that is not printable.
func expandLinks(text string, facets []facet) (string, []string) {
	type span struct {
		start, end int
		uri        string
	}
	var spans []span
	for i, f := range facets {
		if i >= maxFacets {
			break
		}
		start, end := f.Index.ByteStart, f.Index.ByteEnd
		if start < 0 || end <= start || end > len(text) || !boundary(text, start) || !boundary(text, end) {
			continue
		}
		for _, ft := range f.Features {
			if ft.Type == linkFeature && ft.URI != "" && len(ft.URI) <= source.MaxURLBytes && printable(ft.URI) {
				spans = append(spans, span{start, end, ft.URI})
				break
			}
		}
	}
	if len(spans) == 0 {
		return text, nil
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var b strings.Builder
	var links []string
	at := 0
	for _, s := range spans {
		if s.start < at {
			continue // overlaps the previous link
		}
		b.WriteString(text[at:s.start])
		b.WriteString(s.uri)
		at = s.end
		if u := source.WebURL(s.uri); u != "" && !slices.Contains(links, u) {
			links = append(links, u)
		}
	}
	b.WriteString(text[at:])
	return b.String(), links
}

// boundary reports whether byte offset i of s starts a character (or is
// its end).
func boundary(s string, i int) bool {
	return i == len(s) || utf8.RuneStart(s[i])
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
