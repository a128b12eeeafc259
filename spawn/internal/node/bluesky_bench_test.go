package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/langid"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/bluesky"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
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

// bskyPost is a post to publish and the item the spawn makes of it: rich
// (links in full, alt texts, card titles, the author's handle) or, with
// bluesky.Options.TextOnly, plain (the text as written, under the DID).
type bskyPost struct {
	post        jetstream.Post
	rich, plain match.Item
	// detected is the language a spawn detects in a post without one
	// (the sentiment variant's posts).
	detected string
}

// newBskyPost is a post-length text: filler with up to two followed
// words or phrases (some as #tags or capitalised), sometimes a mention,
// a link (shortened in the text as the app does, in full in its facet) or
// an emoji, and punctuation; one post in five carries an image with alt
// text, one in ten a link card. Most posts of the firehose interest few
// crawlers: with 10,000 subscribers a post makes a few comments.
func newBskyPost(r *rand.Rand) bskyPost {
	var b, full strings.Builder // as written; with the links in full
	var facets []map[string]any
	words := 8 + r.IntN(35)
	topics := map[int]bool{}
	for range []int{0, 0, 0, 1, 1, 1, 1, 1, 2, 2}[r.IntN(10)] {
		topics[r.IntN(words)] = true
	}
	write := func(s string) { b.WriteString(s); full.WriteString(s) }
	var links []string
	for w := range words {
		if w > 0 {
			write(" ")
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
			write(t)
		case r.IntN(40) == 0:
			write("@" + bskyHandle(r.IntN(bskyAuthors)))
		case r.IntN(60) == 0:
			n := r.IntN(1000)
			uri := fmt.Sprintf("https://example.com/%d/%s-%s", n, bskyFiller[r.IntN(len(bskyFiller))], bskyFiller[r.IntN(len(bskyFiller))])
			shown := fmt.Sprintf("example.com/%d/a-...", n)
			facets = append(facets, map[string]any{
				"index":    map[string]int{"byteStart": b.Len(), "byteEnd": b.Len() + len(shown)},
				"features": []map[string]string{{"$type": "app.bsky.richtext.facet#link", "uri": uri}},
			})
			b.WriteString(shown)
			full.WriteString(uri)
			if !slices.Contains(links, uri) {
				links = append(links, uri)
			}
		case r.IntN(50) == 0:
			write("🚀")
		default:
			write(bskyFiller[r.IntN(len(bskyFiller))])
		}
		if r.IntN(7) == 0 {
			write([]string{",", ".", "!", "?", ":", "…"}[r.IntN(6)])
		}
	}
	var embed any
	var extra []string
	switch r.IntN(10) {
	case 0, 1:
		alt := "a photo " + bskyFiller[r.IntN(len(bskyFiller))] + " " + bskyFiller[r.IntN(len(bskyFiller))]
		embed = map[string]any{"$type": "app.bsky.embed.images", "images": []map[string]any{{"alt": alt,
			"image": map[string]any{"$type": "blob", "ref": map[string]string{"$link": "bafkreibabalobzn6cd366ukcsjycp4yymjymgfxcv6xczmlgpemzkz3cfa"}, "mimeType": "image/jpeg", "size": 760898}}}}
		extra = append(extra, alt)
	case 2:
		uri := fmt.Sprintf("https://news.example/%d", r.IntN(1000))
		title := "why " + bskyFiller[r.IntN(len(bskyFiller))] + " " + bskyFiller[r.IntN(len(bskyFiller))]
		embed = map[string]any{"$type": "app.bsky.embed.external", "external": map[string]string{"uri": uri, "title": title, "description": "a story"}}
		extra = append(extra, title, uri)
		if !slices.Contains(links, uri) {
			links = append(links, uri)
		}
	}
	rich := full.String()
	if len(extra) > 0 {
		rich += "\n\n" + strings.Join(extra, "\n")
	}
	a, lang := r.IntN(bskyAuthors), bskyLangs[r.IntN(len(bskyLangs))]
	p := jetstream.Post{DID: bskyDID(a), Text: b.String(), Langs: []string{lang}}
	if len(facets) > 0 {
		p.Facets, _ = json.Marshal(facets)
	}
	if embed != nil {
		p.Embed, _ = json.Marshal(embed)
	}
	return bskyPost{
		post:  p,
		rich:  match.Item{Text: rich, Author: bskyHandle(a), AuthorID: bskyDID(a), Lang: lang},
		plain: match.Item{Text: b.String(), Author: bskyHandle(a), AuthorID: bskyDID(a), Lang: lang},
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
// kind, which asks a local AppView for handles, with subs subscribers on
// its one bluesky data source, storing into a counting store.
type bskyNode struct {
	n         *Node
	js        *jetstream.Server
	av        *appview.Server
	src       *bluesky.Source
	st        *countStore
	index     *match.QueryIndex // the subscribers' queries, to know how many comments a post makes
	posts     []bskyPost
	textOnly  bool
	enriched  bool  // languages detected and sentiment scored (not Config.NoSentiment)
	published int   // posts published
	base      int64 // comments the warm-up posts made
	want      int64 // comments stored, by the end of the last round
	acks      []uint64
}

func newBskyNode(b *testing.B, subs int, posts []bskyPost, noAnalytics, textOnly bool) *bskyNode {
	b.Helper()
	return newBskyNodeWith(b, subs, posts, noAnalytics, textOnly, &countStore{}, nil, false)
}

// newBskyNodeOn is newBskyNode, analytics on, storing into st (a store
// that takes comments back), with the node's retraction pipeline running.
func newBskyNodeOn(b *testing.B, subs int, posts []bskyPost, st *retractStore) *bskyNode {
	b.Helper()
	return newBskyNodeWith(b, subs, posts, false, false, &st.countStore, st, false)
}

// newBskyNodeWith builds the node of newBskyNode on a store: counted by
// counter, written to through full when it is not nil.
func newBskyNodeWith(b *testing.B, subs int, posts []bskyPost, noAnalytics, textOnly bool, counter *countStore, full *retractStore, noSentiment bool) *bskyNode {
	b.Helper()
	js := jetstream.Start(b, jetstream.Options{ConnBuffer: 4 * bskyBatch})
	av := appview.Start(b)
	for a := range bskyAuthors {
		av.Set(bskyDID(a), bskyHandle(a))
	}
	kind, err := bluesky.New(bluesky.Options{JetstreamURL: js.URL(), AppViewURL: av.URL(), TextOnly: textOnly})
	if err != nil {
		b.Fatal(err)
	}
	st := counter
	var written store.Store = st
	if full != nil {
		written = full
	}
	n := attachNode(b, Config{Store: written, Sources: source.Registry{api.SourceBluesky: kind}, NoAnalytics: noAnalytics, StoreLinger: benchLinger, NoSentiment: noSentiment})
	if full != nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); n.retracts.run(ctx, full) }()
		b.Cleanup(func() { cancel(); <-done })
	}

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
	src := n.table.sources[bluesky.Key].ds.(*bluesky.Source)
	n.mu.Unlock()
	testkit.WaitFor(b, time.Minute, "the Jetstream connection", func() bool { return js.Conns() == 1 })
	bn := &bskyNode{n: n, js: js, av: av, src: src, st: st, index: match.NewQueries(byID), posts: posts, textOnly: textOnly, enriched: !noSentiment}
	// Every author posts once before the timing: the source learns the
	// handles from the AppView (in calls of 25), as a running spawn has,
	// production's identity events carrying none. Without the lookups
	// (textOnly, the source before them), identity events tell them, as
	// this benchmark's Jetstream used to.
	for a := range bskyAuthors {
		if textOnly {
			js.PublishIdentity(bskyDID(a), bskyHandle(a))
		}
		js.Publish(jetstream.Post{DID: bskyDID(a), Text: "warming up"})
	}
	testkit.WaitFor(b, time.Minute, "the handles", func() bool { return src.Stats().Handles >= bskyAuthors })
	testkit.WaitFor(b, time.Minute, "the warm-up posts", func() bool { return src.Stats().Items >= bskyAuthors && settled(n) })
	bn.published = 0
	bn.base = st.n.Load()
	bn.want = bn.base
	bn.acks = ackUsage(b, n, bn.acks)
	return bn
}

