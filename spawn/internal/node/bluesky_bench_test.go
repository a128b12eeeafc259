package node

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/bluesky"
)

// Workload of BenchmarkBlueskyPath.
const (
	bskyAuthors = 500  // accounts posting, each with a handle
	bskyPosts   = 2000 // distinct posts the benchmark cycles through
	bskyBatch   = 1000 // posts published per round
)

// bskyTopics are words people follow on Bluesky; bskyPhrases are quoted
// phrases.
var (
	bskyTopics = strings.Fields(`golang rust python java kotlin swift typescript docker kubernetes linux
android iphone tesla rivian bitcoin ethereum crypto inflation recession housing rent election senate
congress parliament president governor vote football soccer basketball baseball hockey tennis cricket
olympics netflix disney spotify youtube tiktok instagram reddit twitch discord amazon google microsoft
apple nvidia intel samsung nintendo playstation climate wildfire hurricane earthquake flood heatwave
vaccine covid cancer fitness yoga coffee beer wine pizza sushi ramen tacos vegan paris london berlin
tokyo toronto chicago boston seattle texas california startup layoffs ipo earnings stocks nasdaq
privacy ransomware phishing encryption postgres kafka graphql llm chatgpt openai anthropic robotics
spacex nasa mars telescope physics biology economics history jazz hiphop kpop concert vinyl guitar
movie anime manga podcast poetry museum photography fashion sneakers travel hiking skiing surfing
gardening parenting students teachers hiring remote pension healthcare nurse police lawsuit protest
strike union immigration bluesky fediverse mastodon`)
	// bskySuffixes make the long tail of what people follow out of the
	// topics: "golangconf", "teslanews".
	bskySuffixes = []string{"", "news", "fans", "dev", "conf", "2025", "memes", "art", "jobs", "tips", "life",
		"talk", "daily", "community", "updates", "club", "lovers", "facts", "week", "hq", "official", "world"}
	// bskyQualifiers make two-word phrases out of the topics: "open golang".
	bskyQualifiers = strings.Fields(`new best cheap local global open free smart green electric digital
public private urban rural`)
	bskyFiller = strings.Fields(`the a an and or but so just really very today yesterday tonight this that
what who why how i you we they my our is are was were be been have has had do can could will would
think know love hate want need see look reading watching about with without from into after before
still never always maybe thanks please lol omg wow great good bad awesome weird funny sad happy people
everyone time day week year morning night life world thing news update thread post`)
	bskyLangs = []string{"en", "en", "en", "en", "en", "en", "ja", "pt", "de", "es"}
)

// bskyWord is a word people follow: a topic with a suffix.
func bskyWord(r *rand.Rand) string {
	return bskyTopics[r.IntN(len(bskyTopics))] + bskySuffixes[r.IntN(len(bskySuffixes))]
}

// bskyPhrase is a two-word phrase people follow.
func bskyPhrase(r *rand.Rand) string {
	return bskyQualifiers[r.IntN(len(bskyQualifiers))] + " " + bskyTopics[r.IntN(len(bskyTopics))]
}

// bskyHandle is the handle of author a.
func bskyHandle(a int) string { return fmt.Sprintf("user%d.bsky.social", a) }

// bskyDID is the DID of author a.
func bskyDID(a int) string { return fmt.Sprintf("did:plc:bench%019d", a) }

// bskyPost is a post to publish and the item the spawn makes of it.
type bskyPost struct {
	post jetstream.Post
	item match.Item
}

