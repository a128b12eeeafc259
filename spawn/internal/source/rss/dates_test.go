package rss

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// dateCase is one line of a testdata/dates file: a date as a feed wrote
// it and the instant it names ("unreadable" when it names none).
type dateCase struct {
	source, text, want string
}

func readDateCases(t *testing.T, name string, textCol, wantCol int) []dateCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "dates", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dateCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") || sc.Text() == "" {
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		out = append(out, dateCase{source: cols[0], text: cols[textCol], want: cols[wantCol]})
	}
	if err := sc.Err(); err != nil || len(out) == 0 {
		t.Fatalf("%s: %d cases, %v", name, len(out), err)
	}
	return out
}

// checkDates reads every case and counts what is read wrong: a date read
// as another instant, one read that names none, one unread that names one.
func checkDates(t *testing.T, cases []dateCase) {
	t.Helper()
	wrong := 0
	for _, c := range cases {
		got, ok := readDate(c.text)
		switch {
		case c.want == "unreadable" && ok:
			t.Errorf("%s %q: read as %s, want unreadable", c.source, c.text, got.Format(time.RFC3339))
			wrong++
		case c.want == "unreadable":
		case !ok:
			t.Errorf("%s %q: unreadable, want %s", c.source, c.text, c.want)
			wrong++
		default:
			want, err := time.Parse(time.RFC3339, c.want)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(want) {
				t.Errorf("%s %q: read as %s, want %s", c.source, c.text, got.Format(time.RFC3339), c.want)
				wrong++
			}
		}
	}
	t.Logf("%d dates read, %d wrong", len(cases), wrong)
}

// TestReadDate_RealFeeds reads dates real feeds carried: localized day and
// month names, 12-hour clocks, missing zones and other irregular forms.
func TestReadDate_RealFeeds(t *testing.T) {
	checkDates(t, readDateCases(t, "realworld.tsv", 1, 2))
}

// TestReadDate_LocalizedStrftime reads the dates a localized strftime
// writes, every month of twenty European locales in four formats, the
// names taken from glibc's locale data.
func TestReadDate_LocalizedStrftime(t *testing.T) {
	checkDates(t, readDateCases(t, "strftime.tsv", 2, 3))
}

// TestReadDate_RefusesWhatNamesNoDate keeps text that names no date, or an
// impossible one, unread rather than guessed.
func TestReadDate_RefusesWhatNamesNoDate(t *testing.T) {
	for _, s := range []string{
		"", "yesterday", "Foo, 99 Bar 2018", "30 Feb 2020", "32 Dec 2020 10:00", "Dec 2020",
		"16 Dec 2023 25:00", "16 Dec 2023 10:61", "16 Dec 2023 13:00 PM", "16 Dec 1066",
		"16 Dec 2023 10:00 Mars/Olympus", "16 Dec 2023 10:00 11:00", "16 Dec 2023 +9999",
		strings.Repeat("16 Dec 2023 ", 20), "\xff16 Dec 2023",
	} {
		if got, ok := readDate(s); ok {
			t.Errorf("readDate(%q) = %s, want unreadable", s, got)
		}
	}
}

