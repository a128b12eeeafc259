package query

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Namespace is the UUIDv5 namespace of query uuids. Changing it re-routes
// every crawler, so it is fixed for good.
var Namespace = uuid.MustParse("6f0c5d1e-8a3b-5b7e-9d2a-4c1f0e7b3a90")

// Limits on a query, so one crawler cannot make a data source unbounded.
const (
	MaxTerms      = 100  // terms or feed URLs in one query
	MaxTermLength = 2048 // bytes of one term or URL
	MaxKeywords   = 100  // keywords in one crawler's filter
)

// ErrInvalid is wrapped by every validation error of this package.
var ErrInvalid = errors.New("invalid query")

// Canonical validates and normalises a query given as a list of terms, the
// form before the query language, still that of rss feed URLs: feed URLs get a lower-case
// scheme and host without default port or fragment; search terms are trimmed,
// lower-cased and have their inner spaces folded. The result is sorted and
// free of duplicates, so equal queries compare equal.
func Canonical(source string, terms []string) ([]string, error) {
	if !slices.Contains(api.Sources, source) {
		return nil, fmt.Errorf("%w: unknown source %q (want one of %s)", ErrInvalid, source, strings.Join(api.Sources, ", "))
	}
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if len(t) > MaxTermLength {
			return nil, fmt.Errorf("%w: term longer than %d bytes", ErrInvalid, MaxTermLength)
		}
		var err error
		if source == api.SourceRSS {
			t, err = canonicalURL(t)
		} else {
			t = strings.ToLower(strings.Join(strings.Fields(t), " "))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: query is empty", ErrInvalid)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxTerms {
		return nil, fmt.Errorf("%w: %d terms, at most %d allowed", ErrInvalid, len(out), MaxTerms)
	}
	return out, nil
}

// Keywords normalises a keyword filter the way search terms are normalised.
func Keywords(keywords []string) ([]string, error) {
	out := make([]string, 0, len(keywords))
	for _, k := range keywords {
		k = strings.ToLower(strings.Join(strings.Fields(k), " "))
		if k == "" {
			continue
		}
		if len(k) > MaxTermLength {
			return nil, fmt.Errorf("%w: keyword longer than %d bytes", ErrInvalid, MaxTermLength)
		}
		out = append(out, k)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxKeywords {
		return nil, fmt.Errorf("%w: %d keywords, at most %d allowed", ErrInvalid, len(out), MaxKeywords)
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