// newBskyPost is a post-length text: filler with up to two followed
// words or phrases (some as #tags or capitalised), sometimes a mention,
// a link or an emoji, and punctuation. Most posts of the firehose
// interest few crawlers: with 10,000 subscribers a post makes a few
// comments.
func newBskyPost(r *rand.Rand) bskyPost {
	var b strings.Builder
	words := 8 + r.IntN(35)
	topics := map[int]bool{}
	for range []int{0, 0, 0, 1, 1, 1, 1, 1, 2, 2}[r.IntN(10)] {
		topics[r.IntN(words)] = true
	}
	for w := range words {
		if w > 0 {
			b.WriteByte(' ')
		}
		switch {
		case topics[w]:
			t := bskyWord(r)
			switch r.IntN(5) {
			case 0:
				t = "#" + t
			case 1:
				t = strings.ToUpper(t[:1]) + t[1:]
			case 2:
				t = bskyPhrase(r)
			}
			b.WriteString(t)
		case r.IntN(40) == 0:
			b.WriteString("@" + bskyHandle(r.IntN(bskyAuthors)))
		case r.IntN(60) == 0:
			fmt.Fprintf(&b, "https://example.com/%d", r.IntN(1000))
		case r.IntN(50) == 0:
			b.WriteString("🚀")
		default:
			b.WriteString(bskyFiller[r.IntN(len(bskyFiller))])
		}
		if r.IntN(7) == 0 {
			b.WriteString([]string{",", ".", "!", "?", ":", "…"}[r.IntN(6)])
		}
	}
	a, lang := r.IntN(bskyAuthors), bskyLangs[r.IntN(len(bskyLangs))]
	return bskyPost{
		post: jetstream.Post{DID: bskyDID(a), Text: b.String(), Langs: []string{lang}},
		item: match.Item{Text: b.String(), Author: bskyHandle(a), Lang: lang},
	}
}

// bskyQuery is a subscriber's query: words, phrases, #tags, @mentions,
// from:, negations and lang: in the shapes people write.
func bskyQuery(r *rand.Rand) string {
	topic := func() string { return bskyWord(r) }
	phrase := func() string { return `"` + bskyPhrase(r) + `"` }
	switch r.IntN(8) {
	case 0:
		return topic() + " OR " + topic() + " OR #" + topic()
	case 1:
		return topic() + " " + topic()
	case 2:
		return phrase() + " -" + topic()
	case 3:
		return "#" + topic() + " lang:en"
	case 4:
		return "(" + topic() + " OR " + phrase() + ") -" + topic() + " -#" + topic()
	case 5:
		return "from:" + bskyHandle(r.IntN(bskyAuthors)) + " OR @" + bskyHandle(r.IntN(bskyAuthors))
	case 6:
		return topic() + " -lang:ja"
	}
	return topic()
}

// bskyNode is a node reading a local Jetstream through the bluesky source
// kind, with subs subscribers on its one bluesky data source, storing into
// a counting store.
type bskyNode struct {
	n         *Node
	js        *jetstream.Server
	src       *bluesky.Source
	st        *countStore
	index     *match.QueryIndex // the subscribers' queries, to know how many comments a post makes
	posts     []bskyPost
	published int   // posts published
	want      int64 // comments they make
	acks      []uint64
}

func newBskyNode(b *testing.B, subs int, posts []bskyPost, noAnalytics bool) *bskyNode {
	b.Helper()
	js := jetstream.Start(b, jetstream.Options{ConnBuffer: 4 * bskyBatch})
	kind, err := bluesky.New(bluesky.Options{JetstreamURL: js.URL()})
	if err != nil {
		b.Fatal(err)
	}
	st := &countStore{}
	n := attachNode(b, Config{Store: st, Sources: source.Registry{api.SourceBluesky: kind}, NoAnalytics: noAnalytics, StoreLinger: benchLinger})

	r := rand.New(rand.NewPCG(7, 8))
	specs := make([]api.SubscriberSpec, subs)
	byID := make(map[int64]*query.Query, subs)
	for i := range specs {
		q, err := query.Parse(bskyQuery(r))
		if err != nil {
			b.Fatal(err)
		}
		id := int64(i + 1)
		byID[id] = q
		specs[i] = api.SubscriberSpec{CrawlerID: id, UserID: 1, Version: 1, Source: api.SourceBluesky,
			Query: []string{q.String()}, QueryUUID: q.UUID(api.SourceBluesky).String()}
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		b.Fatal(err)
	}
	n.mu.Lock()
	src := n.sources[bluesky.Key].ds.(*bluesky.Source)
	n.mu.Unlock()
	testkit.WaitFor(b, time.Minute, "the Jetstream connection", func() bool { return js.Conns() == 1 })
	for a := range bskyAuthors {
		js.PublishIdentity(bskyDID(a), bskyHandle(a))
	}
	testkit.WaitFor(b, time.Minute, "the handles", func() bool { return src.Stats().Handles == bskyAuthors })
	return &bskyNode{n: n, js: js, src: src, st: st, index: match.NewQueries(byID), posts: posts}
}

