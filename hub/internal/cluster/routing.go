package cluster

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

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
	// Table prepares routing over nodes; a reload builds one table and
	// routes every subscriber with it.
	Table(nodes []string) RouteTable
}

// RouteTable routes a query uuid to one of the nodes it was built for, or
// to "" when there are none.
type RouteTable func(q uuid.UUID) string

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

// moduloRouter is uuid-hash-modulo, nodes[hash(uuid) mod n], the default. It is
// even and cheap, but a change in n moves nearly every subscriber.
type moduloRouter struct{}

func (moduloRouter) Table(nodes []string) RouteTable {
	nodes = slices.Clone(nodes)
	return func(q uuid.UUID) string {
		if len(nodes) == 0 {
			return ""
		}
		return nodes[queryHash(q)%uint64(len(nodes))]
	}
}

// queryHash folds a query uuid into 64 bits. The uuid is already a SHA-1
// digest, so its first eight bytes are uniform.
func queryHash(q uuid.UUID) uint64 { return binary.BigEndian.Uint64(q[:8]) }

// rendezvousRouter is highest-random-weight hashing: every node scores the
// query and the highest score wins. A node joining or leaving moves only the
// subscribers it wins or held, about 1/n of them.
//
// A node's score for a query is mix64(query hash XOR node hash): the node
// hashes are computed once per table, so scoring a node costs a few
// multiplications rather than a hash of the node's id.
type rendezvousRouter struct{}

func (rendezvousRouter) Table(nodes []string) RouteTable {
	ids := slices.Clone(nodes)
	keys := make([]uint64, len(ids))
	for i, n := range ids {
		h := fnv.New64a()
		_, _ = h.Write([]byte(n))
		keys[i] = mix64(h.Sum64())
	}
	return func(q uuid.UUID) string {
		qh := queryHash(q)
		best := -1
		var bestScore uint64
		for i, k := range keys {
			s := mix64(qh ^ k)
			if best < 0 || s > bestScore || (s == bestScore && ids[i] < ids[best]) {
				best, bestScore = i, s
			}
		}
		if best < 0 {
			return ""
		}
		return ids[best]
	}
}

// mix64 is SplitMix64's finalizer: every input bit affects every output bit,
// so nearby inputs score independently.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
