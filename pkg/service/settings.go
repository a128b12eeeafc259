package service

import (
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Common are the settings the hub and the spawn share: where a server
// listens and how it is reached, its TLS and tokens, the liveness timings of
// hub and spawn, the targets it may reach although private, and its logging.
// Each binary's settings struct embeds it, so each of these flags is
// declared once (pkg/config reads embedded structs), and says what it means
// for either side.
type Common struct {
	Listen       string        `flag:"listen" usage:"address to serve the API on (a hub: the admin and node APIs; a spawn: the node API)"`
	Advertise    string        `flag:"advertise" usage:"URL this server is reached at: a hub by spawns and operators (its standbys redirect there), a spawn by the hub (default: derived from the bound address)"`
	AllowedHosts []string      `flag:"allowed-hosts" usage:"other host names or IP addresses spawns, hubs, bwctl and browsers reach this server by (a reverse proxy's public name, a container's service name), besides loopback, the bound address and --advertise; requests naming any other Host, or coming from a page on another origin, are refused"`
	OrphanAfter  time.Duration `flag:"orphan-after" usage:"a spawn stops a subscriber the hub has not polled for this long (a hub sends its own value to its spawns when they register)"`
	DetachAfter  time.Duration `flag:"detach-after" usage:"a spawn the hub has not contacted for this long drops everything and registers again (a hub sends its own value to its spawns when they register)"`
	NodeToken    string        `flag:"node-token" usage:"shared token of hub-spawn calls (prefer BW_NODE_TOKEN)"`
	TLSCert      string        `flag:"tls-cert" usage:"PEM certificate chain: serve HTTPS only, and present it to the hubs or spawns that ask for a client certificate"`
	TLSKey       string        `flag:"tls-key" usage:"PEM private key of --tls-cert"`
	ClientCA     string        `flag:"client-ca" usage:"PEM CA: calls from the other side (spawns registering with a hub, a hub calling a spawn) must carry a client certificate it signed"`
	Insecure     bool          `flag:"insecure" usage:"allow listening beyond loopback without the tokens (BW_NODE_TOKEN, and a hub's BW_ADMIN_TOKEN)"`
	AllowTargets []string      `flag:"allow-targets" usage:"CIDRs outbound targets may be in although private or loopback (a spawn's crawl targets; a hub's alert webhook and Slack URLs)"`
	LogLevel     string        `flag:"log-level" usage:"debug, info, warn or error"`
	LogFormat    string        `flag:"log-format" usage:"text or json"`
}

// DefaultCommon are the shared settings' defaults, listening on listen (the
// binary's own default address).
func DefaultCommon(listen string) Common {
	return Common{
		Listen:      listen,
		OrphanAfter: api.DefaultOrphanAfter,
		DetachAfter: api.DefaultDetachAfter,
		LogLevel:    "info",
		LogFormat:   "text",
	}
}

// Logging names the log settings, for Main.
func (c *Common) Logging() (level, format string) { return c.LogLevel, c.LogFormat }
