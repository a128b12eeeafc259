package node

import (
	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// defaultTombstoneLifetime is how long a deletion of an undeclared kind is
// remembered (a kind built only by a test): as long as the longest history
// a declared kind fills a gap from, X's 7 days of recent search, with a
// margin.
var defaultTombstoneLifetime = source.Days(8)

// declarations returns the registry the node asks about kinds: the
// spawn's own drivers' declarations (as configured here), then the
// builtin ones for kinds it was not given (a test's node).
func declarations(declared []api.SourceInfo) *api.SourceRegistry {
	r := api.NewSourceRegistry(declared...)
	// The builtin declarations are checked when loaded: nothing to skip.
	_, _ = r.Learn(api.BuiltinSources())
	return r
}

// info returns the declaration of a kind; a kind declared nowhere (a
// test's own) reads as a kind in the query language that carries no
// cursor.
func (n *Node) info(kind string) api.SourceInfo {
	if s, ok := n.infos.Lookup(kind); ok {
		return s
	}
	return api.SourceInfo{Name: kind, Query: api.QueryLanguage, Scope: api.ScopeNode, TombstoneLifetime: defaultTombstoneLifetime}
}

// fleetSources lists, sorted, the offered kinds whose declaration is
// ScopeFleet: the hub places all their crawlers on one spawn holding them.
func (n *Node) fleetSources() []string {
	var out []string
	for _, name := range n.cfg.Sources.Offered() {
		if n.info(name).Scope == api.ScopeFleet {
			out = append(out, name)
		}
	}
	return out
}

// declared returns the declarations the spawn sends at registration: its
// own drivers'.
func (n *Node) declared() []api.SourceInfo { return n.cfg.Declared }
