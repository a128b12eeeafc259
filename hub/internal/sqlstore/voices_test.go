package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// voiceComment is one comment as the voices count it.
type voiceComment struct {
	crawler        int64
	at             time.Time
	author, id     string
	lang           string
	reposts, likes int64
}

// voiceInc is an increment of comments, with their authors and languages
// per hour as a spawn reports them.
func voiceInc(seq uint64, user int64, cs []voiceComment) api.Increment {
	a := &api.IncrementAnalytics{}
	for _, c := range cs {
		at := c.at.Truncate(time.Hour)
		a.Authors = append(a.Authors, api.HourAuthors{At: at, Authors: []api.AuthorTally{{Author: c.author, AuthorID: c.id, Comments: 1, Reposts: c.reposts, Likes: c.likes}}})
		a.Langs = append(a.Langs, api.HourLangs{At: at, Langs: []api.LangTally{{Lang: c.lang, Comments: 1}}})
		a.Minutes = append(a.Minutes, api.MinuteActivity{At: c.at.Truncate(time.Minute), Comments: 1})
	}
	return api.Increment{NodeID: "node-v", Seq: seq, CrawlerID: cs[0].crawler, UserID: user, Count: int64(len(cs)), Analytics: a}
}

// wantAuthors counts comments by author the slow way, most first (ties by
// key), n at most.
func wantAuthors(cs []voiceComment, keep func(voiceComment) bool, n int) []api.AuthorCount {
	by := map[string]*api.AuthorCount{}
	for _, c := range cs {
		if !keep(c) {
			continue
		}
		k := cmp.Or(c.id, c.author)
		a := by[k]
		if a == nil {
			a = &api.AuthorCount{Author: c.author, AuthorID: c.id}
			by[k] = a
		}
		a.Comments++
		a.Engagement.Reposts += c.reposts
		a.Engagement.Likes += c.likes
	}
	var out []api.AuthorCount
	for _, a := range by {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b api.AuthorCount) int {
		return cmp.Or(cmp.Compare(b.Comments, a.Comments), cmp.Compare(cmp.Or(a.AuthorID, a.Author), cmp.Or(b.AuthorID, b.Author)))
	})
	return out[:min(n, len(out))]
}

