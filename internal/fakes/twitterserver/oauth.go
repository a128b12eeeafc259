package twitterserver

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Errors of the OAuth check.
var (
	errNoOAuth      = errors.New("twitterserver: no OAuth Authorization header")
	errBadOAuth     = errors.New("twitterserver: malformed OAuth Authorization header")
	errWrongKey     = errors.New("twitterserver: unknown consumer key or access token")
	errBadSignature = errors.New("twitterserver: OAuth signature does not match")
)

// checkAuth parses the request's form (query and form body) and checks its
// OAuth 1.0a Authorization header (RFC 5849): present and well formed
// always; with Options.Credentials set, also the keys and the HMAC-SHA1
// signature over method, URL and parameters.
func (s *Server) checkAuth(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("twitterserver: unable to parse parameters: %w", err)
	}
	h := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(h, "OAuth ")
	if !ok {
		return errNoOAuth
	}
	params, err := parseAuthHeader(rest)
	if err != nil {
		return err
	}
	if params["oauth_consumer_key"] == "" || params["oauth_signature"] == "" {
		return fmt.Errorf("%w: oauth_consumer_key and oauth_signature are required", errBadOAuth)
	}
	creds := s.opts.Credentials
	if creds == (Credentials{}) {
		return nil
	}
	if params["oauth_signature_method"] != "HMAC-SHA1" {
		return fmt.Errorf("%w: signature method %q, want HMAC-SHA1", errBadOAuth, params["oauth_signature_method"])
	}
	if params["oauth_consumer_key"] != creds.ConsumerKey || params["oauth_token"] != creds.AccessToken {
		return errWrongKey
	}
	want := signature(r, params, creds.ConsumerSecret, creds.AccessSecret)
	if !hmac.Equal([]byte(want), []byte(params["oauth_signature"])) {
		return errBadSignature
	}
	return nil
}

// parseAuthHeader reads `k1="v1", k2="v2"` with percent-encoded values.
func parseAuthHeader(h string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return nil, fmt.Errorf("%w: %q is not key=\"value\"", errBadOAuth, part)
		}
		dv, err := url.PathUnescape(v[1 : len(v)-1])
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", errBadOAuth, part, err)
		}
		out[k] = dv
	}
	return out, nil
}

// signature computes the HMAC-SHA1 signature RFC 5849 section 3.4 defines.
// Duplicate parameter names count once, with their first value, as the
// client library signs them.
func signature(r *http.Request, oauth map[string]string, consumerSecret, tokenSecret string) string {
	params := map[string]string{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	for k, v := range r.PostForm {
		if _, dup := params[k]; !dup {
			params[k] = v[0]
		}
	}
	for k, v := range oauth {
		if k != "oauth_signature" && k != "realm" {
			params[k] = v
		}
	}
	keys := make([]string, 0, len(params))
	encoded := make(map[string]string, len(params))
	for k, v := range params {
		ek := percentEncode(k)
		keys = append(keys, ek)
		encoded[ek] = percentEncode(v)
	}
	slices.Sort(keys) // by encoded name, as RFC 5849 3.4.1.3.2 asks
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + encoded[k]
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := strings.ToLower(r.Host)
	if h, port, ok := strings.Cut(host, ":"); ok && (port == "80" || port == "443") {
		host = h
	}
	path, _, _ := strings.Cut(r.RequestURI, "?")
	base := strings.ToUpper(r.Method) + "&" + percentEncode(scheme+"://"+host+path) + "&" + percentEncode(strings.Join(pairs, "&"))
	mac := hmac.New(sha1.New, []byte(percentEncode(consumerSecret)+"&"+percentEncode(tokenSecret)))
	mac.Write([]byte(base))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// percentEncode encodes every byte but RFC 3986's unreserved characters.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
