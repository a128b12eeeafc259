package query

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Namespace is the UUIDv5 namespace of query uuids. Changing it re-routes
// every crawler, so it is fixed for good.
var Namespace = uuid.MustParse("6f0c5d1e-8a3b-5b7e-9d2a-4c1f0e7b3a90")

// Limits on a query, so one crawler cannot make a data source unbounded.
const (
	MaxTerms      = 100  // terms or feed URLs in one query
	MaxTermLength = 2048 // bytes of one term or URL
)

// ErrInvalid is wrapped by every validation error of this package.
var ErrInvalid = errors.New("invalid query")

// URLs validates and normalises a query that is a list of URLs (the feeds
// a feed crawler reads): a lower-case scheme and host without default port
// or fragment, sorted and free of duplicates, so equal lists compare equal.
func URLs(list []string) ([]string, error) {
	out := make([]string, 0, len(list))
	for _, t := range list {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if len(t) > MaxTermLength {
			return nil, fmt.Errorf("%w: URL longer than %d bytes", ErrInvalid, MaxTermLength)
		}
		u, err := canonicalURL(t)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: query is empty", ErrInvalid)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxTerms {
		return nil, fmt.Errorf("%w: %d URLs, at most %d allowed", ErrInvalid, len(out), MaxTerms)
	}
	return out, nil
}

func canonicalURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: feed URL %q does not parse: %w", ErrInvalid, raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%w: feed URL %q must be http or https", ErrInvalid, raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%w: feed URL %q has no host", ErrInvalid, raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: feed URL %q must not carry credentials", ErrInvalid, raw)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	u.Fragment = ""
	u.RawFragment = ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

// UUID is the query uuid of a canonical query.
func UUID(source string, canonical []string) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte(source+"\n"+strings.Join(canonical, "\n")))
}
