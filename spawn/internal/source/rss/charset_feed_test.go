package rss

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// serveRecorded serves body with contentType from a local feed server and
// runs the rss source on it until the test ends.
func serveRecorded(t *testing.T, name string, body []byte, contentType string) (*feed, *recorder) {
	t.Helper()
	srv, base := feedserver.Start(t, feedserver.Options{})
	path := srv.Record(name, feedserver.Recorded{Body: body, ContentType: contentType})
	return start(t, testOptions(), base+path)
}

// waitItem waits for the emitted item whose URL is url.
func waitItem(t *testing.T, rec *recorder, f *feed, url string) source.Item {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("feed error: %v", f.Err())
		}
	}()
	var it source.Item
	testkit.WaitFor(t, waitDeadline, "the item of "+url, func() bool {
		for _, x := range rec.all() {
			if x.URL == url {
				it = x
				return true
			}
		}
		return false
	})
	if err := f.Err(); err != nil {
		t.Fatalf("feed error: %v", err)
	}
	return it
}

// TestFeed_CharsetOnlyInTheHeaderIsRead fetches a real ISO-8859-1 feed
// without an XML declaration whose server names the charset only in
// Content-Type. The parser alone would take the bytes for UTF-8 and fail
// on every fetch ("invalid UTF-8"); the feed must be stored as clean text.
func TestFeed_CharsetOnlyInTheHeaderIsRead(t *testing.T) {
	f, rec := serveRecorded(t, "psy.xml", readCorpus(t, "miniflux-no_encoding_ISO-8859-1.xml"), "text/xml; charset=ISO-8859-1")
	it := waitItem(t, rec, f, "https://le-cercle-psy.scienceshumaines.com/perturbateurs-endocriniens-quels-effets-sur-le-cerveau_sh_39995")
	want := "Perturbateurs endocriniens : quels effets sur le cerveau ?\nSi leur impact semble discret au premier abord, nombre d'études montrent que les perturbateurs endocriniens pourraient être à l'origine de troubles neuro-développementaux chez l'enfant."
	if it.Text != want {
		t.Fatalf("text %q, want %q", it.Text, want)
	}
	testkit.WaitFor(t, waitDeadline, "all 10 items", func() bool { return len(rec.all()) == 10 })
}

// TestFeed_LyingPrologIsCorrected fetches a feed whose bytes are UTF-8
// under an XML declaration naming ISO-8859-1. Decoding as declared stores
// mojibake ("CafÃ©"); the bytes win.
func TestFeed_LyingPrologIsCorrected(t *testing.T) {
	body := readCorpus(t, "miniflux-utf8-incorrect-prolog.xml")
	if !bytes.Contains(body, []byte(`encoding="ISO-8859-1"`)) || !bytes.Contains(body, []byte("Caf\xc3\xa9")) {
		t.Fatal("the sample should declare ISO-8859-1 and hold UTF-8 bytes")
	}
	_, rec := serveRecorded(t, "lying.xml", body, "application/atom+xml")
	testkit.WaitFor(t, waitDeadline, "the entry", func() bool { return len(rec.all()) == 1 })
	if got := rec.all()[0].Text; got != "Café" {
		t.Fatalf("text %q, want %q", got, "Café")
	}
}

// TestFeed_InvalidBytesDoNotLoseTheFeed fetches a real UTF-8 feed with two
// bytes that are no UTF-8 in one title. The parser alone refuses the whole
// document; the bad bytes must become U+FFFD and every item be stored.
func TestFeed_InvalidBytesDoNotLoseTheFeed(t *testing.T) {
	body := readCorpus(t, "miniflux-rdf_UTF8.xml")
	body = bytes.Replace(body, []byte("<title>Mega-Deal: IBM"), []byte("<title>Mega-Deal:\xff\xfe IBM"), 1)
	f, rec := serveRecorded(t, "heise.rdf", body, "application/rdf+xml")
	it := waitItem(t, rec, f, "https://www.heise.de/newsticker/meldung/Mega-Deal-IBM-uebernimmt-Red-Hat-4205582.html?wt_mc=rss.ho.beitrag.rdf")
	if !strings.HasPrefix(it.Text, "Mega-Deal:\uFFFD IBM übernimmt Red Hat\n") {
		t.Fatalf("text %q", it.Text)
	}
	testkit.WaitFor(t, waitDeadline, "all 60 items", func() bool { return len(rec.all()) == 60 })
}

// TestFeed_CharsetCorrectionLoggedOnce logs a feed whose declaration its
// bytes contradict once, not on every poll.
func TestFeed_CharsetCorrectionLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	f := &feed{logger: slog.New(slog.NewTextHandler(&logs, nil))}
	dec := decodeDocument(readCorpus(t, "miniflux-utf8-incorrect-prolog.xml"), "")
	for range 3 {
		f.noteCharset(dec)
	}
	if n := strings.Count(logs.String(), "feed character set overruled by its bytes"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
	f.noteCharset(decodeDocument(readCorpus(t, "miniflux-utf8.xml"), ""))
	f.noteCharset(dec)
	if n := strings.Count(logs.String(), "feed character set overruled by its bytes"); n != 2 {
		t.Fatalf("logged %d times after the feed changed twice, want 2", n)
	}
}
