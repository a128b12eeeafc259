package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestCompliance_XReportsGonePostsAndTheyAreRemoved stores two X posts,
// has the local X report one of them deleted, and runs a compliance check
// through the hub: the run is recorded complete, having checked both and
// found one gone, which is removed. A job X fails is recorded failed and
// removes nothing.
func TestCompliance_XReportsGonePostsAndTheyAreRemoved(t *testing.T) {
	srv, apiURL := xv2.Start(t, xv2.Options{BearerToken: "bearer"})
	srv.SetComplianceTimings(100*time.Millisecond, 0)
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) { cfg.Twitter.APIURL, cfg.Twitter.BearerToken = apiURL, "bearer" })
	c.WaitNodes(1)
	u := c.user(0)
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceTwitter, Query: []string{"gophers"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler's rule and the stream", func() bool {
		return len(srv.Rules()) > 0 && srv.Connected()
	})
	kept, _ := srv.Publish(xv2.Post{Text: "gophers everywhere", Username: "a", AuthorID: "1"})
	gone, _ := srv.Publish(xv2.Post{Text: "gophers, soon deleted", Username: "b", AuthorID: "2"})
	stored := func() []string { return sorted(commentIDs(c.storedComments(cr.ID))) }
	testkit.WaitFor(t, clustertest.WaitTimeout, "both posts stored", func() bool { return len(stored()) == 2 })

	srv.FailNextJob()
	failed, err := c.Client.RunCompliance(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != "failed" || failed.Checked != 2 || failed.Deleted != 0 || failed.Error == "" || failed.JobID == "" {
		t.Errorf("the failed run: %+v", failed)
	}

	srv.RemovePost(gone.ID, "deleted")
	run, err := c.Client.RunCompliance(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "complete" || run.Checked != 2 || run.Deleted != 1 || run.FinishedAt == nil {
		t.Errorf("the run: %+v", run)
	}
	testkit.WaitFor(t, removalDeadline, "the gone post removed", func() bool {
		return slices.Equal(stored(), []string{"tw:" + kept.ID})
	})
	runs, err := c.Client.ComplianceRuns(c.Ctx)
	if err != nil || len(runs) != 2 || runs[0].ID != run.ID || runs[1].Status != "failed" {
		t.Errorf("runs %+v, %v", runs, err)
	}
	if jobs := srv.Jobs(); len(jobs) != 2 || !slices.Equal(sorted(jobs[1].IDs), sorted([]string{kept.ID, gone.ID})) {
		t.Errorf("jobs at X: %+v", jobs)
	}
}