// TestFeed_LocalizedAndIrregularDatesAreRead serves items dated as real
// feeds date them (Portuguese and French names, a 12-hour clock, no zone,
// an Atom entry's localized updated date) and one whose date names none:
// each is published when its feed says, and the unreadable one when first
// fetched, saying what its feed wrote.
func TestFeed_LocalizedAndIrregularDatesAreRead(t *testing.T) {
	rssDoc := `<rss version="2.0"><channel><title>t</title>
<item><title>pt</title><guid>pt</guid><pubDate>Seg, 24 Set 2018 10:00:00 -0300</pubDate></item>
<item><title>fr</title><guid>fr</guid><pubDate>mer, 16 nov 2022 08:00:00 +0100</pubDate></item>
<item><title>pm</title><guid>pm</guid><pubDate>Sat, Dec 16 2023 02:02:33 PM</pubDate></item>
<item><title>odd</title><guid>odd</guid><pubDate>Seg, 99 Xyz 2018</pubDate></item>
</channel></rss>`
	atomDoc := `<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><id>urn:t</id><updated>2020-01-01T00:00:00Z</updated>
<entry><title>de</title><id>urn:de</id><updated>Do, 29 Mär 2018 00:00:00 +0200</updated></entry>
</feed>`
	want := map[string]struct {
		at         string
		unreadable string
	}{
		"pt":     {at: "2018-09-24T13:00:00Z"},
		"fr":     {at: "2022-11-16T07:00:00Z"},
		"pm":     {at: "2023-12-16T14:02:33Z"},
		"odd":    {unreadable: "Seg, 99 Xyz 2018"},
		"urn:de": {at: "2018-03-28T22:00:00Z"},
	}
	rssFeed, atomFeed := newFeedServer(t, rssDoc), newFeedServer(t, atomDoc)
	started := time.Now()
	_, rec := start(t, testOptions(), rssFeed.URL)
	_, atomRec := start(t, testOptions(), atomFeed.URL)
	testkit.WaitFor(t, waitDeadline, "both feeds", func() bool { return rec.batchCount() >= 1 && atomRec.batchCount() >= 1 })
	items := append(rec.all(), atomRec.all()...)
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d", len(items), len(want))
	}
	for _, it := range items {
		w, ok := want[it.ID]
		switch {
		case !ok:
			t.Errorf("unexpected item %s", it.ID)
		case w.unreadable != "":
			if it.UnreadableDate != w.unreadable || it.PublishedAt.Before(started.Add(-time.Second)) || it.PublishedAt.After(time.Now()) {
				t.Errorf("%s: published %s, unreadable date %q; want the fetch time and %q", it.ID, it.PublishedAt, it.UnreadableDate, w.unreadable)
			}
		default:
			at, _ := time.Parse(time.RFC3339, w.at)
			if !it.PublishedAt.Equal(at) || it.UnreadableDate != "" {
				t.Errorf("%s: published %s (unreadable date %q), want %s", it.ID, it.PublishedAt.UTC().Format(time.RFC3339), it.UnreadableDate, w.at)
			}
		}
	}
}

// FuzzReadDate reads anything a feed could write as a date: never a panic,
// and a date read is a real one, read the same way twice.
func FuzzReadDate(f *testing.F) {
	for _, s := range []string{"Seg, 24 Set 2018 10:00:00 -0300", "Sat, Dec 16 2023 02:02:33 PM", "mar., 01 déc. 2020 16:11:02 +0000",
		"Thu Nov 12 2020 17:00:00 GMT+0000 (Coordinated", "2020-11-08T16:20:00-05:00Z", "1520932969", "24 de setembro de 2018"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := readDate(s)
		if !ok {
			return
		}
		if y := got.Year(); y < 1900 || y > 2200 {
			t.Fatalf("readDate(%q) = %s: a year out of range", s, got)
		}
		if again, _ := readDate(s); !again.Equal(got) {
			t.Fatalf("readDate(%q) read %s, then %s", s, got, again)
		}
	})
}

// TestFeed_UnreadableDateIsSaidOnTheStoredComment runs a feed through a
// real spawn storing JSON Lines: the comment of an item whose date cannot
// be read is published at the fetch time and says what the feed wrote; a
// readable date leaves the field out.
func TestFeed_UnreadableDateIsSaidOnTheStoredComment(t *testing.T) {
	doc := `<rss version="2.0"><channel><title>t</title>
<item><title>odd</title><guid>odd</guid><pubDate>Seg, 99 Xyz 2018</pubDate></item>
<item><title>pt</title><guid>pt</guid><pubDate>Seg, 24 Set 2018 10:00:00 -0300</pubDate></item>
</channel></rss>`
	srv, base := feedserver.Start(t, feedserver.Options{})
	path := srv.Record("dates.xml", feedserver.Recorded{Body: []byte(doc), ContentType: "application/rss+xml"})
	fn := spawntest.StartFileNode(t, api.SourceRSS, New(testOptions()))
	started := time.Now()
	spawntest.Subscribe(t, fn.Node, spawntest.Spec(api.SourceRSS, 1, nil, base+path))
	var got []api.Comment
	testkit.WaitFor(t, spawntest.WaitTimeout, "both comments stored", func() bool { got = fn.Lines(t, 1); return len(got) == 2 })
	for _, c := range got {
		switch c.ID {
		case "odd":
			if c.UnreadableDate != "Seg, 99 Xyz 2018" || c.PublishedAt.Before(started.Add(-time.Second)) {
				t.Errorf("odd: published %s, unreadable_date %q; want the fetch time and what the feed wrote", c.PublishedAt, c.UnreadableDate)
			}
		case "pt":
			if c.UnreadableDate != "" || !c.PublishedAt.Equal(time.Date(2018, 9, 24, 13, 0, 0, 0, time.UTC)) {
				t.Errorf("pt: published %s, unreadable_date %q; want 2018-09-24T13:00:00Z and none", c.PublishedAt, c.UnreadableDate)
			}
		default:
			t.Errorf("unexpected comment %s", c.ID)
		}
	}
}
