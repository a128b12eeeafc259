package twitterv1

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// nativeSample is one tweet of X's enterprise data dictionary (native
// enriched format, API v1.1's tweet object; testdata/x-docs, listed in
// testdata/SOURCES.md), the query of a crawler that only a faithful
// reading of it matches (a word of an expanded link, of a retweet's uncut
// original, of a quoted tweet), and what a user must see of its stored
// comment, read off the payload.
type nativeSample struct {
	file  string
	query string
	want  spawntest.Seen
}

func at(layout, s string) time.Time {
	ts, err := time.Parse(layout, s)
	if err != nil {
		panic(err)
	}
	return ts.UTC()
}

var nativeSamples = []nativeSample{
	{"native-enriched-tweet.json", "1fg5", spawntest.Seen{
		ID: "tw:1307025659294674945", Author: "XDevelopers", AuthorID: "2244994945",
		Text: "Here’s an article that highlights the updates in the new Tweet payload v2 https://dev.to/twitterdev/understanding-the-new-tweet-payload-in-the-twitter-api-v2-1fg5",
		URL:  "https://twitter.com/XDevelopers/status/1307025659294674945", Lang: "en", PublishedAt: at(time.RubyDate, "Fri Sep 18 18:36:15 +0000 2020"),
		ReplyTo: "tw:1304102743196356610",
		Links:   []string{"https://dev.to/twitterdev/understanding-the-new-tweet-payload-in-the-twitter-api-v2-1fg5"},
	}},
	{"native-enriched-tweet-reply.json", "penn", spawntest.Seen{
		ID: "tw:1296887316556980230", Author: "XDevelopers", AuthorID: "2244994945",
		Text: "See how @PennMedCDH are using X data to understand the COVID-19 health crisis 📊\n\nhttps://developer.x.com/en/use-cases/success-stories/penn",
		URL:  "https://twitter.com/XDevelopers/status/1296887316556980230", Lang: "en", PublishedAt: at(time.RubyDate, "Fri Aug 21 19:10:05 +0000 2020"),
		ReplyTo: "tw:1296887091901718529",
		Links:   []string{"https://developer.x.com/en/use-cases/success-stories/penn"},
	}},
	{"native-enriched-extended-tweet.json", "140996", spawntest.Seen{
		ID: "tw:1296121314218897408", Author: "XDevelopers", AuthorID: "2244994945",
		Text: "The hide replies endpoint is launching today! \n\nDevelopers can hide replies to Tweets - a crucial way developers can help improve the health of the public conversation using the #XAPI.\n\nhttps://devcommunity.x.com/t/hide-replies-now-available-in-the-new-twitter-api/140996",
		URL:  "https://twitter.com/XDevelopers/status/1296121314218897408", Lang: "en", PublishedAt: at(time.RubyDate, "Wed Aug 19 16:26:16 +0000 2020"),
		Links: []string{"https://devcommunity.x.com/t/hide-replies-now-available-in-the-new-twitter-api/140996"},
	}},
	{"native-enriched-tweet-with-extended-entities.json", "introducing_new_twitter_api", spawntest.Seen{
		ID: "tw:1293593516040269825", Author: "XDevelopers", AuthorID: "2244994945",
		Text: "It’s finally here! 🥁 Say hello to the new #XAPI.\n\nWe’re rebuilding the X API v2 from the ground up to better serve our developer community. And today’s launch is only the beginning.\n\nhttps://blog.x.com/developer/en_us/topics/tools/2020/introducing_new_twitter_api.html https://x.com/XDevelopers/status/1293593516040269825/video/1",
		URL:  "https://twitter.com/XDevelopers/status/1293593516040269825", Lang: "en", PublishedAt: at(time.RubyDate, "Wed Aug 12 17:01:42 +0000 2020"),
		Links: []string{"https://blog.x.com/developer/en_us/topics/tools/2020/introducing_new_twitter_api.html", "https://x.com/XDevelopers/status/1293593516040269825/video/1"},
	}},
	// The documentation's retweet names its author "X Developers", a
	// screen name no account can have: the comment keeps it as the
	// author, and its address is the one that needs no screen name.
	{"native-enriched-retweet.json", "1aj0", spawntest.Seen{
		ID: "tw:1229851574555508737", Author: "X Developers", AuthorID: "2244994945",
		Text: "I built an Alexa Skill for X using APL that allows you to view Tweets and Trends on the echo show!\n\nCheck it out here 👇\n\nhttps://dev.to/twitterdev/building-an-alexa-skill-for-twitter-using-alexa-presentation-language-1aj0",
		URL:  "https://twitter.com/i/web/status/1229851574555508737", Lang: "en", PublishedAt: at(time.RubyDate, "Tue Feb 18 19:33:59 +0000 2020"),
		Links:    []string{"https://dev.to/twitterdev/building-an-alexa-skill-for-twitter-using-alexa-presentation-language-1aj0"},
		RepostOf: "tw:1229843515603144704",
	}},
	{"native-enriched-quote-tweet.json", "friendly", spawntest.Seen{
		ID: "tw:1328399838128467969", Author: "XDevelopers", AuthorID: "2244994945",
		Text: "As planned, the Labs v2 endpoints referenced below have now been retired. Please let us know in the forums if you have questions or need help with the X API v2! https://x.com/XDevelopers/status/1327011423252144128" +
			"\n\n👋 Friendly reminder that X Developer Labs v2 hide replies and recent search will be retired next Monday, November 16! We encourage you to migrate to the new hide replies and recent search endpoints now available in the v2 #XAPI. Details: https://devcommunity.x.com/t/retiring-labs-v2-recent-search-and-hide-replies/145795",
		URL: "https://twitter.com/XDevelopers/status/1328399838128467969", Lang: "en", PublishedAt: at(time.RubyDate, "Mon Nov 16 18:09:36 +0000 2020"),
		Links: []string{"https://x.com/XDevelopers/status/1327011423252144128", "https://devcommunity.x.com/t/retiring-labs-v2-recent-search-and-hide-replies/145795"},
	}},
	{"native-enriched-retweeted-quote-tweet.json", "3od0", spawntest.Seen{
		ID: "tw:1225470895902412800", Author: "XDevelopers", AuthorID: "2244994945",
		Text: "📣 If you enjoyed the London commute tutorial I wrote in November last year, check out the refactored version that uses X's new search endpoint 🚇 https://bit.ly/2OrnrCC\n\n#DEVcommunity #Pythontutorial @XDev @XAPI https://x.com/AureliaSpecker/status/1195000047089389573" +
			"\n\nI wrote a tutorial on how to get bespoke commute information using the X API🚇\n\n#DEVcommunity #Pythontutorial \n\nCheck it out here 👇\nhttps://dev.to/twitterdev/using-the-twitter-api-to-make-your-commute-easier-3od0",
		URL: "https://twitter.com/XDevelopers/status/1225470895902412800", Lang: "en", PublishedAt: at(time.RubyDate, "Thu Feb 06 17:26:44 +0000 2020"),
		Links:    []string{"https://bit.ly/2OrnrCC", "https://x.com/AureliaSpecker/status/1195000047089389573", "https://dev.to/twitterdev/using-the-twitter-api-to-make-your-commute-easier-3od0"},
		RepostOf: "tw:1224709550214873090",
	}},
}

