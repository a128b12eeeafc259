package node

import (
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestWithVoices_EveryAuthorAndLanguageOfEachIncrement(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 59, 30, 0, time.UTC)
	next := at.Add(time.Minute) // the next hour
	batch := []pending{
		{comment: api.Comment{IncSeq: 1, Author: "alice", AuthorID: "did:a", Lang: "en", FetchedAt: at, Engagement: &api.Engagement{Reposts: 2, Likes: 5}}},
		{comment: api.Comment{IncSeq: 2, Author: "bob", Lang: "de", FetchedAt: at}},
		{comment: api.Comment{IncSeq: 2, Author: "bob", Lang: "de", FetchedAt: at, Engagement: &api.Engagement{Likes: 1}}},
		{comment: api.Comment{IncSeq: 2, Author: "carol", AuthorID: "did:c", FetchedAt: next}},
		{comment: api.Comment{IncSeq: 3, Author: "dave", FetchedAt: at}}, // not fresh: stored before
	}
	shared := &api.IncrementAnalytics{Minutes: []api.MinuteActivity{{At: at.Truncate(time.Minute), Comments: 1}}}
	out := map[uint64]*api.IncrementAnalytics{1: shared, 2: {}, 3: {}}
	withVoices(batch, func(k int) bool { return k != 4 }, out, at)

	if shared.Authors != nil || shared.Langs != nil {
		t.Fatal("withVoices changed an analytics value it may share with other increments")
	}
	one := out[1]
	if len(one.Minutes) != 1 {
		t.Fatalf("increment 1 lost its activity: %+v", one)
	}
	if got := one.Authors; len(got) != 1 || len(got[0].Authors) != 1 ||
		got[0].Authors[0] != (api.AuthorTally{Author: "alice", AuthorID: "did:a", Comments: 1, Reposts: 2, Likes: 5}) || !got[0].At.Equal(at.Truncate(time.Hour)) {
		t.Fatalf("increment 1 authors %+v", got)
	}
	if got := one.Langs; len(got) != 1 || len(got[0].Langs) != 1 || got[0].Langs[0] != (api.LangTally{Lang: "en", Comments: 1}) {
		t.Fatalf("increment 1 languages %+v", got)
	}
	two := out[2]
	if len(two.Authors) != 2 || !two.Authors[0].At.Equal(at.Truncate(time.Hour)) || !two.Authors[1].At.Equal(next.Truncate(time.Hour)) {
		t.Fatalf("increment 2 authors by hour %+v", two.Authors)
	}
	if got := two.Authors[0].Authors; len(got) != 1 || got[0] != (api.AuthorTally{Author: "bob", Comments: 2, Likes: 1}) {
		t.Fatalf("increment 2, first hour: %+v", got)
	}
	if got := two.Authors[1].Authors; len(got) != 1 || got[0] != (api.AuthorTally{Author: "carol", AuthorID: "did:c", Comments: 1}) {
		t.Fatalf("increment 2, second hour: %+v", got)
	}
	if len(two.Langs) != 2 || two.Langs[0].Langs[0] != (api.LangTally{Lang: "de", Comments: 2}) || two.Langs[1].Langs[0] != (api.LangTally{Comments: 1}) {
		t.Fatalf("increment 2 languages %+v", two.Langs)
	}
	if out[3].Authors != nil || out[3].Langs != nil {
		t.Fatalf("a comment stored before was counted: %+v", out[3])
	}
}
