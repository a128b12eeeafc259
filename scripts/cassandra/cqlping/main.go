// Command cqlping checks that a Cassandra node answers CQL: it connects to
// the address given as its argument (host:port), reads the node's release
// version from system.local and prints it. It exits non-zero when the node
// does not answer within -timeout, or, with -peers N, while the node's
// system.peers lists fewer than N other nodes with tokens. scripts/cassandra.sh
// uses it to wait for the test node to be ready, scripts/cassandra-cluster.sh
// for each node of the test cluster to have joined the ring.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/gocql/gocql"
)

func main() {
	timeout := flag.Duration("timeout", 5*time.Second, "give up after this long")
	peers := flag.Int("peers", 0, "also require this many peers with tokens in system.peers")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: cqlping [-timeout D] [-peers N] HOST:PORT")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	version, err := ping(flag.Arg(0), *timeout, *peers)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cqlping: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	fmt.Println(version)
}

func ping(addr string, timeout time.Duration, peers int) (string, error) {
	gocql.Logger = log.New(io.Discard, "", 0) // the error returned says enough
	cluster := gocql.NewCluster(addr)
	cluster.ProtoVersion = 4
	cluster.Timeout = timeout
	cluster.ConnectTimeout = timeout
	cluster.NumConns = 1
	cluster.DisableInitialHostLookup = true
	cluster.Consistency = gocql.One
	cluster.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1} // 0 makes gocql v1.7 pool a nil conn
	session, err := cluster.CreateSession()
	if err != nil {
		return "", err
	}
	defer session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var version string
	if err := session.Query(`SELECT release_version FROM system.local`).WithContext(ctx).Scan(&version); err != nil {
		return "", err
	}
	if peers > 0 {
		iter := session.Query(`SELECT peer, tokens FROM system.peers`).WithContext(ctx).Iter()
		var peer string
		var tokens []string
		n := 0
		for iter.Scan(&peer, &tokens) {
			if len(tokens) > 0 {
				n++
			}
		}
		if err := iter.Close(); err != nil {
			return "", err
		}
		if n < peers {
			return "", fmt.Errorf("%d of %d peers with tokens", n, peers)
		}
	}
	return version, nil
}