// seenFields is how many fields of a comment WaitSeen checks.
const seenFields = 12

// TestConformance_DocumentedTweetsAsAUserSeesThem serves every tweet of
// X's native payload examples through the local Twitter and the real
// tracker into a spawn node storing JSON Lines files, each to a crawler
// whose query only a faithful reading of the tweet matches, and checks
// every field a user sees of what was stored.
func TestConformance_DocumentedTweetsAsAUserSeesThem(t *testing.T) {
	srv, base := newServer(t)
	k, err := New(testOptions(base))
	if err != nil {
		t.Fatal(err)
	}
	fn := spawntest.StartFileNode(t, api.SourceTwitter, k)
	var specs []api.SubscriberSpec
	for i, s := range nativeSamples {
		specs = append(specs, spec(int64(i+1), s.query))
	}
	spawntest.Subscribe(t, fn.Node, specs...)
	testkit.WaitFor(t, spawntest.WaitTimeout, "a stream tracking every query", func() bool {
		tr := srv.OpenTracks()
		return len(tr) == 1 && len(tr[0]) == len(nativeSamples)
	})
	for i, s := range nativeSamples {
		doc, err := os.ReadFile(filepath.Join("testdata", "x-docs", s.file))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := srv.PublishMessage(doc); err != nil || n != 1 {
			t.Fatalf("%s: Twitter's track did not match crawler %d's query %s (%v)", s.file, i+1, s.query, err)
		}
	}
	for i, s := range nativeSamples {
		t.Run(s.file, func(t *testing.T) {
			fn.WaitSeen(t, int64(i+1), []spawntest.Seen{s.want})
		})
	}
	t.Logf("%d documented tweets read, %d fields checked", len(nativeSamples), len(nativeSamples)*seenFields)
}
