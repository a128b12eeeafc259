package rss

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// corpusDir holds recorded real feeds (SOURCES.md says where each comes
// from) and expected.json, what a user must see of each item, written by
// expect.py from the payloads independently of this package.
const corpusDir = "testdata/corpus"

// Feed formats, as the conformance report names them.
const (
	formatRSS  = "RSS 2.0"
	formatRDF  = "RSS 1.0 (RDF)"
	formatAtom = "Atom"
	formatJSON = "JSON Feed"
)

// corpus lists every recorded feed with the Content-Type headers it is
// served with: the one its publisher plausibly sent, and the ways real
// servers get it wrong (a charset in the header only, none at all, no
// Content-Type, a header that contradicts the document). Each must give
// the same comments.
var corpus = []struct {
	file, format string
	contentTypes []string
}{
	// ISO-8859-1 without an XML declaration: only the header (if any)
	// says so.
	{"miniflux-no_encoding_ISO-8859-1.xml", formatRSS, []string{"text/xml; charset=ISO-8859-1", "application/rss+xml", "", "application/rss+xml; charset=utf-8"}},
	// ISO-8859-1 in the declaration; the header agrees, says nothing, or
	// says UTF-8.
	{"miniflux-encoding_ISO-8859-1.xml", formatRSS, []string{"application/rss+xml; charset=ISO-8859-1", "application/rss+xml", "application/rss+xml; charset=utf-8"}},
	{"miniflux-encoding_WINDOWS-1251.xml", formatRSS, []string{"text/xml; charset=windows-1251", "text/xml; charset=utf-8"}},
	{"miniflux-koi8r.xml", formatRSS, []string{"application/rss+xml; charset=koi8-r", "application/rss+xml"}},
	{"miniflux-urdu_UTF8.xml", formatRSS, []string{"application/rss+xml; charset=utf-8", ""}},
	{"miniflux-large_rss.xml", formatRSS, []string{"application/rss+xml; charset=utf-8"}},
	// UTF-8 bytes under a declaration naming ISO-8859-1.
	{"miniflux-utf8-incorrect-prolog.xml", formatAtom, []string{"application/atom+xml", "application/atom+xml; charset=ISO-8859-1"}},
	// UTF-8 bytes under a declaration naming no known character set.
	{"miniflux-invalid-prolog.xml", formatAtom, []string{"application/atom+xml"}},
	{"miniflux-utf8.xml", formatAtom, []string{"application/atom+xml; charset=utf-8"}},
	{"miniflux-small_atom.xml", formatAtom, []string{"application/atom+xml; charset=utf-8"}},
	{"miniflux-large_atom.xml", formatAtom, []string{"application/atom+xml; charset=utf-8"}},
	{"gofeed-atom10_feed_entry_content_xhtml_inline_markup.xml", formatAtom, []string{"application/atom+xml"}},
	{"gofeed-atom10_feed_entry_content_xhtml_escaped_markup.xml", formatAtom, []string{"application/atom+xml"}},
	{"gofeed-atom10_feed_entry_summary_xhtml_inline_markup.xml", formatAtom, []string{"application/atom+xml"}},
	{"gofeed-atom10_feed_entry_title_xhtml_inline_markup.xml", formatAtom, []string{"application/atom+xml"}},
	// Links other than the page (only alternate, related, enclosure and
	// via are kept), enclosures, and authors as the feed writes them.
	{"gofeed-atom10_feed_entry_link_multiple.xml", formatAtom, []string{"application/atom+xml"}},
	{"gofeed-atom10_feed_entry_link_rel_enclosure.xml", formatAtom, []string{"application/atom+xml"}},
	{"gofeed-atom10_feed_entry_author_multiple.xml", formatAtom, []string{"application/atom+xml"}},
	{"gofeed-rss_channel_item_enclosure.xml", formatRSS, []string{"application/rss+xml"}},
	{"gofeed-rss_channel_item_author_emailAndName.xml", formatRSS, []string{"application/rss+xml"}},
	{"gofeed-rss_channel_item_author_nameAndEmail.xml", formatRSS, []string{"application/rss+xml"}},
	{"miniflux-rdf_UTF8.xml", formatRDF, []string{"application/rdf+xml; charset=utf-8", "application/rdf+xml; charset=iso-8859-1"}},
	{"gofeed-rdf_item_description_naked_markup.xml", formatRDF, []string{"application/rdf+xml"}},
	{"gofeed-rdf_item_links.xml", formatRDF, []string{"application/rdf+xml"}},
	{"gofeed-rdf_item_title_cdata_escaped_markup.xml", formatRDF, []string{"application/rdf+xml"}},
	// JSON Feed is UTF-8 whatever the header says.
	{"gofeed-version_json_10.json", formatJSON, []string{"application/feed+json", "application/json; charset=iso-8859-1"}},
	{"gofeed-version_json_11.json", formatJSON, []string{"application/feed+json"}},
	{"gofeed-json11_full.json", formatJSON, []string{"application/feed+json; charset=utf-8"}},
}

// expectedItem is one item of expected.json; a null published_at means
// the item has no date and is published when first fetched.
type expectedItem struct {
	ID          string     `json:"id"`
	Author      string     `json:"author"`
	Text        string     `json:"text"`
	URL         string     `json:"url"`
	Lang        string     `json:"lang"`
	PublishedAt *time.Time `json:"published_at"`
	Links       []string   `json:"links"`
}

// seenFields is how many fields of a comment CompareSeen checks: id,
// author, author_id, text, url, lang, published_at, reply_to, thread_id,
// links, repost_of, edited_at.
const seenFields = 12