// round publishes a batch of posts and waits until the spawn has stored
// every comment they make and recorded it as usage (settled); it returns
// how long that took. Between rounds,
// outside the timing, it acknowledges usage as the hub would.
func (bn *bskyNode) round(b *testing.B) time.Duration {
	for j := range bskyBatch {
		p := bn.posts[(bn.published+j)%len(bn.posts)]
		it := p.rich
		if bn.textOnly {
			it = p.plain
		}
		if bn.enriched && it.Lang == "" {
			it.Lang = p.detected // the lang: queries test the detected language
		}
		bn.want += int64(len(bn.index.Match(it)))
	}
	start := time.Now()
	for j := range bskyBatch {
		bn.js.Publish(bn.posts[(bn.published+j)%len(bn.posts)].post)
	}
	bn.published += bskyBatch
	deadline := start.Add(time.Minute)
	for bn.st.n.Load() < bn.want || bn.src.Stats().Items < int64(bn.published+bskyAuthors) || !settled(bn.n) {
		if time.Now().After(deadline) {
			b.Fatalf("stored %d of %d comments, %d of %d posts handed over", bn.st.n.Load(), bn.want, bn.src.Stats().Items, bn.published+bskyAuthors)
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
// source asks a local AppView for the authors' handles (every author posts
// once before the timing), shows links in full, alt texts and link-card
// titles (one post in five has an image, one in ten a card; their words
// are filler, so they make no extra comments). The
// spawn's analytics (term counts and activity per written comment,
// Config.NoAnalytics) are on in one run and off in the other, which
// leaves decoding, matching and storing alone. Each run has a spawn with
// one subscriber and one with 10,000 in alternating rounds, so that a
// busy machine slows both alike, and reports the ratio of their
// throughputs (10,000 subscribers / 1). A third run alternates two spawns
// of 10,000 subscribers, one as above and one with bluesky.Options.TextOnly
// (no AppView lookups, the text as written, handles from identity events:
// the source before it showed posts as they are shown), and reports the
// ratio of their throughputs (on / off):
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
			nodes := []*bskyNode{newBskyNode(b, 1, posts, noAnalytics, false), newBskyNode(b, 10000, posts, noAnalytics, false)}
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
			b.ReportMetric(float64(nodes[1].want-nodes[1].base)/float64(nodes[1].published), "comments/post(10000)")
			// The spawn with one subscriber learns nearly every handle
			// from its DID (few from: atoms to learn them from).
			b.ReportMetric(float64(nodes[0].av.DIDCalls())/bskyAuthors, "appview-calls/new-did(1)")
		})
	}
	// What taking back costs: the real mix of deletes and account events
	// on one spawn, the posts alone on the other (benchRetractions).
	b.Run("deletions=on-vs-off/interleaved", func(b *testing.B) { benchRetractions(b, posts) })
	// What showing a post as it is shown costs: handles from the AppView,
	// links in full, alt texts and card titles (the product) against the
	// text alone under the DID (bluesky.Options.TextOnly), 10,000
	// subscribers each, analytics on, in alternating rounds.
	b.Run("richtext=on-vs-off/interleaved", func(b *testing.B) {
		nodes := []*bskyNode{newBskyNode(b, 10000, posts, false, false), newBskyNode(b, 10000, posts, false, true)}
		var took [2]time.Duration
		rounds := 0
		for b.Loop() {
			for k, bn := range nodes {
				took[k] += bn.round(b)
			}
			rounds++
		}
		perSec := func(d time.Duration) float64 { return float64(rounds*bskyBatch) / d.Seconds() }
		b.ReportMetric(perSec(took[0]), "posts/s(on)")
		b.ReportMetric(perSec(took[1]), "posts/s(off)")
		b.ReportMetric(perSec(took[0])/perSec(took[1]), "ratio")
		b.ReportMetric(float64(nodes[0].want-nodes[0].base)/float64(nodes[0].published), "comments/post(on)")
		b.ReportMetric(float64(nodes[1].want-nodes[1].base)/float64(nodes[1].published), "comments/post(off)")
		b.ReportMetric(float64(nodes[0].av.DIDCalls())/bskyAuthors, "appview-calls/new-did")
	})
	// What detecting languages and scoring sentiment costs: two spawns of
	// 10,000 subscribers, analytics on, one with Config.NoSentiment, on
	// posts of which one in ten names no language (Jetstream posts whose
	// app set no langs) and on posts that all name theirs. The
	// subscribers' lang: queries make the spawn detect the language of a
	// post that names none before matching; sentiment is scored for the
	// posts that become comments.
	for _, every := range []int{10, 0} {
		name := "sentiment=on-vs-off/one-in-ten-without-lang/interleaved"
		if every == 0 {
			name = "sentiment=on-vs-off/all-with-lang/interleaved"
		}
		b.Run(name, func(b *testing.B) { benchSentiment(b, posts, every) })
	}
}

