package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// blackholeBound: a spawn that stops answering (its host blackholed) →
// its crawlers run on another spawn, at default settings.
const blackholeBound = 10 * time.Second

// tcpHole forwards TCP connections to a target until it is blackholed;
// from then on it accepts connections and keeps them open but never
// answers, and connections already open go silent, as a host that drops
// every packet looks to its peers.
type tcpHole struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	black bool
	conns []net.Conn
}

func startHole(t *testing.T, target string) *tcpHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &tcpHole{ln: ln, target: target}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.serve(&wg) }()
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		for _, c := range h.conns {
			c.Close()
		}
		h.mu.Unlock()
		wg.Wait()
	})
	return h
}

func (h *tcpHole) serve(wg *sync.WaitGroup) {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.conns = append(h.conns, c)
		black := h.black
		h.mu.Unlock()
		if black {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", h.target)
		if err != nil {
			c.Close()
			continue
		}
		h.mu.Lock()
		h.conns = append(h.conns, up)
		h.mu.Unlock()
		wg.Add(2)
		// Neither direction closes the caller's side: once the target
		// side is cut, the caller waits for an answer that never comes.
		go func() { defer wg.Done(); _, _ = io.Copy(up, c) }()
		go func() { defer wg.Done(); _, _ = io.Copy(c, up) }()
	}
}

// blackhole silences the link: the target side of every open connection
// is closed, the caller side stays open and mute.
func (h *tcpHole) blackhole(target net.Addr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.black = true
	for _, c := range h.conns {
		if c.RemoteAddr().String() == target.String() {
			c.Close()
		}
	}
}

func (h *tcpHole) url() string { return "http://" + h.ln.Addr().String() }

// TestFailureDetection_BlackholedSpawnLosesItsCrawlers runs the hub and two
// spawns at default timings; one spawn's host stops answering (its address
// blackholed: connections hang, nothing is refused). Its crawlers run on
// the other spawn within blackholeBound.
func TestFailureDetection_BlackholedSpawnLosesItsCrawlers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs at default timings")
	}
	c := clustertest.New(t, clustertest.Options{Timings: clustertest.Timings{
		Poll: 2 * time.Second, OrphanAfter: 10 * time.Second, DetachAfter: 15 * time.Second, FeedInterval: 500 * time.Millisecond,
	}})
	var hole *tcpHole
	var victimAddr net.Addr
	victim := c.AddSpawn(func(cfg *spawnapp.Settings) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = ln.Addr().String()
		ln.Close()
		victimAddr = ln.Addr()
		hole = startHole(t, cfg.Listen)
		cfg.Advertise = hole.url()
	})
	c.WaitNodes(1)
	c.AddSpawn(nil)
	c.WaitNodes(2)
	u, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "hole"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 8 {
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{c.FeedURL("hole" + string(rune('a'+i)))}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	onVictim := func() int {
		list, err := c.Client.ListCrawlers(c.Ctx)
		if err != nil {
			return -1
		}
		n := 0
		for _, cr := range list {
			if cr.Node == victim.ID() {
				n++
			}
		}
		return n
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "crawlers running on both spawns", func() bool {
		list, err := c.Client.ListCrawlers(c.Ctx)
		if err != nil || len(list) != len(ids) {
			return false
		}
		for _, cr := range list {
			if cr.State != api.StateRunning {
				return false
			}
		}
		return onVictim() > 0
	})
	hole.blackhole(victimAddr)
	moved := testkit.WaitFor(t, 2*blackholeBound, "every crawler running on the answering spawn", func() bool {
		list, err := c.Client.ListCrawlers(c.Ctx)
		if err != nil {
			return false
		}
		for _, cr := range list {
			if cr.State != api.StateRunning || cr.Node == victim.ID() || cr.Node == "" {
				return false
			}
		}
		return true
	})
	t.Logf("spawn blackholed: its crawlers running elsewhere after %s (bound %s)", moved.Round(time.Millisecond), blackholeBound)
	if moved > blackholeBound+schedulingSlack {
		t.Errorf("moving a blackholed spawn's crawlers took %s, over %s", moved, blackholeBound)
	}
}
