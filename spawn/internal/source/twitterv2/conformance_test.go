package twitterv2

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fakex "github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// docSample is one post of X's documentation (testdata/x-docs, listed in
// testdata/SOURCES.md), the query of a crawler that only a faithful
// reading of the post matches (a word of an expanded link, of a repost's
// uncut original, of a quoted post, of the unescaped text), and what a
// user must see of its stored comment, read off the payload.
type docSample struct {
	file  string
	query string
	// message turns the recorded document into the stream message X
	// sends; nil takes the lookup response's one post with its includes.
	message func(t *testing.T, doc []byte) []byte
	want    spawntest.Seen
}

func at(s string) time.Time {
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return ts.UTC()
}

var docSamples = []docSample{
	{file: "reference-tweet.json", query: "1fg5", want: spawntest.Seen{
		ID: "tw:1307025659294674945", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "Here’s an article that highlights the updates in the new Tweet payload v2 https://dev.to/twitterdev/understanding-the-new-tweet-payload-in-the-twitter-api-v2-1fg5",
		URL:  "https://twitter.com/TwitterDev/status/1307025659294674945", Lang: "en", PublishedAt: at("2020-09-18T18:36:15Z"),
		ReplyTo: "tw:1304102743196356610", ThreadID: "tw:1304102743196356610",
		Links: []string{"https://dev.to/twitterdev/understanding-the-new-tweet-payload-in-the-twitter-api-v2-1fg5"},
	}},
	{file: "reference-tweet-reply.json", query: "penn", want: spawntest.Seen{
		ID: "tw:1296887316556980230", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "See how @PennMedCDH are using Twitter data to understand the COVID-19 health crisis 📊\n\nhttps://developer.x.com/en/use-cases/success-stories/penn",
		URL:  "https://twitter.com/TwitterDev/status/1296887316556980230", Lang: "en", PublishedAt: at("2020-08-21T19:10:05Z"),
		ReplyTo: "tw:1296887091901718529", ThreadID: "tw:1296887091901718529",
		Links: []string{"https://developer.x.com/en/use-cases/success-stories/penn"},
	}},
	{file: "reference-extended-tweet.json", query: "140996", want: spawntest.Seen{
		ID: "tw:1296121314218897408", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "The hide replies endpoint is launching today! \n\nDevelopers can hide replies to Tweets - a crucial way developers can help improve the health of the public conversation using the #TwitterAPI.\n\nhttps://devcommunity.x.com/t/hide-replies-now-available-in-the-new-twitter-api/140996",
		URL:  "https://twitter.com/TwitterDev/status/1296121314218897408", Lang: "en", PublishedAt: at("2020-08-19T16:26:16Z"),
		Links: []string{"https://devcommunity.x.com/t/hide-replies-now-available-in-the-new-twitter-api/140996"},
	}},
	{file: "reference-tweet-with-media.json", query: "introducing_new_twitter_api", want: spawntest.Seen{
		ID: "tw:1293593516040269825", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "It’s finally here! 🥁 Say hello to the new #TwitterAPI.\n\nWe’re rebuilding the X API v2 from the ground up to better serve our developer community. And today’s launch is only the beginning.\n\nhttps://blog.x.com/developer/en_us/topics/tools/2020/introducing_new_twitter_api.html https://x.com/TwitterDev/status/1293593516040269825/video/1",
		URL:  "https://twitter.com/TwitterDev/status/1293593516040269825", Lang: "en", PublishedAt: at("2020-08-12T17:01:42Z"),
		Links: []string{"https://blog.x.com/developer/en_us/topics/tools/2020/introducing_new_twitter_api.html", "https://x.com/TwitterDev/status/1293593516040269825/video/1"},
	}},
	{file: "reference-retweet.json", query: `"check it out here"`, want: spawntest.Seen{
		ID: "tw:1229851574555508737", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "I built an Alexa Skill for Twitter using APL that allows you to view Tweets and Trends on the echo show!\n\nCheck it out here 👇\n\nhttps://dev.to/twitterdev/building-an-alexa-skill-for-twitter-using-alexa-presentation-language-1aj0",
		URL:  "https://twitter.com/TwitterDev/status/1229851574555508737", Lang: "en", PublishedAt: at("2020-02-18T19:33:59Z"),
		Links:    []string{"https://dev.to/twitterdev/building-an-alexa-skill-for-twitter-using-alexa-presentation-language-1aj0"},
		RepostOf: "tw:1229843515603144704",
	}},
	{file: "reference-quote-tweet.json", query: "friendly", want: spawntest.Seen{
		ID: "tw:1328399838128467969", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "As planned, the Labs v2 endpoints referenced below have now been retired. Please let us know in the forums if you have questions or need help with the X API v2! https://x.com/TwitterDev/status/1327011423252144128" +
			"\n\n👋 Friendly reminder that Twitter Developer Labs v2 hide replies and recent search will be retired next Monday, November 16! We encourage you to migrate to the new hide replies and recent search endpoints now available in the v2 #TwitterAPI. Details: https://devcommunity.x.com/t/retiring-labs-v2-recent-search-and-hide-replies/145795",
		URL: "https://twitter.com/TwitterDev/status/1328399838128467969", Lang: "en", PublishedAt: at("2020-11-16T18:09:36Z"),
		Links: []string{"https://x.com/TwitterDev/status/1327011423252144128", "https://devcommunity.x.com/t/retiring-labs-v2-recent-search-and-hide-replies/145795"},
	}},
	{file: "reference-retweeted-quote-tweet.json", query: "2ornrcc", want: spawntest.Seen{
		ID: "tw:1225470895902412800", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "📣 If you enjoyed the London commute tutorial I wrote in November last year, check out the refactored version that uses Twitter's new search endpoint 🚇 https://bit.ly/2OrnrCC\n\n#DEVcommunity #Pythontutorial @TwitterDev @TwitterAPI https://x.com/AureliaSpecker/status/1195000047089389573",
		URL:  "https://twitter.com/TwitterDev/status/1225470895902412800", Lang: "en", PublishedAt: at("2020-02-06T17:26:44Z"),
		Links:    []string{"https://bit.ly/2OrnrCC", "https://x.com/AureliaSpecker/status/1195000047089389573"},
		RepostOf: "tw:1224709550214873090",
	}},
	{file: "data-dictionary-user-pinned-tweet.json", query: `"understand & respond"`, message: pinnedTweetMessage, want: spawntest.Seen{
		ID: "tw:1255542774432063488", Author: "TwitterDev", AuthorID: "2244994945",
		Text: "During these unprecedented times, what’s happening on Twitter can help the world better understand & respond to the pandemic. \n\nWe're launching a free COVID-19 stream endpoint so qualified devs & researchers can study the public conversation in real-time. https://t.co/BPqMcQzhId",
		URL:  "https://twitter.com/TwitterDev/status/1255542774432063488", PublishedAt: at("2020-04-29T17:01:38Z"),
	}},
}

