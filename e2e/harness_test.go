// Package e2e starts real hubs and spawns on loopback ports in one test
// process (and, in binaries_test.go, as separate processes) against a local
// feed server, and checks the system's promises end to end.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/faultproxy"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// cluster is a test cluster (clustertest) and, when it was built with
// proxied set, the fault proxies between its hub and each spawn.
type cluster struct {
	*clustertest.Cluster
	t *testing.T
	// links are the fault proxies between the hub and each spawn, in the
	// order of Spawns, when the cluster was built with proxied set.
	links   []*link
	proxied bool
}

// link is the pair of proxies a proxied spawn talks through: down carries
// the hub's calls to the spawn, up the spawn's registration with the hub.
type link struct {
	down, up *faultproxy.Proxy
}

// cut breaks the link both ways; heal restores it.
func (l *link) cut()  { l.down.Cut(); l.up.Cut() }
func (l *link) heal() { l.down.Heal(); l.up.Heal() }

// setFaults applies random faults to the hub's calls to the spawn (polls,
// sends, removals) and to the spawn's registrations.
func (l *link) setFaults(f faultproxy.Faults) { l.down.SetFaults(f); l.up.SetFaults(f) }

type clusterOpts struct {
	spawns  int
	routing string
	// store is the spawns' --store URI; empty means a file store in a
	// temporary directory.
	store string
	// detachAfter overrides the hub's detach_after (sent to spawns).
	detachAfter time.Duration
	// proxied puts a fault proxy between the hub and every spawn.
	proxied bool
	// allowTargets is the hub's --allow-targets (alert delivery URLs).
	allowTargets []string
}

// newCluster starts a hub with clustertest's Fast timings and o.spawns
// spawns, and waits until they have registered.
func newCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t, proxied: o.proxied}
	c.Cluster = clustertest.New(t, clustertest.Options{Store: o.store, Hub: func(cfg *hubapp.Settings) {
		if o.routing != "" {
			cfg.Routing = o.routing
		}
		if o.detachAfter > 0 {
			cfg.DetachAfter = o.detachAfter
		}
		cfg.AllowTargets = o.allowTargets
	}})
	for range o.spawns {
		c.addSpawn()
	}
	c.WaitNodes(o.spawns)
	return c
}

func (c *cluster) addSpawn() *spawnapp.Spawn {
	c.t.Helper()
	return c.addSpawnWith(nil)
}

// addSpawnWith starts a spawn with the cluster's settings, changed by edit
// when it is not nil, behind a new link when the cluster is proxied.
func (c *cluster) addSpawnWith(edit func(*spawnapp.Settings)) *spawnapp.Spawn {
	c.t.Helper()
	if !c.proxied {
		return c.AddSpawn(edit)
	}
	l := c.newLink()
	s := c.AddSpawn(func(cfg *spawnapp.Settings) {
		if edit != nil {
			edit(cfg)
		}
		cfg.Hub, cfg.Advertise = l.up.URL(), l.down.URL()
	})
	l.down.SetTarget(s.URL())
	c.links = append(c.links, l)
	return s
}

// newLink starts the two proxies of a spawn's link to the hub.
func (c *cluster) newLink() *link {
	c.t.Helper()
	seed := uint64(time.Now().UnixNano())
	c.t.Logf("fault proxy seed for spawn%d: %d", len(c.Spawns)+1, seed)
	return &link{down: faultproxy.Start(c.t, "", seed), up: faultproxy.Start(c.t, c.Hub.URL(), seed+1)}
}

func (c *cluster) user(limit int64) api.User {
	c.t.Helper()
	u, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "customer", CommentLimit: limit})
	if err != nil {
		c.t.Fatal(err)
	}
	return u
}

func (c *cluster) rssCrawler(userID int64, feeds []string, keywords []string, limit int64) api.Crawler {
	c.t.Helper()
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: userID, Source: api.SourceRSS, Query: feeds, Keywords: keywords, CommentLimit: limit})
	if err != nil {
		c.t.Fatal(err)
	}
	return cr
}

func (c *cluster) crawler(id int64) api.Crawler {
	c.t.Helper()
	cr, err := c.Client.GetCrawler(c.Ctx, id)
	if err != nil {
		c.t.Fatal(err)
	}
	return cr
}

// spawnHealth reads a spawn's GET /v1/health over HTTP, as an operator would.
func spawnHealth(t *testing.T, s *spawnapp.Spawn) (api.SpawnHealth, bool) {
	t.Helper()
	return healthAt(s.URL(), healthReadTimeout)
}

// healthReadTimeout bounds spawnHealth's read of a spawn that is alive but
// slow: on the loaded test machine a health answer can take seconds.
const healthReadTimeout = 10 * time.Second

// healthAt reads the whole spawn health document at base (with the test
// clusters' node token: the open one only counts), giving up after timeout.
func healthAt(base string, timeout time.Duration) (api.SpawnHealth, bool) {
	c := http.Client{Timeout: timeout}
	req, err := http.NewRequest(http.MethodGet, base+api.PathHealth, nil)
	if err != nil {
		return api.SpawnHealth{}, false
	}
	req.Header.Set("Authorization", "Bearer "+clustertest.NodeToken)
	resp, err := c.Do(req)
	if err != nil {
		return api.SpawnHealth{}, false
	}
	defer resp.Body.Close()
	var h api.SpawnHealth
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&h) != nil {
		return api.SpawnHealth{}, false
	}
	return h, true
}

// runningOn maps each crawler id to the spawns (by node id) whose health
// lists it as a subscriber.
func (c *cluster) runningOn(spawns ...*spawnapp.Spawn) map[int64][]string {
	if len(spawns) == 0 {
		spawns = c.Spawns
	}
	out := map[int64][]string{}
	for _, s := range spawns {
		h, ok := spawnHealth(c.t, s)
		if !ok {
			continue
		}
		for _, sub := range h.Subscribers {
			out[sub.CrawlerID] = append(out[sub.CrawlerID], h.NodeID)
		}
	}
	return out
}

// storedComments reads every comment line the file store holds for a crawler.
func (c *cluster) storedComments(crawlerID int64) []api.Comment {
	c.t.Helper()
	return storedIn(c.t, c.StoreDir, crawlerID)
}

// storedIn reads every complete comment line a file store directory holds
// for a crawler.
func storedIn(t *testing.T, dir string, crawlerID int64) []api.Comment {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprint(crawlerID), "*.jsonl"))
	var out []api.Comment
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A line still being appended has no newline yet: skip it.
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var cm api.Comment
			if err := json.Unmarshal(line, &cm); err != nil {
				t.Fatalf("%s: bad line %q: %v", f, line, err)
			}
			out = append(out, cm)
		}
	}
	return out
}

// adminDo sends a raw admin request, for the bad-input tests.
func (c *cluster) adminDo(method, path, token, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.Ctx, method, c.Hub.URL()+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
