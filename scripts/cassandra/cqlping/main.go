// Command cqlping checks that a Cassandra node answers CQL: it connects to
// the address given as its argument (host:port), reads the node's release
// version from system.local and prints it. It exits non-zero when the node
// does not answer within -timeout. scripts/cassandra.sh uses it to wait for
// the test node to be ready.
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
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: cqlping [-timeout D] HOST:PORT")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	version, err := ping(flag.Arg(0), *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cqlping: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	fmt.Println(version)
}

func ping(addr string, timeout time.Duration) (string, error) {
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
	return version, nil
}
