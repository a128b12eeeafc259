package app

import (
	"context"
	"log/slog"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/xcompliance"
)

// complianceChecker builds the X compliance check of a spawn holding an X
// API v2 bearer token (the jobs live under --twitter-api-url); nil
// without one.
func complianceChecker(cfg Settings, logger *slog.Logger) (node.ComplianceChecker, error) {
	if cfg.TwitterBearerToken == "" {
		return nil, nil
	}
	c, err := xcompliance.New(xcompliance.Options{APIURL: cfg.TwitterAPIURL, BearerToken: cfg.TwitterBearerToken,
		Logger: logger.With("component", "x-compliance")})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, ids []string) (string, string, map[string]string, error) {
		res, err := c.Check(ctx, ids)
		gone := make(map[string]string, len(res.Gone))
		for _, g := range res.Gone {
			gone[g.ID] = g.Reason
		}
		return res.JobID, res.Status, gone, err
	}, nil
}
