package cluster

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/google/uuid"
)

// Routing strategies.
const (
	RoutingModulo     = "modulo"
	RoutingRendezvous = "rendezvous"
)

// Router picks the node of a query uuid among the live nodes, sorted by id.
// Equal query uuids always get the same node, so their subscribers share one
// data source.
type Router interface {
	Route(q uuid.UUID, nodes []string) string
}

// NewRouter returns the strategy by name.
func NewRouter(name string) (Router, error) {
	switch name {
	case "", RoutingModulo:
		return moduloRouter{}, nil
	case RoutingRendezvous:
		return rendezvousRouter{}, nil
	}
	return nil, fmt.Errorf("cluster: unknown routing %q (want %s or %s)", name, RoutingModulo, RoutingRendezvous)
}

// moduloRouter is the seed's uuid-hash-modulo: nodes[hash(uuid) mod n]. It is
// even and cheap, but a change in n moves nearly every subscriber.
type moduloRouter struct{}

func (moduloRouter) Route(q uuid.UUID, nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return nodes[queryHash(q)%uint64(len(nodes))]
}

// queryHash folds a query uuid into 64 bits. The uuid is already a SHA-1
// digest, so its first eight bytes are uniform.
func queryHash(q uuid.UUID) uint64 { return binary.BigEndian.Uint64(q[:8]) }

// rendezvousRouter is highest-random-weight hashing: every node scores the
// query and the highest score wins. A node joining or leaving moves only the
// subscribers it wins or held, about 1/n of them.
type rendezvousRouter struct{}

func (rendezvousRouter) Route(q uuid.UUID, nodes []string) string {
	var best string
	var bestScore uint64
	for _, n := range nodes {
		h := fnv.New64a()
		_, _ = h.Write(q[:])
		_, _ = h.Write([]byte(n))
		s := mix64(h.Sum64())
		if best == "" || s > bestScore || (s == bestScore && n < best) {
			best, bestScore = n, s
		}
	}
	return best
}

// mix64 is a finalizer (from SplitMix64) that spreads FNV's output evenly.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
