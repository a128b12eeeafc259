package cluster

import (
	"hash/fnv"
	"slices"
)

// Placement by sharing scope. A source kind's connections reach, as it
// declares (api.SourceInfo.Scope), one query (a feed), one node (one
// connection per spawn carries all its subscribers) or the whole fleet (a
// service that allows one streaming connection per project, as X API v2). The first two are
// placed by query uuid (uuid-hash-modulo, or rendezvous): equal queries
// share a node and its data source. A fleet-scoped kind is placed on one
// spawn, the holder: every crawler of the kind runs there, so the fleet
// opens exactly one connection, and if the holder goes they all move
// together to one survivor.

// fleetHolderLocked returns the node that holds kind's one connection,
// choosing it among offering (sorted ids) when kind is fleet-scoped on any
// of them; false when it is not fleet-scoped. The holder stays while it
// lives and offers the kind, so a node joining moves nothing; a new holder
// is the offering node with the highest rendezvous weight for the kind,
// which every hub computes alike.
func (h *Hub) fleetHolderLocked(kind string, offering []string) (string, bool) {
	var fleet []string
	for _, id := range offering {
		if slices.Contains(h.nodes[id].fleet, kind) {
			fleet = append(fleet, id)
		}
	}
	if len(fleet) == 0 {
		delete(h.fleetHolders, kind)
		return "", false
	}
	if cur, ok := h.fleetHolders[kind]; ok && slices.Contains(fleet, cur) {
		return cur, true
	}
	best, bestW := "", uint64(0)
	for _, id := range fleet {
		f := fnv.New64a()
		f.Write([]byte(kind))
		f.Write([]byte{0})
		f.Write([]byte(id))
		if w := f.Sum64(); best == "" || w > bestW {
			best, bestW = id, w
		}
	}
	if prev := h.fleetHolders[kind]; prev != best {
		h.events.add("fleet_holder", "node "+short(best)+" holds the one "+kind+" connection of the fleet")
		h.logger.Info("fleet connection holder chosen", "source", kind, "node_id", best, "previous", prev)
	}
	h.fleetHolders[kind] = best
	return best, true
}