// round publishes a batch of posts and waits until the spawn has stored
// every comment they make and recorded it as usage (settled); it returns
// how long that took. Between rounds,
// outside the timing, it acknowledges usage as the hub would.
func (bn *bskyNode) round(b *testing.B) time.Duration {
	for j := range bskyBatch {
		bn.want += int64(len(bn.index.Match(bn.posts[(bn.published+j)%len(bn.posts)].item)))
	}
	start := time.Now()
	for j := range bskyBatch {
		bn.js.Publish(bn.posts[(bn.published+j)%len(bn.posts)].post)
	}
	bn.published += bskyBatch
	deadline := start.Add(time.Minute)
	for bn.st.n.Load() < bn.want || bn.src.Stats().Items < int64(bn.published) || !settled(bn.n) {
		if time.Now().After(deadline) {
			b.Fatalf("stored %d of %d comments, %d of %d posts handed over", bn.st.n.Load(), bn.want, bn.src.Stats().Items, bn.published)
		}
		time.Sleep(50 * time.Microsecond)
	}
	took := time.Since(start)
	if got := bn.st.n.Load(); got != bn.want {
		b.Fatalf("stored %d comments, want %d", got, bn.want)
	}
	bn.acks = ackUsage(b, bn.n, bn.acks)
	return took
}

// BenchmarkBlueskyPath measures the posts per second one spawn takes
// from Jetstream to its store: a local Jetstream sends post events over a
// WebSocket to the bluesky source, which decodes them into items; the
// node's emitter matches each with the data source's query index, counts
// it for each matching subscriber and hands the comments to the writer,
// which stores them in a store that counts them. The subscribers' queries
// mix words, phrases, #tags, @mentions, from:, negations and lang: over
// post-length texts in several languages. A round publishes 1,000 posts
// and ends when every comment they make is stored and recorded as usage
// (the store writer lingers benchLinger for a partial batch). The
// spawn's analytics (term counts and activity per written comment,
// Config.NoAnalytics) are on in one run and off in the other, which
// leaves decoding, matching and storing alone. Each run has a spawn with
// one subscriber and one with 10,000 in alternating rounds, so that a
// busy machine slows both alike, and reports the ratio of their
// throughputs (10,000 subscribers / 1):
//
//	go test -run '^$' -bench BlueskyPath -count 3 ./spawn/internal/node/
func BenchmarkBlueskyPath(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	posts := make([]bskyPost, bskyPosts)
	for i := range posts {
		posts[i] = newBskyPost(r)
	}
	for _, noAnalytics := range []bool{false, true} {
		name := "analytics=on/interleaved"
		if noAnalytics {
			name = "analytics=off/interleaved"
		}
		b.Run(name, func(b *testing.B) {
			nodes := []*bskyNode{newBskyNode(b, 1, posts, noAnalytics), newBskyNode(b, 10000, posts, noAnalytics)}
			var took [2]time.Duration
			rounds := 0
			for b.Loop() {
				for k, bn := range nodes {
					took[k] += bn.round(b)
				}
				rounds++
			}
			perSec := func(d time.Duration) float64 { return float64(rounds*bskyBatch) / d.Seconds() }
			b.ReportMetric(perSec(took[0]), "posts/s(1)")
			b.ReportMetric(perSec(took[1]), "posts/s(10000)")
			b.ReportMetric(perSec(took[1])/perSec(took[0]), "ratio")
			b.ReportMetric(float64(nodes[1].want)/float64(nodes[1].published), "comments/post(10000)")
		})
	}
}