func TestStore_TopAuthorsExactAndAppliedOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c1 := mustCrawler(t, s, newCrawler(u.ID, "q1"))
		c2 := mustCrawler(t, s, newCrawler(u.ID, "q22"))
		now := time.Now().UTC()
		r := mrand.New(mrand.NewPCG(3, 4))
		langs := []string{"en", "en", "de", "ja", ""}
		var all []voiceComment
		var incs []api.Increment
		for seq := uint64(1); seq <= 60; seq++ {
			crawler := c1.ID
			if seq%3 == 0 {
				crawler = c2.ID
			}
			// Within the last three hours, and some two days ago (outside
			// the 24h window).
			at := now.Add(-time.Duration(r.IntN(180)) * time.Minute)
			switch {
			case seq%10 == 0:
				at = now.Add(-48 * time.Hour)
			case seq%7 == 0: // out of the 7-day window: the week must leave it
				at = now.Add(-7*24*time.Hour - 3*time.Hour)
			}
			var cs []voiceComment
			for range 1 + r.IntN(5) {
				k := r.IntN(12)
				c := voiceComment{crawler: crawler, at: at, author: fmt.Sprintf("handle%d", k), lang: langs[r.IntN(len(langs))],
					reposts: int64(r.IntN(3)), likes: int64(r.IntN(9))}
				if k%4 != 0 { // a quarter of the authors have no id at their source
					c.id = fmt.Sprintf("did:plc:%d", k)
				}
				cs = append(cs, c)
			}
			all = append(all, cs...)
			incs = append(incs, voiceInc(seq, u.ID, cs))
		}
		var deliveries []api.Increment
		for _, inc := range incs {
			for range 1 + r.IntN(3) {
				deliveries = append(deliveries, inc)
			}
		}
		r.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
		for len(deliveries) > 0 {
			k := min(len(deliveries), 1+r.IntN(6))
			if _, err := s.ApplyIncrements(ctx, deliveries[:k]); err != nil {
				t.Fatal(err)
			}
			deliveries = deliveries[k:]
		}
		since := now.Add(-24 * time.Hour)
		inWindow := func(c voiceComment) bool { return !c.at.Before(since.Truncate(time.Hour)) }
		got, folded, err := s.TopAuthors(ctx, c1.ID, since, 5)
		if err != nil {
			t.Fatal(err)
		}
		want := wantAuthors(all, func(c voiceComment) bool { return c.crawler == c1.ID && inWindow(c) }, 5)
		if !slices.Equal(got, want) || folded != 0 {
			t.Fatalf("top authors of crawler %d:\n got %+v (folded %d)\nwant %+v", c1.ID, got, folded, want)
		}
		got, _, err = s.UserTopAuthors(ctx, u.ID, since, 50)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantAuthors(all, inWindow, 50); !slices.Equal(got, want) {
			t.Fatalf("top authors of user %d:\n got %+v\nwant %+v", u.ID, got, want)
		}
		// Seven days hold the older comments too, not those before: read
		// from the week's sums, which leave the hours before it.
		week := now.Add(-7 * 24 * time.Hour)
		inWeek := func(c voiceComment) bool { return !c.at.Before(week.Truncate(time.Hour)) }
		for _, id := range []int64{c1.ID, c2.ID} {
			got, _, err = s.TopAuthors(ctx, id, week, 50)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantAuthors(all, func(c voiceComment) bool { return c.crawler == id && inWeek(c) }, 50); !slices.Equal(got, want) {
				t.Fatalf("7d top authors of crawler %d:\n got %+v\nwant %+v", id, got, want)
			}
		}
		got, _, err = s.UserTopAuthors(ctx, u.ID, week, 50)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantAuthors(all, inWeek, 50); !slices.Equal(got, want) {
			t.Fatalf("7d top authors of user %d:\n got %+v\nwant %+v", u.ID, got, want)
		}
		var from authorWeekFromRow
		if err := s.db.Take(&from).Error; err != nil || !from.Since.Equal(weekStart(week.Add(7*24*time.Hour))) ||
			!from.Until.Equal(now.Truncate(time.Hour)) {
			t.Fatalf("the week counts %v to %v (%v), want %v to %v", from.Since, from.Until, err, weekStart(week.Add(7*24*time.Hour)), now.Truncate(time.Hour))
		}
		// The week's sums equal the hours' for every author: a later
		// increment and a repeated advance change nothing else.
		// One in the open hour, and one late for an hour the week has
		// added already.
		late := []voiceComment{{crawler: c1.ID, at: now, author: "newcomer", lang: "en", likes: 3},
			{crawler: c1.ID, at: now.Add(-2 * time.Hour), author: "handle1", id: "did:plc:1", lang: "en", likes: 1}}
		all = append(all, late...)
		if _, err := s.ApplyIncrements(ctx, []api.Increment{voiceInc(1000, u.ID, late)}); err != nil {
			t.Fatal(err)
		}
		if err := s.MoveAuthorWeek(ctx, weekStart(now), now); err != nil {
			t.Fatal(err)
		}
		got, _, err = s.TopAuthors(ctx, c1.ID, week, 500)
		if err != nil {
			t.Fatal(err)
		}
		slow, _, err := s.topAuthors(ctx, "crawler_id = ?", c1.ID, week, 500)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantAuthors(all, func(c voiceComment) bool { return c.crawler == c1.ID && inWeek(c) }, 500); !slices.Equal(got, want) || !slices.Equal(slow, want) {
			t.Fatalf("after a late increment, 7d top authors of crawler %d:\n week  %+v\n hours %+v\n want  %+v", c1.ID, got, slow, want)
		}

		b, err := s.Breakdown(ctx, c1.ID, since)
		if err != nil {
			t.Fatal(err)
		}
		byLang := map[string]int64{}
		var total int64
		for _, c := range all {
			if c.crawler == c1.ID && inWindow(c) {
				byLang[c.lang]++
				total++
			}
		}
		if b.Comments != total || len(b.Sources) != 1 || b.Sources[0].Key != c1.Source || b.Sources[0].Comments != total || b.Sources[0].Share != 1 {
			t.Fatalf("breakdown of crawler %d: %+v, want %d comments of %s", c1.ID, b, total, c1.Source)
		}
		var shares float64
		for i, l := range b.Languages {
			if l.Comments != byLang[l.Key] {
				t.Fatalf("breakdown of crawler %d: %d comments in %q, want %d", c1.ID, l.Comments, l.Key, byLang[l.Key])
			}
			if i > 0 && l.Comments > b.Languages[i-1].Comments {
				t.Fatalf("languages not most first: %+v", b.Languages)
			}
			shares += l.Share
		}
		if len(b.Languages) != len(byLang) || shares < 0.999 || shares > 1.001 {
			t.Fatalf("breakdown of crawler %d: languages %+v, want %v", c1.ID, b.Languages, byLang)
		}
	})
}