// TestCorpus_EveryRecordedFeedStoredAsItsPublisherWroteIt serves every
// recorded feed from the local feed server under each of its Content-Type
// headers, fetches it with the real rss source into a real spawn node
// storing into a real file store, and checks every field a user sees of
// every stored comment against expected.json. Feeds carry no author ids
// (no format has a stable one), no threads and no reposts: those fields
// must stay empty.
func TestCorpus_EveryRecordedFeedStoredAsItsPublisherWroteIt(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected map[string][]expectedItem
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatal(err)
	}
	srv, base := feedserver.Start(t, feedserver.Options{})
	fn := spawntest.StartFileNode(t, api.SourceRSS, New(testOptions()))

	type served struct {
		file, format, contentType string
		crawler                   int64
		want                      []expectedItem
	}
	var all []served
	var specs []api.SubscriberSpec
	for _, c := range corpus {
		want, ok := expected[c.file]
		if !ok || len(want) == 0 {
			t.Fatalf("expected.json has no items for %s", c.file)
		}
		for i, ct := range c.contentTypes {
			s := served{file: c.file, format: c.format, contentType: ct, crawler: int64(len(all) + 1), want: want}
			path := srv.Record(fmt.Sprintf("%d-%s", i, c.file), feedserver.Recorded{Body: readCorpus(t, c.file), ContentType: ct})
			specs = append(specs, spawntest.Spec(api.SourceRSS, s.crawler, nil, base+path))
			all = append(all, s)
		}
	}
	spawntest.Subscribe(t, fn.Node, specs...)

	type tally struct{ feeds, feedItems, served, items, fields int }
	report := map[string]*tally{}
	wrong := 0
	for _, s := range all {
		t.Run(fmt.Sprintf("%s as %q", s.file, s.contentType), func(t *testing.T) {
			var got []api.Comment
			testkit.WaitFor(t, spawntest.WaitTimeout, "stored comments", func() bool {
				got = fn.Lines(t, s.crawler)
				return len(got) >= len(s.want)
			})
			want := seenOf(s.want, got)
			spawntest.CompareSeen(t, got, want)
			wrong += countWrong(got, want)
		})
		r := report[s.format]
		if r == nil {
			r = &tally{}
			report[s.format] = r
		}
		if s.contentType == corpusFirstType(s.file) {
			r.feeds++
			r.feedItems += len(s.want)
		}
		r.served++
		r.items += len(s.want)
		r.fields += len(s.want) * seenFields
	}
	for _, f := range []string{formatRSS, formatRDF, formatAtom, formatJSON} {
		r := report[f]
		t.Logf("%-14s %2d feeds (%3d items) served %2d ways: %4d items read and stored, %5d fields checked", f, r.feeds, r.feedItems, r.served, r.items, r.fields)
	}
	t.Logf("wrong = %d", wrong)
}

// corpusFirstType is the first Content-Type file is served with, so each
// feed counts once in the report.
func corpusFirstType(file string) string {
	for _, c := range corpus {
		if c.file == file {
			return c.contentTypes[0]
		}
	}
	return ""
}

func readCorpus(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seenOf turns expected items into what CompareSeen checks. An undated
// item is published when the spawn first fetched it, which only the
// stored comment knows.
func seenOf(want []expectedItem, got []api.Comment) []spawntest.Seen {
	out := make([]spawntest.Seen, 0, len(want))
	for _, w := range want {
		s := spawntest.Seen{ID: w.ID, Author: w.Author, Text: w.Text, URL: w.URL, Lang: w.Lang}
		if len(w.Links) > 0 {
			s.Links = w.Links
		}
		if w.PublishedAt != nil {
			s.PublishedAt = w.PublishedAt.UTC()
		} else if i := slices.IndexFunc(got, func(c api.Comment) bool { return c.ID == w.ID }); i >= 0 {
			s.PublishedAt = got[i].FetchedAt.UTC()
		}
		out = append(out, s)
	}
	return out
}

// countWrong counts the fields of the stored comments that differ from
// want, a missing or unexpected comment counting all its fields.
func countWrong(got []api.Comment, want []spawntest.Seen) int {
	byID := map[string]spawntest.Seen{}
	for _, c := range got {
		byID[c.ID] = spawntest.SeenOf(c)
	}
	n := 0
	for _, w := range want {
		g, ok := byID[w.ID]
		if !ok {
			n += seenFields
			continue
		}
		delete(byID, w.ID)
		gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
		for i := range gv.NumField() {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				n++
			}
		}
	}
	return n + len(byID)*seenFields
}

// TestCorpus_ListsEverySample keeps the corpus, expected.json and the
// directory in step: a sample added without expectations (or the other
// way round) fails here.
func TestCorpus_ListsEverySample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected map[string]json.RawMessage
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, c := range corpus {
		listed = append(listed, c.file)
		if _, err := os.Stat(filepath.Join(corpusDir, c.file)); err != nil {
			t.Errorf("corpus lists %s: %v", c.file, err)
		}
	}
	for file := range expected {
		if !slices.Contains(listed, file) {
			t.Errorf("expected.json has %s, which the corpus does not serve", file)
		}
	}
	sources, err := os.ReadFile(filepath.Join(corpusDir, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(corpusDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "miniflux-") || strings.HasPrefix(e.Name(), "gofeed-") {
			if !strings.Contains(string(sources), e.Name()) {
				t.Errorf("SOURCES.md does not say where %s comes from", e.Name())
			}
		}
	}
}
