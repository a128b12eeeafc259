package alert

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// NewRule checks a rule as POST /v1/alerts gives it and returns the row to
// store: the kind, the sensitivity, the query, exactly one channel, and the
// channel's target — a delivery URL must resolve to addresses the hub may
// send to (netguard's rule, with --allow-targets), an e-mail rule needs the
// hub's SMTP server to answer. Whether the crawler or user exists is the
// store's to say. Nothing is sent.
func (s *Service) NewRule(ctx context.Context, in api.AlertRuleCreate) (sqlstore.AlertRule, error) {
	var r sqlstore.AlertRule
	switch {
	case in.CrawlerID > 0 && in.UserID > 0:
		return r, fmt.Errorf("%w: a rule is on a crawler or on a user, not both", ErrInvalid)
	case in.CrawlerID > 0:
		r.CrawlerID = &in.CrawlerID
	case in.UserID > 0:
		r.UserID = &in.UserID
	case in.CrawlerID < 0 || in.UserID < 0:
		return r, fmt.Errorf("%w: crawler_id and user_id must be positive", ErrInvalid)
	default:
		return r, fmt.Errorf("%w: a rule needs a crawler (crawler_id) or a user (user_id)", ErrInvalid)
	}
	if !slices.Contains(api.AlertKinds, in.Kind) {
		return r, fmt.Errorf("%w: kind must be spike, term, match or sentiment, got %q", ErrInvalid, in.Kind)
	}
	r.Kind = in.Kind
	sens := in.Sensitivity
	if sens == "" {
		sens = spike.DefaultSensitivity
	}
	if _, err := spike.ThresholdsOf(sens); err != nil {
		return r, fmt.Errorf("%w: sensitivity must be low, medium or high, got %q", ErrInvalid, in.Sensitivity)
	}
	r.Sensitivity = sens
	switch {
	case in.Kind == api.AlertMatch && strings.TrimSpace(in.Query) == "":
		return r, fmt.Errorf("%w: a match rule needs a query", ErrInvalid)
	case in.Kind != api.AlertMatch && strings.TrimSpace(in.Query) != "":
		return r, fmt.Errorf("%w: only a match rule takes a query", ErrInvalid)
	case in.Kind == api.AlertMatch:
		if err := httpx.CheckText("query", in.Query); err != nil {
			return r, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		q, err := query.Parse(in.Query)
		if err != nil {
			// The query package's message names the query already:
			// "query: unclosed "(" at column 1".
			return r, fmt.Errorf("%w: %v", ErrInvalid, unprefixed(err))
		}
		r.Query = q.String()
	}
	channels := 0
	for _, v := range []string{in.Webhook, in.Slack, in.Email} {
		if strings.TrimSpace(v) != "" {
			channels++
		}
	}
	if channels != 1 {
		return r, fmt.Errorf("%w: give exactly one of webhook, slack and email", ErrInvalid)
	}
	if in.Secret != "" && in.Webhook == "" {
		return r, fmt.Errorf("%w: a secret signs webhook deliveries only", ErrInvalid)
	}
	if len(in.Secret) > maxSecret {
		return r, fmt.Errorf("%w: secret longer than %d bytes", ErrInvalid, maxSecret)
	}
	switch {
	case in.Webhook != "":
		r.Channel, r.Target, r.Secret = api.ChannelWebhook, strings.TrimSpace(in.Webhook), in.Secret
		if err := s.checkURL(ctx, "webhook", r.Target); err != nil {
			return r, err
		}
	case in.Slack != "":
		r.Channel, r.Target = api.ChannelSlack, strings.TrimSpace(in.Slack)
		if err := s.checkURL(ctx, "slack", r.Target); err != nil {
			return r, err
		}
	default:
		r.Channel = api.ChannelEmail
		addr, err := mail.ParseAddress(strings.TrimSpace(in.Email))
		if err != nil || len(addr.Address) > maxTarget || strings.ContainsAny(addr.Address, "\r\n") {
			return r, fmt.Errorf("%w: email %q is not an address like ops@example.com", ErrInvalid, in.Email)
		}
		r.Target = addr.Address
		if err := s.checkSMTP(ctx); err != nil {
			return r, err
		}
	}
	return r, nil
}

// unprefixed drops the query package's "invalid query: " prefix.
func unprefixed(err error) string {
	return strings.TrimPrefix(err.Error(), query.ErrInvalid.Error()+": ")
}

// checkURL refuses a delivery URL that is not http(s), carries
// credentials, or whose host resolves to an address the hub may not send
// to. The sender checks the address again when it connects (netguard), so
// a name that changes its answer later is refused then.
func (s *Service) checkURL(ctx context.Context, what, raw string) error {
	if len(raw) > maxTarget {
		return fmt.Errorf("%w: %s URL longer than %d bytes", ErrInvalid, what, maxTarget)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%w: %s URL must look like https://host/path", ErrInvalid, what)
	}
	if u.User != nil {
		return fmt.Errorf("%w: %s URL must not carry credentials (a webhook takes --secret)", ErrInvalid, what)
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		addrs, err = s.cfg.Resolve(rctx, host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return fmt.Errorf("%w: %s host %s does not resolve: %v", ErrInvalid, what, host, err)
		}
	}
	for _, a := range addrs {
		if err := netguard.Check(a, s.cfg.Allow); err != nil {
			reason := strings.TrimPrefix(err.Error(), netguard.ErrForbiddenTarget.Error()+": ")
			return fmt.Errorf("%w: %s host %s: %s, where the hub does not send (the hub's --allow-targets can permit a range)", ErrInvalid, what, host, reason)
		}
	}
	return nil
}

func resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, errors.New("no such host")
		}
		return nil, err
	}
	return ips, nil
}

func splitHostPort(addr string) (string, string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return "", "", fmt.Errorf("want host:port, got %q", addr)
	}
	return host, port, nil
}

// RuleView is a rule as the API shows it: without its secret, and with
// the secret parts of its target cut (a Slack URL's token path, a URL's
// query).
func RuleView(r sqlstore.AlertRule) api.AlertRule {
	return api.AlertRule{ID: r.ID, CrawlerID: r.CrawlerID, UserID: r.UserID, Kind: r.Kind, Query: r.Query,
		Sensitivity: r.Sensitivity, Channel: r.Channel, Target: displayTarget(r.Channel, r.Target), Signed: r.Secret != "",
		CreatedAt: r.CreatedAt.UTC()}
}

// displayTarget hides what in a target is a credential: a Slack incoming
// webhook's path is its token; any URL's query and userinfo may be one.
func displayTarget(channel, target string) string {
	if channel == api.ChannelEmail {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "(unreadable URL)"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	out := u.String()
	if channel == api.ChannelSlack && u.Path != "" && u.Path != "/" {
		out = u.Scheme + "://" + u.Host + "/…"
	}
	if strings.ContainsAny(target, "?#") {
		out += "?…"
	}
	return out
}