func TestStore_AuthorsFoldPastTheBound(t *testing.T) {
	defer func(keep, at int) { maxAuthorsPerHour, compactAuthorsAt = keep, at }(maxAuthorsPerHour, compactAuthorsAt)
	maxAuthorsPerHour, compactAuthorsAt = 4, 6
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q1"))
		at := time.Now().UTC().Add(-time.Minute)
		// Author k writes k+1 comments; seven authors pass the bound of six.
		var cs []voiceComment
		for k := range 7 {
			for range k + 1 {
				cs = append(cs, voiceComment{crawler: c.ID, at: at, author: fmt.Sprintf("a%d", k), likes: 1})
			}
		}
		if _, err := s.ApplyIncrements(ctx, []api.Increment{voiceInc(1, u.ID, cs)}); err != nil {
			t.Fatal(err)
		}
		got, folded, err := s.TopAuthors(ctx, c.ID, at.Add(-time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		// The four with the most comments are kept, exact; the 1+2+3 of
		// the others are folded; in the week's sums too.
		want := wantAuthors(cs, func(voiceComment) bool { return true }, 4)
		if !slices.Equal(got, want) || folded != 6 {
			t.Fatalf("after the fold: %+v (folded %d), want %+v (folded 6)", got, folded, want)
		}
		got, folded, err = s.TopAuthors(ctx, c.ID, time.Now().Add(-7*24*time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || folded != 6 {
			t.Fatalf("the week after the fold: %+v (folded %d), want %+v (folded 6)", got, folded, want)
		}
	})
}

func TestStore_ListCrawlersMatchingNameQueryOrID(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		named := func(name, q string) Crawler {
			c := newCrawler(u.ID, q)
			c.Name = name
			return mustCrawler(t, s, c)
		}
		acme := named("Acme launch", "acme")
		named("Globex 100% recall", "globex")
		rust := named("", "rustlang")
		ids := func(cs []Crawler) []int64 {
			var out []int64
			for _, c := range cs {
				out = append(out, c.ID)
			}
			return out
		}
		for _, tc := range []struct {
			match string
			want  []int64
		}{
			{"ACME", []int64{acme.ID}},
			{"rustl", []int64{rust.ID}},
			{"100%", []int64{acme.ID + 1}},
			{"%", []int64{acme.ID + 1}}, // a wildcard is a character like any other
			{"_", nil},
			{fmt.Sprint(rust.ID), []int64{rust.ID}},
		} {
			got, err := s.ListCrawlersMatching(ctx, 0, 10, tc.match)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("match %q: %v, want %v", tc.match, ids(got), tc.want)
			}
		}
		if err := ValidCrawlerName(" padded"); err == nil {
			t.Error("a name with a leading space was accepted")
		}
		c := newCrawler(u.ID, "q")
		c.Name = "bell\a"
		if _, err := s.CreateCrawler(ctx, c); err == nil {
			t.Error("a name with a control character was stored")
		}
	})
}
