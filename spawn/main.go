// Command spawn is a Black Widow crawl node: it registers with the hub, runs
// the subscribers the hub assigns, shares data sources among them, and
// writes the comments it counts to the store.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/logx"
	"github.com/blackwidow-crawl/blackwidow/spawn/app"
)

func main() {
	if err := run(); err != nil {
		if errors.Is(err, config.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := app.DefaultSettings()
	if err := config.Load("spawn", &cfg, os.Args[1:], os.LookupEnv, os.Stderr); err != nil {
		return err
	}
	logger, err := logx.New(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := app.Start(ctx, cfg, logger)
	if err != nil {
		return err
	}
	return s.Wait()
}
