package twitterv1

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/dghubble/oauth1"
)

// goTwitterAPIHost is the host go-twitter sends every REST call to; it has
// no base-URL option, so calls are rewritten to Options.APIURL on their way
// out.
const goTwitterAPIHost = "api.twitter.com"

// signer returns a round tripper that signs each request with OAuth 1.0a
// user credentials (HMAC-SHA1) and sends it through base.
func signer(c Credentials, base http.RoundTripper) http.RoundTripper {
	ctx := context.WithValue(context.Background(), oauth1.HTTPClient, &http.Client{Transport: base})
	return oauth1.NewConfig(c.ConsumerKey, c.ConsumerSecret).
		Client(ctx, oauth1.NewToken(c.AccessToken, c.AccessSecret)).Transport
}

// rewriteTransport sends requests for go-twitter's fixed API host to
// another base URL (scheme, host and an optional path prefix). Rewriting
// happens before signing, so the signature covers the URL actually
// requested.
type rewriteTransport struct {
	to   *url.URL
	base http.RoundTripper
}

func (t rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != goTwitterAPIHost || t.to == nil {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.URL.Scheme = t.to.Scheme
	r.URL.Host = t.to.Host
	r.URL.Path = strings.TrimSuffix(t.to.Path, "/") + req.URL.Path
	r.URL.RawPath = ""
	r.Host = ""
	return t.base.RoundTrip(r)
}

// contextTransport binds requests to a context: go-twitter builds its
// requests without one, and a stopping source must not wait for a search to
// time out.
type contextTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t contextTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(req.WithContext(t.ctx))
}

// limitTransport caps response bodies: reading past max bytes fails with
// ErrResponseTooLarge instead of filling memory.
type limitTransport struct {
	max  int64
	base http.RoundTripper
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d allowed", ErrResponseTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Find out whether the body really goes on, without keeping it.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrResponseTooLarge
		}
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
