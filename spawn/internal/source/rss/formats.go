package rss

import (
	"slices"
	"strings"

	"github.com/mmcdole/gofeed"
	gofeedatom "github.com/mmcdole/gofeed/atom"
	gofeedjson "github.com/mmcdole/gofeed/json"
	gofeedrss "github.com/mmcdole/gofeed/rss"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/htmltext"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// original is what an item's own format says about it that the parser's
// universal item blurs: its page, its URLs in document order, and for
// JSON Feed its plain text, author and language.
type original struct {
	// url is the item's page: RSS's first <link>, Atom's first
	// alternate link, JSON Feed's url (else external_url).
	url string
	// links are the item's URLs as the format lists them: RSS <link>s
	// and <enclosure>s; Atom links to other resources (alternate,
	// related, enclosure, via; not self, edit or replies, which point
	// at the feed's own documents); JSON Feed url, external_url and
	// attachments.
	links []string
	// plain says text holds the item's text already: JSON Feed's title,
	// summary and content_text are plain text (HTML is allowed in
	// content_html only), so they are not read as HTML.
	plain bool
	text  string
	// author is the item's own author as written (RSS's and JSON Feed's:
	// the parser loses names it cannot split from an address); lang the
	// item's own language.
	author, lang string
}

// atomLinkRels are the Atom link relations an item's links keep: other
// resources the entry is about. A missing rel means alternate.
var atomLinkRels = map[string]bool{"alternate": true, "related": true, "enclosure": true, "via": true}

// ianaRelPrefix is how a link relation may also be written in full.
const ianaRelPrefix = "http://www.iana.org/assignments/relation/"

// originals returns, for the items of a parsed feed, what their own
// format said (parsed with KeepOriginalFeed). The universal items are the
// original ones translated one to one, in order.
func originals(parsed *gofeed.Feed) func(*gofeed.Item) original {
	index := make(map[*gofeed.Item]int, len(parsed.Items))
	for i, gi := range parsed.Items {
		index[gi] = i
	}
	feedDoc := parsed.OriginalFeed()
	return func(gi *gofeed.Item) original {
		i, ok := index[gi]
		switch of := feedDoc.(type) {
		case *gofeedrss.Feed:
			if ok && of != nil && len(of.Items) == len(parsed.Items) && of.Items[i] != nil {
				return rssOriginal(of.Items[i], gi)
			}
		case *gofeedatom.Feed:
			if ok && of != nil && len(of.Entries) == len(parsed.Items) && of.Entries[i] != nil {
				return atomOriginal(of.Entries[i], gi)
			}
		case *gofeedjson.Feed:
			if ok && of != nil && len(of.Items) == len(parsed.Items) && of.Items[i] != nil {
				return jsonOriginal(of, of.Items[i])
			}
		}
		return universalOriginal(gi)
	}
}

func rssOriginal(it *gofeedrss.Item, gi *gofeed.Item) original {
	s := original{url: gi.Link, links: append([]string(nil), it.Links...), author: rssItemAuthor(it)}
	if len(it.Links) > 0 {
		// The parser keeps the last <link>; the first is the item's.
		s.url = it.Links[0]
	}
	for _, e := range it.Enclosures {
		if e != nil {
			s.links = append(s.links, e.URL)
		}
	}
	return s
}

func atomOriginal(e *gofeedatom.Entry, gi *gofeed.Item) original {
	s := original{url: gi.Link}
	for _, l := range e.Links {
		if l == nil {
			continue
		}
		rel := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(l.Rel)), ianaRelPrefix)
		if rel == "" || atomLinkRels[rel] {
			s.links = append(s.links, l.Href)
		}
	}
	return s
}

func jsonOriginal(doc *gofeedjson.Feed, it *gofeedjson.Item) original {
	s := original{url: it.URL, links: []string{it.URL, it.ExternalURL}, plain: true}
	if s.url == "" {
		s.url = it.ExternalURL
	}
	if it.Attachments != nil {
		for _, a := range *it.Attachments {
			s.links = append(s.links, a.URL)
		}
	}
	body := htmltext.Text(it.ContentHTML)
	if body == "" {
		body = plainText(it.ContentText)
	}
	if body == "" {
		body = plainText(it.Summary)
	}
	s.text = joinText(plainText(it.Title), body)
	// JSON Feed 1.1 has authors, 1.0 author; an item without its own
	// has the feed's.
	s.author = jsonAuthor(it.Authors, it.Author)
	if s.author == "" {
		s.author = jsonAuthor(doc.Authors, doc.Author)
	}
	s.lang = languageTag(it.Language)
	return s
}

