// Command hub is Black Widow's control server: it owns the SQL database of
// users and crawlers, routes each crawler's subscriber to a spawn node, polls
// the nodes and reloads when nodes or crawlers change.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/logx"
)

func main() {
	if err := run(); err != nil {
		if errors.Is(err, config.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "hub:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := app.DefaultSettings()
	if err := config.Load("hub", &cfg, os.Args[1:], os.LookupEnv, os.Stderr); err != nil {
		return err
	}
	logger, err := logx.New(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := app.Start(ctx, cfg, logger)
	if err != nil {
		return err
	}
	return h.Wait()
}
