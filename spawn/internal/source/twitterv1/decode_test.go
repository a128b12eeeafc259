package twitterv1

import (
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/twitterserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

func sameEngagement(a, b *api.Engagement) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// TestDecodeLine_Engagement reads retweet_count and favorite_count off a
// stream message: a retweet takes the counts of the tweet it shares, and a
// missing or null count leaves the engagement unknown, not zero.
func TestDecodeLine_Engagement(t *testing.T) {
	user := `"user":{"id_str":"1","screen_name":"gopher"}`
	cases := []struct {
		name string
		line string
		want *api.Engagement
	}{
		{"counts", `{"id_str":"10","text":"#golang",` + user + `,"retweet_count":4,"favorite_count":25}`,
			&api.Engagement{Reposts: 4, Likes: 25}},
		{"a new tweet has zero", `{"id_str":"11","text":"x",` + user + `,"retweet_count":0,"favorite_count":0}`, &api.Engagement{}},
		{"a retweet carries the shared tweet's counts",
			`{"id_str":"13","text":"RT @orig: x",` + user + `,"retweet_count":40,"favorite_count":0,` +
				`"retweeted_status":{"id_str":"12","text":"x","user":{"screen_name":"orig"},"retweet_count":40,"favorite_count":120}}`,
			&api.Engagement{Reposts: 40, Likes: 120}},
		{"no counts", `{"id_str":"14","text":"x",` + user + `}`, nil},
		{"a null like count", `{"id_str":"15","text":"x",` + user + `,"retweet_count":3,"favorite_count":null}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := decodeLine([]byte(tc.line))
			if err != nil || msg.kind != kindTweet {
				t.Fatalf("decode: kind %v, err %v", msg.kind, err)
			}
			it, err := tweetItem(msg.tweet, msg.engagement, newMatcher([]string{"golang"}), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !sameEngagement(it.Engagement, tc.want) {
				t.Fatalf("engagement %+v, want %+v", it.Engagement, tc.want)
			}
		})
	}
}

// TestTracker_CarriesEngagement streams tweets with counts from the local
// Twitter, then has one found by the backfill's search: each item carries
// the counts Twitter sent, a retweet those of the tweet it shares.
func TestTracker_CarriesEngagement(t *testing.T) {
	srv, base := newServer(t)
	tr, rec := start(t, testOptions(base), spec(1, "golang"))
	testkit.WaitFor(t, waitDeadline, "stream", func() bool { return srv.Open() == 1 })
	plain := srv.Publish(twitterserver.Tweet{Text: "golang news", Retweets: 3, Likes: 9})
	fresh := srv.Publish(twitterserver.Tweet{Text: "golang just now"})
	rt := srv.Publish(twitterserver.Tweet{Text: "golang everywhere", RetweetOf: "orig", Retweets: 40, Likes: 120})
	testkit.WaitFor(t, waitDeadline, "the streamed tweets", func() bool { return rec.Has(tweetID(plain), tweetID(fresh), tweetID(rt)) })

	srv.Stall(true)
	found := srv.Publish(twitterserver.Tweet{Text: "golang while the stream is silent", Retweets: 2, Likes: 5})
	testkit.WaitFor(t, waitDeadline, "a stall to be detected", func() bool { return tr.stats.stalls.Load() >= 1 })
	srv.Stall(false)
	testkit.WaitFor(t, waitDeadline, "the tweet through the backfill", func() bool { return rec.Has(tweetID(found)) })
	if tr.stats.backfilled.Load() < 1 {
		t.Fatal("the tweet did not come from a backfill")
	}

	for _, tc := range []struct {
		tw   twitterserver.Tweet
		want api.Engagement
	}{
		{plain, api.Engagement{Reposts: 3, Likes: 9}},
		{fresh, api.Engagement{}},
		{rt, api.Engagement{Reposts: 40, Likes: 120}},
		{found, api.Engagement{Reposts: 2, Likes: 5}},
	} {
		it, _ := rec.ByID(tweetID(tc.tw))
		if !sameEngagement(it.Engagement, &tc.want) {
			t.Errorf("%q: engagement %+v, want %+v", it.Text, it.Engagement, tc.want)
		}
	}
}

// TestTweetItem_TextAsTheAuthorWroteIt: a v1.1 tweet's text is unescaped
// once, its t.co links (urls and media, of extended_tweet when present)
// are replaced by the addresses they stand for and listed in links, a
// retweet is the whole tweet it shares with repost_of, and author_id is
// the user's id_str.
func TestTweetItem_TextAsTheAuthorWroteIt(t *testing.T) {
	user := `"user":{"id_str":"42","screen_name":"gopher"}`
	cases := []struct {
		name, line       string
		text, repostOf   string
		links            []string
		authorID, author string
	}{
		{"entities unescaped once",
			`{"id_str":"1","text":"a &amp;lt;b&amp;gt; &lt;i&gt; AT&amp;T &copy;",` + user + `}`,
			"a &lt;b&gt; <i> AT&T &copy;", "", nil, "42", "gopher"},
		{"compatibility text cut: extended_tweet's text and entities",
			`{"id_str":"2","text":"cut… https://t.co/self","truncated":true,"entities":{"urls":[{"url":"https://t.co/self","expanded_url":"https://twitter.com/i/web/status/2"}]},` +
				`"extended_tweet":{"full_text":"whole https://t.co/a and https://t.co/m","entities":{"urls":[{"url":"https://t.co/a","expanded_url":"https://go.dev/?a=1&b=2"}],"media":[{"url":"https://t.co/m","expanded_url":"https://x.com/gopher/status/2/photo/1"}]}},` + user + `}`,
			"whole https://go.dev/?a=1&b=2 and https://x.com/gopher/status/2/photo/1", "", []string{"https://go.dev/?a=1&b=2", "https://x.com/gopher/status/2/photo/1"}, "42", "gopher"},
		{"a retweet is the tweet it shares",
			`{"id_str":"4","text":"RT @golang: cut…",` + user + `,"retweeted_status":{"id_str":"3","text":"whole &amp; uncut","user":{"id_str":"7","screen_name":"golang"}}}`,
			"whole & uncut", "tw:3", nil, "42", "gopher"},
		{"a user id that is not a number is left out",
			`{"id_str":"5","text":"x","user":{"id_str":"x1","screen_name":"gopher"}}`,
			"x", "", nil, "", "gopher"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := decodeLine([]byte(tc.line))
			if err != nil || msg.kind != kindTweet {
				t.Fatalf("decode: kind %v, err %v", msg.kind, err)
			}
			it, err := tweetItem(msg.tweet, msg.engagement, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if it.Text != tc.text || it.RepostOf != tc.repostOf || !slices.Equal(it.Links, tc.links) || it.AuthorID != tc.authorID || it.Author != tc.author {
				t.Fatalf("item text %q repost_of %q links %q author %q/%q", it.Text, it.RepostOf, it.Links, it.Author, it.AuthorID)
			}
		})
	}
}
