// Command spawn is a Black Widow crawl node: it registers with the hub, runs
// the subscribers the hub assigns, shares data sources among them, and
// writes the comments it counts to the store.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/blackwidow-crawl/blackwidow/pkg/service"
	"github.com/blackwidow-crawl/blackwidow/spawn/app"
)

func main() {
	cfg := app.DefaultSettings()
	service.Main("spawn", &cfg, func(ctx context.Context, cfg *app.Settings, logger *slog.Logger) (*service.Service, error) {
		// The spawn outlives the signal: SIGTERM drains it (its crawlers
		// handed to other spawns, its usage acknowledged), then it stops.
		// A second signal stops it at once.
		s, err := app.Start(context.WithoutCancel(ctx), *cfg, logger)
		if err != nil {
			return nil, err
		}
		go func() {
			<-ctx.Done()
			again := make(chan os.Signal, 1)
			signal.Notify(again, os.Interrupt, syscall.SIGTERM)
			go func() {
				<-again
				logger.Warn("second signal: stopping without finishing the drain")
				_ = s.Stop()
			}()
			_ = s.Drain()
		}()
		return s.Service, nil
	})
}
