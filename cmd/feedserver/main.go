// Command feedserver serves RSS and Atom feeds that gain a new item every
// interval, for the demo and for trying crawlers without the internet.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/logx"
)

// Settings are the feed server's flags; each also reads BW_<NAME> and the
// --config YAML file.
type Settings struct {
	Listen    string        `flag:"listen" usage:"address to serve the feeds on"`
	Feeds     []string      `flag:"feeds" usage:"names of the feeds to generate items for"`
	Every     time.Duration `flag:"every" usage:"how often each feed gains an item (0: never)"`
	MaxItems  int           `flag:"max-items" usage:"newest items each feed serves"`
	LogLevel  string        `flag:"log-level" usage:"debug, info, warn or error"`
	LogFormat string        `flag:"log-format" usage:"text or json"`
}

func main() {
	if err := run(); err != nil {
		if errors.Is(err, config.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "feedserver:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := Settings{
		Listen:    "127.0.0.1:8780",
		Feeds:     []string{"news", "tech", "sport"},
		Every:     time.Second,
		MaxItems:  feedserver.DefaultMaxItems,
		LogLevel:  "info",
		LogFormat: "text",
	}
	if err := config.Load("feedserver", &cfg, os.Args[1:], os.LookupEnv, os.Stderr); err != nil {
		return err
	}
	logger, err := logx.New(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	if cfg.Every < 0 {
		return fmt.Errorf("--every must not be negative, got %s", cfg.Every)
	}
	var feeds []string
	for _, f := range cfg.Feeds {
		if f = strings.TrimSpace(f); f != "" {
			feeds = append(feeds, f)
		}
	}
	for _, f := range feeds {
		if err := feedserver.ValidName(f); err != nil {
			return fmt.Errorf("--feeds: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := feedserver.New(feedserver.Options{MaxItems: cfg.MaxItems, Logger: logger})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("unable to listen on %s: %w", cfg.Listen, err)
	}
	base := "http://" + ln.Addr().String()
	for _, f := range feeds {
		fmt.Printf("%s/feeds/%s.xml\n", base, f)
	}
	for _, f := range feeds {
		fmt.Printf("%s/feeds/%s.atom\n", base, f)
	}
	logger.Info("feed server listening", "addr", ln.Addr().String(), "feeds", strings.Join(feeds, ","), "every", cfg.Every)

	done := make(chan struct{})
	go func() {
		defer close(done)
		if cfg.Every > 0 && len(feeds) > 0 {
			srv.Generate(ctx, feeds, cfg.Every)
		}
	}()
	err = httpx.Serve(ctx, ln, srv.Handler())
	stop()
	<-done
	logger.Info("feed server stopped")
	return err
}