// lookupMessage is the stream message of a lookup response's one post.
func lookupMessage(t *testing.T, doc []byte) []byte {
	t.Helper()
	var lookup struct {
		Data     []json.RawMessage `json:"data"`
		Includes json.RawMessage   `json:"includes"`
	}
	if err := json.Unmarshal(doc, &lookup); err != nil || len(lookup.Data) != 1 {
		t.Fatalf("lookup response with %d posts: %v", len(lookup.Data), err)
	}
	msg, _ := json.Marshal(map[string]json.RawMessage{"data": lookup.Data[0], "includes": lookup.Includes})
	return msg
}

// pinnedTweetMessage is the data dictionary's user lookup turned into the
// stream message of the user's pinned post (id and text as recorded, with
// X's HTML escaping): its author is the user, its created_at the time in
// its id (a snowflake), to the second.
func pinnedTweetMessage(t *testing.T, doc []byte) []byte {
	t.Helper()
	var lookup struct {
		Data     []map[string]any `json:"data"`
		Includes struct {
			Tweets []map[string]any `json:"tweets"`
		} `json:"includes"`
	}
	if err := json.Unmarshal(doc, &lookup); err != nil || len(lookup.Data) != 1 || len(lookup.Includes.Tweets) != 1 {
		t.Fatalf("user lookup: %v", err)
	}
	user, post := lookup.Data[0], lookup.Includes.Tweets[0]
	post["author_id"] = user["id"]
	post["created_at"] = "2020-04-29T17:01:38.000Z" // (1255542774432063488 >> 22) + 1288834974657 ms
	msg, _ := json.Marshal(map[string]any{"data": post, "includes": map[string]any{"users": []any{user}}})
	return msg
}

// TestConformance_DocumentedPostsAsAUserSeesThem serves every post of X's
// documentation through the local X server and the real source into a
// spawn node storing JSON Lines files, each to a crawler whose query only
// a faithful reading of the post matches, and checks every field a user
// sees of what was stored.
func TestConformance_DocumentedPostsAsAUserSeesThem(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	k, err := New(testOptions(t, url))
	if err != nil {
		t.Fatal(err)
	}
	fn := spawntest.StartFileNode(t, api.SourceTwitter, k)
	var specs []api.SubscriberSpec
	var queries []string
	for i, s := range docSamples {
		specs = append(specs, spec(int64(i+1), s.query))
		queries = append(queries, s.query)
	}
	spawntest.Subscribe(t, fn.Node, specs...)
	waitRules(t, srv, queries...)
	testkit.WaitFor(t, wait, "the stream", srv.Connected)

	for i, s := range docSamples {
		doc, err := os.ReadFile(filepath.Join("testdata", "x-docs", s.file))
		if err != nil {
			t.Fatal(err)
		}
		build := s.message
		if build == nil {
			build = lookupMessage
		}
		ids, err := srv.PublishMessage(build(t, doc))
		if err != nil {
			t.Fatalf("%s: %v", s.file, err)
		}
		if len(ids) == 0 {
			t.Fatalf("%s: X's rules did not match crawler %d's query %s", s.file, i+1, s.query)
		}
	}
	fields := 0
	for i, s := range docSamples {
		t.Run(s.file, func(t *testing.T) {
			fn.WaitSeen(t, int64(i+1), []spawntest.Seen{s.want})
		})
		fields += seenFields
	}
	t.Logf("%d documented posts read, %d fields checked", len(docSamples), fields)
}

// seenFields is how many fields of a comment WaitSeen checks: id, author,
// author_id, text, url, lang, published_at, reply_to, thread_id, links,
// repost_of.
const seenFields = 11
