package cluster

import (
	"sync"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Source kinds. The hub names none: what it must know of a kind — how a
// crawler's query reads, what it carries across moves, whether one
// connection serves the fleet, whether its stored items are checked with
// its service — it asks the kind's declaration (api.SourceInfo). It starts
// from the builtin declarations and learns from every spawn that
// registers what the spawn declares: a kind a newer spawn brings, or how
// a spawn configures a kind (X over v1.1 is not fleet-wide).

// Sources returns the declarations the hub knows (the builtin ones for a
// Hub a test built by hand).
func (h *Hub) Sources() *api.SourceRegistry {
	if h.sources == nil {
		return builtinRegistry()
	}
	return h.sources
}

var builtinRegistry = sync.OnceValue(func() *api.SourceRegistry { return api.NewSourceRegistry(api.BuiltinSources()...) })

// learnSources records what a registering spawn declares.
func (h *Hub) learnSources(nodeID string, declared []api.SourceInfo) {
	changed, err := h.Sources().Learn(declared)
	if err != nil {
		h.logger.Warn("spawn declared sources the hub cannot take", "node_id", short(nodeID), "err", err)
	}
	if changed {
		h.logger.Info("source declarations learned from a spawn", "node_id", short(nodeID), "sources", len(declared))
	}
}

// sourceInfo returns the declaration of a kind; a kind declared nowhere
// reads as one in the query language that carries no cursor.
func (h *Hub) sourceInfo(kind string) api.SourceInfo {
	if s, ok := h.Sources().Lookup(kind); ok {
		return s
	}
	return api.SourceInfo{Name: kind, Query: api.QueryLanguage, Scope: api.ScopeNode}
}

// knownKind says whether a kind is declared.
func (h *Hub) knownKind(kind string) bool {
	_, ok := h.Sources().Lookup(kind)
	return ok
}
