// Command hub is Black Widow's control server: it owns the SQL database of
// users and crawlers, routes each crawler's subscriber to a spawn node, polls
// the nodes and reloads when nodes or crawlers change.
package main

import (
	"context"
	"log/slog"

	"github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/pkg/service"
)

func main() {
	cfg := app.DefaultSettings()
	service.Main("hub", &cfg, func(ctx context.Context, cfg *app.Settings, logger *slog.Logger) (*service.Service, error) {
		h, err := app.Start(ctx, *cfg, logger)
		if err != nil {
			return nil, err
		}
		return h.Service, nil
	})
}
