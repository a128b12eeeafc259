package main

import (
	"time"

	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
)

// timings are the test clusters': polls and fetches are fast so a cluster
// settles in well under a second, while the orphan and detach timeouts
// leave room for a slow poll under the race detector, which these tests do
// not exercise.
var timings = clustertest.Timings{
	Poll:         200 * time.Millisecond,
	OrphanAfter:  2 * time.Second,
	DetachAfter:  3 * time.Second,
	FeedInterval: 50 * time.Millisecond,
}
