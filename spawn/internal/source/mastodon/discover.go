package mastodon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Instance documents that may advertise the streaming API's base URL:
// v2 (Mastodon 4.0 and later) first, then v1.
const (
	instanceV2Path = "/api/v2/instance"
	instanceV1Path = "/api/v1/instance"
)

// discover asks the instance where its streaming API lives and returns
// the WebSocket URL to dial: the advertised base when streamingBase accepts
// it, else the instance's own host. It also learns the domain of the
// instance's accounts, which may differ from its web host (Mastodon's
// LOCAL_DOMAIN and WEB_DOMAIN), and whether its feeds are closed to the
// token (configuration.timelines_access, Mastodon 4.5 and later).
func (i *instance) discover(ctx context.Context) string {
	var adv, domain string
	var v2 struct {
		Domain        string `json:"domain"`
		Configuration struct {
			URLs struct {
				Streaming string `json:"streaming"`
			} `json:"urls"`
			TimelinesAccess *timelinesAccess `json:"timelines_access"`
		} `json:"configuration"`
	}
	if err := i.getJSON(ctx, instanceV2Path, &v2); err == nil {
		adv, domain = v2.Configuration.URLs.Streaming, v2.Domain
		i.setConfigAccess(i.accessOf(ctx, v2.Configuration.TimelinesAccess))
	} else {
		i.logger.Debug("mastodon instance v2 document unavailable", "err", err)
	}
	if adv == "" {
		var v1 struct {
			URI  string `json:"uri"`
			URLs struct {
				StreamingAPI string `json:"streaming_api"`
			} `json:"urls"`
		}
		if err := i.getJSON(ctx, instanceV1Path, &v1); err == nil {
			adv = v1.URLs.StreamingAPI
			if domain == "" {
				domain = v1.URI
			}
		} else {
			i.logger.Debug("mastodon instance v1 document unavailable", "err", err)
		}
	}
	if d := strings.ToLower(strings.TrimSpace(domain)); validDomain(d) {
		i.domain = d
	}
	u, ok := streamingBase(adv, i.base)
	if !ok && adv != "" {
		i.logger.Warn("mastodon advertised streaming URL ignored: not on the instance's host", "advertised", clip(adv))
	}
	return strings.TrimSuffix(u.String(), "/") + streamingPath
}

// getJSON reads one instance document.
func (i *instance) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, i.base.String()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := i.rest.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s answered %s", ErrStatus, path, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxInstanceDocBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxInstanceDocBytes {
		return fmt.Errorf("%w: %s is larger than %d bytes", ErrMalformed, path, maxInstanceDocBytes)
	}
	return json.Unmarshal(body, v)
}

// streamingBase returns the base URL (ws or wss) of the streaming API:
// advertised when it is a ws(s) or http(s) URL on the instance's host or a
// subdomain of it (streaming.mastodon.social for mastodon.social) that does
// not drop TLS, else the instance's own base URL; ok is false when an
// advertised URL was refused. Only such a host gets the access token.
func streamingBase(advertised string, base *url.URL) (u *url.URL, ok bool) {
	own := *base
	own.Scheme = map[string]string{"http": "ws", "https": "wss"}[base.Scheme]
	advertised = strings.TrimSpace(advertised)
	if advertised == "" {
		return &own, true
	}
	a, err := url.Parse(advertised)
	if err != nil || a.User != nil || a.Host == "" {
		return &own, false
	}
	scheme := map[string]string{"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}[strings.ToLower(a.Scheme)]
	if scheme == "" || (own.Scheme == "wss" && scheme != "wss") {
		return &own, false
	}
	host, bh := strings.ToLower(a.Hostname()), strings.ToLower(base.Hostname())
	if host != bh && !strings.HasSuffix(host, "."+bh) {
		return &own, false
	}
	return &url.URL{Scheme: scheme, Host: strings.ToLower(a.Host), Path: strings.TrimSuffix(a.Path, "/")}, true
}

// validDomain reports whether d can be a host name: at most 253 bytes of
// letters, digits, '-' and '.', with an optional port.
func validDomain(d string) bool {
	if d == "" || len(d) > 253+6 {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
