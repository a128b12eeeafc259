package cluster

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// Connections to spawns. The hub talks to every node once per poll
// interval, so it keeps one or two connections to each open instead of the
// default transport's 100 idle connections in all, which a cluster of
// hundreds of nodes would churn through every round.
const (
	nodeIdlePerHost = 2
	nodeIdleTimeout = 90 * time.Second
	nodeDialTimeout = 5 * time.Second
)

func nodeTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil, // spawns are reached directly, never through HTTP_PROXY
		DialContext:         (&net.Dialer{Timeout: nodeDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no cap across hosts
		MaxIdleConnsPerHost: nodeIdlePerHost,
		IdleConnTimeout:     nodeIdleTimeout,
		ForceAttemptHTTP2:   false,
	}
}

// NodeHTTPClient is the client of hub→spawn calls over TLS: the spawns'
// CA and the certificate the hub presents to spawns that ask for one.
func NodeHTTPClient(tlsCfg *tls.Config) *http.Client {
	t := nodeTransport()
	t.TLSClientConfig = tlsCfg
	return &http.Client{Transport: t}
}
