// Command feedserver serves RSS and Atom feeds that gain a new item every
// interval, and a Bluesky Jetstream endpoint (/subscribe) whose posts come
// at their own pace, for the demo and for trying crawlers without the
// internet.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
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
	PostEvery time.Duration `flag:"post-every" usage:"how often the Jetstream endpoint (/subscribe) publishes a Bluesky post (0: never)"`
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
		PostEvery: 500 * time.Millisecond,
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
	if cfg.Every < 0 || cfg.PostEvery < 0 {
		return fmt.Errorf("--every and --post-every must not be negative, got %s and %s", cfg.Every, cfg.PostEvery)
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
	fmt.Printf("ws://%s%s\n", ln.Addr().String(), jetstream.SubscribePath)
	logger.Info("feed server listening", "addr", ln.Addr().String(), "feeds", strings.Join(feeds, ","), "every", cfg.Every, "post_every", cfg.PostEvery)
	js := jetstream.New(jetstream.Options{Logger: logger})
	defer js.Close()
	// The accounts' handles, for spawns given this server as their
	// --bluesky-appview-url (Jetstream names authors by DID only).
	av := appview.New()
	for i := range demoAccounts {
		av.Set(fmt.Sprintf("did:plc:demo%d", i), fmt.Sprintf("demo%d.bsky.social", i))
	}
	mux := http.NewServeMux()
	mux.Handle(jetstream.SubscribePath, js.Handler())
	mux.Handle(appview.ProfilesPath, av.Handler())
	mux.Handle("/", srv.Handler())

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if cfg.Every > 0 && len(feeds) > 0 {
			srv.Generate(ctx, feeds, cfg.Every)
		}
	}()
	go func() {
		defer wg.Done()
		if cfg.PostEvery > 0 {
			generatePosts(ctx, js, cfg.PostEvery)
		}
	}()
	err = httpx.Serve(ctx, ln, mux)
	stop()
	wg.Wait()
	logger.Info("feed server stopped")
	return err
}

// demoAccounts is how many accounts generated posts come from.
const demoAccounts = 5

// postLangs are the languages generated posts declare, in turn.
var postLangs = []string{"en", "en", "de", "en", "fr"}

// generatePosts publishes a Bluesky post every interval until ctx ends:
// the feed items' deterministic sequence, as short posts from a few
// accounts, some of them replies to the post before.
func generatePosts(ctx context.Context, js *jetstream.Server, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last jetstream.Published
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		it := feedserver.GenerateItem(n)
		p := jetstream.Post{
			DID:   fmt.Sprintf("did:plc:demo%d", n%demoAccounts),
			Text:  it.Title + " #" + feedserver.Topics[n%len(feedserver.Topics)],
			Langs: []string{postLangs[n%len(postLangs)]},
		}
		if n%3 == 2 && last.URI != "" {
			p.ReplyParent, p.ReplyRoot = last.URI, last.URI
		}
		last = js.Publish(p)
	}
}
