package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

func TestRun_Scaling(t *testing.T) {
	const target = 2
	cl := clustertest.New(t, clustertest.Options{Spawns: 1, Timings: timings,
		Hub: func(cfg *hubapp.Settings) { cfg.ScalingTarget = target }})
	hub, client, feedBase := cl.Hub.URL(), cl.Client, cl.FeedBase
	ctx := context.Background()

	// Three enabled crawlers want a subscriber each; a disabled one does not.
	u, err := client.CreateUser(ctx, api.UserCreate{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		enabled := i < 3
		in := api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{fmt.Sprintf("%s/feeds/f%d.xml", feedBase, i)}, Enabled: &enabled}
		if _, err := client.CreateCrawler(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the three subscribers assigned to the spawn", func() bool {
		hh, err := client.Health(ctx)
		return err == nil && len(hh.Nodes) == 1 && hh.Crawlers.Total == 4 && hh.Crawlers.Assigned == 3
	})
	want := api.Scaling{Nodes: 1, Subscribers: 3, TargetSubscribersPerNode: target, DesiredNodes: 2} // ceil(3 / 2)

	out := bwctl(t, hub, "scaling").ok(t).stdout
	if !regexp.MustCompile(`^nodes:\s+1\nsubscribers:\s+3\ntarget_subscribers_per_node:\s+2\ndesired_nodes:\s+2\n$`).MatchString(out) {
		t.Fatalf("scaling printed:\n%s", out)
	}
	if got := decodeJSON[api.Scaling](t, bwctl(t, hub, "scaling", "--json").ok(t).stdout); got != want {
		t.Fatalf("scaling --json: %+v, want %+v", got, want)
	}
	checkFailure(t, bwctlEnv(t, map[string]string{"BW_HUB_URL": hub}, "scaling"), 1, `^missing bearer token \(401\): no admin token given`)
	checkFailure(t, bwctl(t, hub, "scaling", "extra"), 2, `^usage: bwctl scaling$`)
}
