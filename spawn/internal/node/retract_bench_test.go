package node

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// The real mix of a Bluesky connection asking for posts (wantedCollections
// app.bsky.feed.post), as the recorded production corpus has it
// (spawn/internal/source/bluesky/testdata/jetstream_expected_v1.jsonl: 16
// post creates, 1 post delete and 1 account event among its events): a
// delete and an account event for every 16 posts. Account events are
// nearly all accounts becoming active; one in bskyTakedownOneIn is a
// takedown or a deletion (of accounts that post nothing here, so the
// comments a round makes stay what the queries say).
const (
	bskyCreatesPerDelete = 16
	bskyTakedownOneIn    = 20
)

// retractStore is countStore that also keeps what it stored by comment id
// and takes comments back: an in-memory store, so the benchmark weighs
// the retraction path (decoding, the node's pipeline, the writer's
// checks), not a disk. It records when each comment was removed.
type retractStore struct {
	countStore
	mu      sync.Mutex
	stored  map[string][]int64 // comment id → crawlers
	removed map[string]time.Time
	buries  atomic.Int64
}

func newRetractStore() *retractStore {
	return &retractStore{stored: map[string][]int64{}, removed: map[string]time.Time{}}
}

func (r *retractStore) Write(ctx context.Context, cs []api.Comment) error {
	r.mu.Lock()
	for i := range cs {
		r.stored[cs[i].ID] = append(r.stored[cs[i].ID], cs[i].CrawlerID)
	}
	r.mu.Unlock()
	return r.countStore.Write(ctx, cs)
}

func (r *retractStore) Bury(_ context.Context, ts []store.Tombstone) ([]store.Removed, error) {
	r.buries.Add(1)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.Removed
	for _, t := range ts {
		if t.CommentID == "" {
			continue
		}
		for _, c := range r.stored[t.CommentID] {
			out = append(out, store.Removed{CrawlerID: c, CommentID: t.CommentID})
		}
		if _, ok := r.stored[t.CommentID]; ok {
			delete(r.stored, t.CommentID)
			r.removed[t.CommentID] = now
		}
	}
	return out, nil
}

func (r *retractStore) Sweep(context.Context) ([]store.Removed, error)  { return nil, nil }
func (r *retractStore) Lift(context.Context, string, []string) error    { return nil }
func (r *retractStore) Edit(context.Context, []store.Edit) (int, error) { return 0, nil }
func (r *retractStore) Applied(context.Context) (uint64, error)         { return 0, nil }
func (r *retractStore) SetApplied(context.Context, uint64) error        { return nil }
func (r *retractStore) ID() string                                      { return "bench" }
func (r *retractStore) removedAt(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.removed[id]
	return t, ok
}
func (r *retractStore) holds(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.stored[id]
	return ok
}

// retractRound is a round of BenchmarkBlueskyPath's deletions run: the
// round's posts, with the real mix when mixed: a delete for every 16
// posts, of a post of the round before that a crawler stored, and an
// account event as often. It returns how long the round took, and, for
// each delete, when it was sent.
func (bn *bskyNode) retractRound(b *testing.B, r *rand.Rand, mixed bool, prev []string) (time.Duration, []string, map[string]time.Time) {
	for j := range bskyBatch {
		bn.want += int64(len(bn.index.Match(bn.posts[(bn.published+j)%len(bn.posts)].rich)))
	}
	sent := map[string]time.Time{}
	var uris []string
	start := time.Now()
	for j := range bskyBatch {
		p := bn.js.Publish(bn.posts[(bn.published+j)%len(bn.posts)].post)
		uris = append(uris, p.URI)
		if !mixed || j%bskyCreatesPerDelete != bskyCreatesPerDelete-1 {
			continue
		}
		if len(prev) > 0 {
			uri := prev[r.IntN(len(prev))]
			did, rkey := splitURI(uri)
			sent[uri] = time.Now()
			bn.js.Publish(jetstream.Post{DID: did, RKey: rkey, Operation: "delete"})
		}
		other := "did:plc:elsewhere" + string(rune('a'+r.IntN(26))) + string(rune('a'+r.IntN(26)))
		switch r.IntN(bskyTakedownOneIn) {
		case 0:
			bn.js.PublishAccount(other, false, api.AccountTakendown)
		case 1:
			bn.js.PublishAccount(other, false, api.AccountDeleted)
		default:
			bn.js.PublishAccount(other, true, "")
		}
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
	bn.acks = ackUsage(b, bn.n, bn.acks)
	return took, uris, sent
}

// splitURI is the DID and record key of a post's at:// URI.
func splitURI(uri string) (did, rkey string) {
	rest := uri[len("at://"):]
	i := 0
	for i < len(rest) && rest[i] != '/' {
		i++
	}
	did = rest[:i]
	j := len(rest) - 1
	for j >= 0 && rest[j] != '/' {
		j--
	}
	return did, rest[j+1:]
}

// benchRetractions runs BenchmarkBlueskyPath's deletions=on-vs-off: two
// spawns of 10,000 subscribers, each on a store that takes comments back,
// in alternating rounds; one reads the real mix of deletes and account
// events besides the posts, the other the posts alone. It reports their
// throughputs, the ratio (on / off), and how long each delete took from
// the service to the store (p50, p99), under that load.
func benchRetractions(b *testing.B, posts []bskyPost) {
	stores := []*retractStore{newRetractStore(), newRetractStore()}
	nodes := make([]*bskyNode, 2)
	for k := range nodes {
		nodes[k] = newBskyNodeOn(b, 10000, posts, stores[k])
	}
	r := rand.New(rand.NewPCG(11, 12))
	var took [2]time.Duration
	var prev [2][]string
	var latencies []time.Duration
	var pendingDeletes []map[string]time.Time
	rounds := 0
	for b.Loop() {
		for k, bn := range nodes {
			// Deletes of posts no crawler stored change nothing a store
			// holds: keep the ones some crawler stored.
			var stored []string
			for _, uri := range prev[k] {
				if stores[k].holds(uri) {
					stored = append(stored, uri)
				}
			}
			d, uris, sent := bn.retractRound(b, r, k == 0, stored)
			took[k] += d
			prev[k] = uris
			if k == 0 {
				pendingDeletes = append(pendingDeletes, sent)
			}
		}
		rounds++
	}
	b.StopTimer()
	// Every delete's removal, measured from when it was sent.
	deadline := time.Now().Add(time.Minute)
	for _, sent := range pendingDeletes {
		for uri, at := range sent {
			for {
				if t, ok := stores[0].removedAt(uri); ok {
					latencies = append(latencies, t.Sub(at))
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("a delete of %s not applied within a minute", uri)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	perSec := func(d time.Duration) float64 { return float64(rounds*bskyBatch) / d.Seconds() }
	b.ReportMetric(perSec(took[0]), "posts/s(on)")
	b.ReportMetric(perSec(took[1]), "posts/s(off)")
	b.ReportMetric(perSec(took[0])/perSec(took[1]), "ratio")
	if len(latencies) > 0 {
		slices.Sort(latencies)
		b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "delete-p50-ms")
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "delete-p99-ms")
		b.ReportMetric(float64(len(latencies))/float64(rounds), "deletes/round")
	}
}