// benchSentiment runs BenchmarkBlueskyPath's sentiment variant, one post
// in every (none when 0) naming no language.
func benchSentiment(b *testing.B, posts []bskyPost, every int) {
	select {
	case <-langid.Default().Ready():
	case <-time.After(2 * time.Minute):
		b.Fatal("the language models did not load")
	}
	mixed := slices.Clone(posts)
	for i := range mixed {
		if every > 0 && i%every == 0 {
			p := &mixed[i]
			p.post.Langs = nil
			p.rich.Lang, p.plain.Lang = "", ""
			p.detected, _ = langid.Default().Detect(p.rich.Text)
		}
	}
	// Each node's goroutines carry a profile label, node=on or node=off,
	// so that a CPU profile of the benchmark tells the two apart.
	nodes := make([]*bskyNode, 2)
	for k, label := range []string{"on", "off"} {
		pprof.Do(context.Background(), pprof.Labels("node", label), func(context.Context) {
			nodes[k] = newBskyNodeWith(b, 10000, mixed, false, false, &countStore{}, nil, k == 1)
		})
	}
	var took, cpu [2]time.Duration
	rounds := 0
	for b.Loop() {
		for k, bn := range nodes {
			c := processCPU()
			took[k] += bn.round(b)
			cpu[k] += processCPU() - c
		}
		rounds++
	}
	perSec := func(d time.Duration) float64 { return float64(rounds*bskyBatch) / d.Seconds() }
	b.ReportMetric(perSec(took[0]), "posts/s(on)")
	b.ReportMetric(perSec(took[1]), "posts/s(off)")
	b.ReportMetric(perSec(took[0])/perSec(took[1]), "ratio")
	// The same ratio in processor time (of the whole process while a
	// node's round runs), which other processes on a shared machine
	// change far less than wall-clock time.
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-ratio")
	b.ReportMetric(float64(nodes[0].want-nodes[0].base)/float64(nodes[0].published), "comments/post(on)")
}

// processCPU is the processor time the process has used (user and
// system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
