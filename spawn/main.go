// Command spawn is a Black Widow crawl node: it registers with the hub, runs
// the subscribers the hub assigns, shares data sources among them, and
// writes the comments it counts to the store.
package main

import (
	"context"
	"log/slog"

	"github.com/blackwidow-crawl/blackwidow/pkg/service"
	"github.com/blackwidow-crawl/blackwidow/spawn/app"
)

func main() {
	cfg := app.DefaultSettings()
	service.Main("spawn", &cfg, func(ctx context.Context, cfg *app.Settings, logger *slog.Logger) (*service.Service, error) {
		s, err := app.Start(ctx, *cfg, logger)
		if err != nil {
			return nil, err
		}
		return s.Service, nil
	})
}
