package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/natstest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// natsClusterURL is the spawns' --queue on cluster nc: every server, with
// the stream's replicas.
func natsClusterURL(nc *natstest.Cluster) string { return nc.URLs() + "?replicas=3" }

// TestNatsCluster_ServerLossPublishesEachCommentOnce kills the leader of the
// comment stream (three replicas) with SIGKILL while two spawns publish: the
// other two servers keep the stream writable, the spawns carry on, and the
// stream holds every counted comment exactly once by its Nats-Msg-Id, the
// batches re-sent after the kill dropped as duplicates (the new leader
// knows the ids its predecessor stored).
func TestNatsCluster_ServerLossPublishesEachCommentOnce(t *testing.T) {
	nc := natstest.StartCluster(t, 3)
	c := newCluster(t, clusterOpts{})
	c.queueSpawn(natsClusterURL(nc))
	c.queueSpawn(natsClusterURL(nc))
	c.WaitNodes(2)

	info, err := natstest.StreamInfo(nc.URLs(), commentStream)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream %s: %d replicas, cluster %+v; want 3 replicas on 3 servers", commentStream, info.Config.Replicas, info.Cluster)
	}
	load := newFeedLoad(c, "natsloss", 4, time.Now().Add(-time.Hour).Truncate(time.Second))
	load.publish(10)
	waitUsage(t, load, clustertest.WaitTimeout, "before the outage")

	// The spawns are publishing this burst when the stream's leader dies.
	load.publish(20)
	leader := nc.Server(info.Cluster.Leader)
	if leader == nil {
		t.Fatalf("no server %q in the cluster", info.Cluster.Leader)
	}
	leader.Stop(syscall.SIGKILL)
	killed := time.Now()
	load.publish(10)
	waitUsage(t, load, outageTimeout, fmt.Sprintf("with %s (the stream leader) down", leader.Name()))
	t.Logf("every comment of the outage counted %s after the kill", time.Since(killed).Round(time.Millisecond))

	leader.Restart()
	load.publish(10)
	waitUsage(t, load, outageTimeout, leader.Name()+" back")
	testkit.WaitFor(t, outageTimeout, leader.Name()+" current in the stream again", func() bool {
		info, err := natstest.StreamInfo(nc.URLs(), commentStream)
		if err != nil || info.Cluster == nil {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if r.Name == leader.Name() {
				return r.Current && !r.Offline
			}
		}
		return info.Cluster.Leader == leader.Name()
	})

	want := load.n * len(load.feeds)
	byID := messageIDs(t, nc, commentStream)
	for id, seqs := range byID {
		if len(seqs) > 1 {
			t.Errorf("Nats-Msg-Id %s stored %d times, at sequences %v", id, len(seqs), seqs)
		}
	}
	for _, cr := range load.crawlers {
		stored := c.storedIDs(cr.ID)
		pub := map[string]bool{}
		for id := range byID {
			if crawler, comment, _ := strings.Cut(id, ":"); crawler == fmt.Sprint(cr.ID) {
				pub[comment] = true
			}
		}
		sameIDs(t, fmt.Sprintf("crawler %d", cr.ID), stored, pub)
	}
	if len(byID) != want {
		t.Fatalf("stream holds %d distinct comments, want the %d counted", len(byID), want)
	}
	t.Logf("%d comments in the stream, each once", len(byID))
}

// messageIDs reads every message of a stream by its sequence and returns
// the sequences at which each Nats-Msg-Id is stored. It checks each
// message's subject and id against its comment.
func messageIDs(t *testing.T, nc *natstest.Cluster, stream string) map[string][]uint64 {
	t.Helper()
	out := map[string][]uint64{}
	for _, m := range natstest.StreamBySeq(t, nc.URLs(), stream) {
		var cm api.Comment
		if err := json.Unmarshal(m.Data, &cm); err != nil {
			t.Fatalf("sequence %d on %s is not a comment: %v", m.Sequence, m.Subject, err)
		}
		id := m.Header.Get(jetstream.MsgIDHeader)
		if want := fmt.Sprintf("%d:%s", cm.CrawlerID, cm.ID); id != want {
			t.Fatalf("comment %s has Nats-Msg-Id %q, want %q", cm.ID, id, want)
		}
		if want := fmt.Sprintf("comments.%d", cm.CrawlerID); m.Subject != want {
			t.Fatalf("comment %s of crawler %d published on %s, want %s", cm.ID, cm.CrawlerID, m.Subject, want)
		}
		out[id] = append(out[id], m.Sequence)
	}
	return out
}

// waitUsage waits until the hub counts every item load published.
func waitUsage(t *testing.T, load *feedLoad, timeout time.Duration, what string) {
	t.Helper()
	want := int64(load.n * len(load.feeds))
	took := testkit.WaitFor(t, timeout, fmt.Sprintf("%s: usage %d", what, want), func() bool { return load.usage() == want })
	t.Logf("%s: %d comments counted (%s)", what, want, took.Round(time.Millisecond))
}
