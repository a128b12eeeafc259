// Package alert tells a team when the conversation moves: it evaluates the
// alert rules (spikes in comments per minute, terms rising into a
// crawler's top terms, comments matching a query, a crisis: the share of
// negative comments far above its baseline) on the leading hub and
// delivers the alerts they fire to webhooks, Slack and e-mail, each
// exactly once per alert: an alert and its deliveries are in SQL before
// the first attempt, every attempt of a delivery carries the same id, and
// only the hub that leads (by its term, checked in SQL) records or sends.
package alert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
)

// Defaults of Config.
const (
	// DefaultRetryMin is the wait before the first retry of a delivery;
	// each retry doubles it (with jitter) up to DefaultRetryMax.
	DefaultRetryMin = 15 * time.Second
	// DefaultRetryMax caps the wait between retries.
	DefaultRetryMax = 30 * time.Minute
	// DefaultRetryFor is how long a delivery is retried before it is
	// marked failed.
	DefaultRetryFor = 24 * time.Hour
	// DefaultSettle is how long after a minute ends it is evaluated: the
	// spawns report a minute's comments within a poll or two.
	DefaultSettle = 10 * time.Second
	// DefaultMatchEvery is how often match rules read new comments: a
	// burst of matches within it is one alert.
	DefaultMatchEvery = 30 * time.Second
)

// Limits.
const (
	// DefaultAttemptTimeout bounds one delivery attempt: connect, send,
	// answer.
	DefaultAttemptTimeout = 10 * time.Second
	// claimMargin is added to the attempt timeout when a delivery is claimed:
	// a hub that dies during its attempt leaves the delivery to the next
	// leader this long after the attempt began.
	claimMargin = 5 * time.Second
	// maxAnswerBytes is how much of a receiver's answer is read.
	maxAnswerBytes = 64 << 10
	// deliverConcurrency bounds attempts in flight at once, to all
	// receivers; perDestination bounds them to one.
	deliverConcurrency = 128
	// dueBatch is how many due deliveries one pass takes.
	dueBatch = 64
	// deliveryPoll is how often the sender looks for due deliveries when
	// nothing woke it (a retry falling due, one left by a previous
	// leader).
	deliveryPoll = time.Second
	// enrichTimeout bounds reading an alert's top terms and sample
	// comments: an alert goes out without them rather than late.
	enrichTimeout = 2 * time.Second
	// sampleSize is how many comments an alert shows.
	sampleSize = 3
	// topTermsShown is how many top terms an alert shows.
	topTermsShown = 5
	// resolveTimeout bounds resolving a delivery URL's host when a rule
	// is created.
	resolveTimeout = 5 * time.Second
	// maxSecret bounds a webhook's secret.
	maxSecret = 512
	// maxTarget bounds a delivery URL or address.
	maxTarget = 2048
	// eventsShown is how many alerts GET /v1/alerts/{id}/events lists by
	// default; maxEventsShown at most.
	eventsShown    = 50
	maxEventsShown = 500
	// pruneEvery is how often old alerts are deleted.
	pruneEvery = time.Hour
)

// ErrInvalid wraps every refusal of a rule for what it says.
var ErrInvalid = errors.New("alert: invalid")

// ErrUnavailable wraps refusals that come from a service the hub depends
// on (its SMTP server).
var ErrUnavailable = errors.New("alert: unavailable")

// ErrNotLeading is returned by calls that need this hub to lead.
var ErrNotLeading = errors.New("alert: this hub does not lead")

// SMTP configures e-mail delivery.
type SMTP struct {
	// Addr is the server's host:port; empty disables e-mail rules.
	Addr string
	// User and Password authenticate (AUTH PLAIN, over STARTTLS only).
	User, Password string
	// From is the sender address.
	From string
	// CAFile is a PEM CA the server's certificate must chain to (default:
	// the system's roots).
	CAFile string
}

// Hub is what the alert service needs of the cluster: the live spawns and
// a crawler's recent comments (read from the store through them).
type Hub interface {
	Nodes() []api.Node
	RecentComments(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error)
}