func jsonAuthor(authors []*gofeedjson.Author, author *gofeedjson.Author) string {
	for _, a := range append(authors, author) {
		if a != nil {
			if n := strings.TrimSpace(a.Name); n != "" {
				return n
			}
		}
	}
	return ""
}

// rssItemAuthor is an RSS item's author as written: <author> (an e-mail
// address, by convention "address (Name)"), else dc:author, dc:creator,
// itunes:author.
func rssItemAuthor(it *gofeedrss.Item) string {
	raw := it.Author
	if raw == "" && it.DublinCoreExt != nil {
		raw = firstNonEmpty(it.DublinCoreExt.Author, it.DublinCoreExt.Creator)
	}
	if raw == "" && it.ITunesExt != nil {
		raw = it.ITunesExt.Author
	}
	return personText(raw)
}

// feedAuthor is the author a feed gives its items that name none: for
// RSS the channel's managingEditor, webMaster, dc:author, dc:creator or
// itunes:author as written; for Atom and JSON Feed the feed's author.
func feedAuthor(parsed *gofeed.Feed) string {
	rf, ok := parsed.OriginalFeed().(*gofeedrss.Feed)
	if !ok || rf == nil {
		return personName(parsed.Authors)
	}
	raw := firstNonEmpty([]string{rf.ManagingEditor, rf.WebMaster})
	if raw == "" && rf.DublinCoreExt != nil {
		raw = firstNonEmpty(rf.DublinCoreExt.Author, rf.DublinCoreExt.Creator)
	}
	if raw == "" && rf.ITunesExt != nil {
		raw = rf.ITunesExt.Author
	}
	return personText(raw)
}

func firstNonEmpty(lists ...[]string) string {
	for _, l := range lists {
		for _, v := range l {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}

// personText is the name in an RSS person ("address (Name)", "Name
// (address)", "Name <address>"), else the text as written: "Jane Doe
// (Reuters)" stays whole, and an address alone is the address.
func personText(s string) string {
	s = strings.TrimSpace(s)
	if open := strings.LastIndexByte(s, '('); open > 0 && strings.HasSuffix(s, ")") {
		before, inside := strings.TrimSpace(s[:open]), strings.TrimSpace(s[open+1:len(s)-1])
		switch {
		case isAddress(before) && inside != "":
			return inside
		case isAddress(inside) && before != "":
			return before
		}
	}
	if open := strings.LastIndexByte(s, '<'); open > 0 && strings.HasSuffix(s, ">") && isAddress(s[open+1:len(s)-1]) {
		return strings.TrimSpace(s[:open])
	}
	return s
}

// isAddress reports whether s looks like an e-mail address.
func isAddress(s string) bool {
	at := strings.IndexByte(s, '@')
	return at > 0 && at < len(s)-1 && !strings.ContainsAny(s, " \t()<>")
}

// universalOriginal is what the universal item says, for a format not told
// apart above.
func universalOriginal(gi *gofeed.Item) original {
	s := original{url: gi.Link, links: append([]string{gi.Link}, gi.Links...)}
	for _, e := range gi.Enclosures {
		if e != nil {
			s.links = append(s.links, e.URL)
		}
	}
	return s
}

// maxLinks caps the links kept of one item; real items carry a handful.
const maxLinks = 64

// webLinks resolves an item's links against the feed's URL and keeps the
// http(s) ones, in order, without repeats; nil when none is left. The
// item's page, raw as the feed gives it, is already resolved as page.
func (f *feed) webLinks(links []string, raw, page string) []string {
	var out []string
	for _, l := range links {
		if len(out) == maxLinks {
			break
		}
		u := page
		if l != raw {
			u = source.WebURL(f.resolve(l))
		}
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// plainText is text that is not HTML, with runs of white space folded
// into one space as HTML's are.
func plainText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
