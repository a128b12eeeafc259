package app

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/bluesky"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/mastodon"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/rss"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/stream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/twitterv1"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/twitterv2"
)

// sourceKinds builds the source kinds the spawn crawls with: rss always,
// bluesky unless turned off, twitter, stream and mastodon when their
// credentials or instances are configured. A kind without
// credentials is registered as a stand-in that fails its subscribers saying
// what is missing, rather than as an unknown kind.
func sourceKinds(cfg Settings, guard netguard.Options, logger *slog.Logger) (source.Registry, error) {
	kinds := source.Registry{
		api.SourceRSS:      rss.New(rss.Options{Client: netguard.NewClient(guard), Interval: cfg.FeedInterval, MinInterval: cfg.FeedMinInterval, MaxInterval: cfg.FeedMaxInterval, HostDelay: cfg.FeedHostDelay, Logger: logger}),
		api.SourceTwitter:  twitterv1.Unconfigured(),
		api.SourceStream:   stream.Unconfigured(),
		api.SourceBluesky:  source.Unconfigured(errors.New("bluesky: this spawn runs with --bluesky=false")),
		api.SourceMastodon: mastodon.Unconfigured(),
	}
	if cfg.Bluesky {
		// The Jetstream and AppView URLs are the operator's, not crawl
		// input: they are not held to the crawl-target guard (the demo's
		// are on loopback).
		k, err := bluesky.New(bluesky.Options{JetstreamURL: cfg.BlueskyJetstreamURL, AppViewURL: cfg.BlueskyAppViewURL,
			Compress: cfg.BlueskyCompress, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("spawn: %w", err)
		}
		kinds[api.SourceBluesky] = k
	}
	if len(cfg.MastodonURL) > 0 {
		if cfg.MastodonToken == "" {
			logger.Warn("mastodon source without an access token: instances since Mastodon 4.2 refuse public streams without one (set BW_MASTODON_TOKEN_FILE)")
		}
		k, err := mastodon.New(mastodon.Options{
			Instances: cfg.MastodonURL, Token: cfg.MastodonToken,
			Client: netguard.NewClient(guard), Logger: logger,
		})
		if err != nil {
			return nil, fmt.Errorf("spawn: %w", err)
		}
		kinds[api.SourceMastodon] = k
	}
	creds := twitterv1.Credentials{
		ConsumerKey: cfg.TwitterConsumerKey, ConsumerSecret: cfg.TwitterConsumerSecret,
		AccessToken: cfg.TwitterAccessToken, AccessSecret: cfg.TwitterAccessSecret,
	}
	switch {
	case cfg.TwitterBearerToken != "" && !creds.IsZero():
		return nil, errors.New("spawn: give either --twitter-bearer-token (X API v2) or the four OAuth 1.0a credentials (v1.1), not both")
	case cfg.TwitterBearerToken != "":
		k, err := twitterv2.New(twitterv2.Options{
			APIURL: cfg.TwitterAPIURL, BearerToken: cfg.TwitterBearerToken,
			MaxRules: cfg.TwitterMaxRules, MaxRuleLength: cfg.TwitterMaxRuleLength,
			Client: netguard.NewClient(guard), Logger: logger,
		})
		if err != nil {
			return nil, fmt.Errorf("spawn: %w", err)
		}
		kinds[api.SourceTwitter] = k
	case creds.Complete():
		k, err := twitterv1.New(twitterv1.Options{
			Credentials: creds, APIURL: cfg.TwitterAPIURL, StreamURL: cfg.TwitterStreamURL,
			Client: netguard.NewClient(guard), Logger: logger,
		})
		if err != nil {
			return nil, fmt.Errorf("spawn: %w", err)
		}
		kinds[api.SourceTwitter] = k
	case !creds.IsZero():
		return nil, errors.New("spawn: --twitter-consumer-key, --twitter-consumer-secret, --twitter-access-token and --twitter-access-secret must be set together")
	}
	switch {
	case cfg.StreamURL != "" && cfg.StreamAPIKey != "":
		k, err := stream.New(stream.Options{
			URL: cfg.StreamURL, Username: cfg.StreamUsername, APIKey: cfg.StreamAPIKey,
			Client: netguard.NewClient(guard), Logger: logger,
		})
		if err != nil {
			return nil, fmt.Errorf("spawn: %w", err)
		}
		kinds[api.SourceStream] = k
	case cfg.StreamURL != "" || cfg.StreamAPIKey != "" || cfg.StreamUsername != "":
		return nil, errors.New("spawn: --stream-url and --stream-api-key must be set together")
	}
	return kinds, nil
}