// Config configures a Service.
type Config struct {
	Store  *sqlstore.Store
	Logger *slog.Logger
	// Allow lists the ranges delivery URLs may be in although they are
	// private or loopback (--allow-targets).
	Allow []netip.Prefix
	SMTP  SMTP
	// RetryMin, RetryMax and RetryFor shape the retries of a delivery.
	RetryMin, RetryMax, RetryFor time.Duration
	// AttemptTimeout bounds one delivery attempt (default
	// DefaultAttemptTimeout).
	AttemptTimeout time.Duration
	// Settle is how long after its end a minute is evaluated.
	Settle time.Duration
	// MatchEvery is how often match rules read new comments.
	MatchEvery time.Duration
	// NodeToken and NodeHTTPClient read comments from spawns.
	NodeToken      string
	NodeHTTPClient *http.Client
	// Resolve looks up a delivery host (default: net.DefaultResolver).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Now is the clock (default: time.Now).
	Now func() time.Time
	// ReadComments reads a page of a crawler's stored comments (default:
	// through a live spawn's node API).
	ReadComments func(ctx context.Context, crawlerID int64, q api.ExportQuery) (api.CommentPage, error)
}

// Service evaluates rules and delivers alerts while its hub leads. It is
// built once per hub process; Run runs it for one term.
type Service struct {
	cfg     Config
	logger  *slog.Logger
	store   *sqlstore.Store
	client  *http.Client // deliveries: netguard, no redirects
	smtpTLS *tls.Config
	from    *mail.Address // --smtp-from: the header as written, MAIL FROM its address
	metrics *metrics

	mu      sync.Mutex
	term    uint64 // the term Run serves (0: not leading)
	hub     Hub
	wake    chan struct{} // the sender: a delivery is due now
	evalMu  sync.Mutex    // one spike evaluation at a time
	matchMu sync.Mutex    // one match pass at a time
	termMu  sync.Mutex    // one term pass at a time
	sentMu  sync.Mutex    // one sentiment evaluation at a time
	pruned  time.Time
}

// New builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("alert: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	cfg.RetryMax = max(cfg.RetryMax, cfg.RetryMin)
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	if cfg.MatchEvery <= 0 {
		cfg.MatchEvery = DefaultMatchEvery
	}
	if cfg.Resolve == nil {
		cfg.Resolve = resolve
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NodeHTTPClient == nil {
		cfg.NodeHTTPClient = &http.Client{}
	}
	s := &Service{cfg: cfg, logger: cfg.Logger.With("component", "alert"), store: cfg.Store,
		client:  netguard.NewClient(netguard.Options{Allow: cfg.Allow, Timeout: cfg.AttemptTimeout, MaxRedirects: -1}),
		metrics: newMetrics(), wake: make(chan struct{}, 1)}
	if cfg.SMTP.Addr != "" {
		tlsCfg, err := smtpTLSConfig(cfg.SMTP)
		if err != nil {
			return nil, err
		}
		s.smtpTLS = tlsCfg
		if cfg.SMTP.From == "" {
			return nil, fmt.Errorf("%w: --smtp-from is needed with --smtp-server", ErrInvalid)
		}
		from, err := mail.ParseAddress(cfg.SMTP.From)
		if err != nil {
			return nil, fmt.Errorf("%w: --smtp-from %q is not an address like \"Alerts <alerts@example.com>\"", ErrInvalid, cfg.SMTP.From)
		}
		s.from = from
	}
	return s, nil
}

func smtpTLSConfig(c SMTP) (*tls.Config, error) {
	host, _, err := splitHostPort(c.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: --smtp-server %q must be host:port", ErrInvalid, c.Addr)
	}
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("alert: unable to read --smtp-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --smtp-ca %s holds no PEM certificate", ErrInvalid, c.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Registry holds the alert metrics.
func (s *Service) Registry() *prometheus.Registry { return s.metrics.registry }

// leading returns the term this hub leads with, or ErrNotLeading.
func (s *Service) leading() (uint64, Hub, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term == 0 {
		return 0, nil, ErrNotLeading
	}
	return s.term, s.hub, nil
}

// Run evaluates the rules and sends the alerts of term until ctx ends.
func (s *Service) Run(ctx context.Context, term uint64, hub Hub) error {
	s.mu.Lock()
	s.term, s.hub = term, hub
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.term == term {
			s.term, s.hub = 0, nil
		}
		s.mu.Unlock()
	}()
	s.logger.Info("alerts running", "term", term)
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context, uint64){s.sendLoop, s.spikeLoop, s.matchLoop, s.termLoop, s.sentimentLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx, term)
		}()
	}
	wg.Wait()
	return nil
}

// notify wakes the sender.
func (s *Service) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sleepUntil waits until t or ctx's end; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time, now time.Time) bool {
	d := t.Sub(now)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
