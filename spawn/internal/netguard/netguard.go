// Package netguard is the spawn's name for pkg/netguard, which the hub's
// alert delivery shares: one implementation refuses private, loopback,
// link-local and metadata targets for both.
package netguard

import (
	"net/http"
	"net/netip"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
)

// Options configure NewClient (pkg/netguard.Options).
type Options = netguard.Options

// Errors of pkg/netguard.
var (
	ErrForbiddenTarget  = netguard.ErrForbiddenTarget
	ErrTooManyRedirects = netguard.ErrTooManyRedirects
)

// Defaults of pkg/netguard.
const (
	DefaultTimeout               = netguard.DefaultTimeout
	DefaultDialTimeout           = netguard.DefaultDialTimeout
	DefaultTLSHandshakeTimeout   = netguard.DefaultTLSHandshakeTimeout
	DefaultResponseHeaderTimeout = netguard.DefaultResponseHeaderTimeout
	DefaultMaxRedirects          = netguard.DefaultMaxRedirects
)

// NewClient is pkg/netguard.NewClient.
func NewClient(opts Options) *http.Client { return netguard.NewClient(opts) }

// Check is pkg/netguard.Check.
func Check(addr netip.Addr, allow []netip.Prefix) error { return netguard.Check(addr, allow) }

// ParseAllow is pkg/netguard.ParseAllow.
func ParseAllow(list []string) ([]netip.Prefix, error) { return netguard.ParseAllow(list) }
