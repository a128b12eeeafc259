package cassandra

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gocql/gocql"
)

// DefaultPort is the CQL port used when a host in the URI has none.
const DefaultPort = 9042

// Config is what a cassandra:// URI says.
type Config struct {
	// Hosts are the contact points, each host:port.
	Hosts []string
	// Keyspace holds the store's tables; it is created when missing.
	Keyspace string
	// Replication is the keyspace's replication when Open creates it:
	// SimpleStrategy with this factor unless DataCenters is set.
	Replication int
	// DataCenters, when set, makes the keyspace NetworkTopologyStrategy
	// with these factors per data center.
	DataCenters map[string]int
	// Consistency of every read and write.
	Consistency gocql.Consistency
	// Username and Password, when set, authenticate with Cassandra's
	// PasswordAuthenticator.
	Username, Password string
}

var (
	keyspaceRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	dcRE       = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// ParseURI parses
//
//	cassandra://[user:password@]host[:port][,host[:port]...]/keyspace[?replication=N&consistency=C]
//
// The port defaults to 9042. The keyspace must match [a-z_][a-z0-9_]* (at
// most 48 characters, Cassandra's limit). replication is a number (the
// SimpleStrategy factor, default 1) or dc:N[,dc:N...] for
// NetworkTopologyStrategy; it only applies when the keyspace is created.
// consistency is a Cassandra consistency level such as one, local_one,
// quorum or local_quorum (default local_one). When both are given, a
// consistency the replication can never meet (three with replication=2,
// each_quorum without data centers) is refused here rather than on every
// write.
//
// The defaults suit one node. A cluster that must survive losing a node
// says so: cassandra://a,b,c/ks?replication=3&consistency=quorum keeps three
// copies of every row and reads and writes two of them, so any one node may
// be down and a read still sees every write that succeeded. The host list
// is only where the driver starts: it learns the other nodes from the
// cluster and sends each statement to a replica of its partition.
func ParseURI(uri string) (Config, error) {
	cfg := Config{Replication: 1, Consistency: gocql.LocalOne}
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("cassandra: bad store URI %q: "+format, append([]any{redact(uri)}, args...)...)
	}
	const scheme = "cassandra://"
	if len(uri) < len(scheme) || !strings.EqualFold(uri[:len(scheme)], scheme) {
		return fail("want cassandra://host[:port][,host[:port]]/keyspace")
	}
	rest := uri[len(scheme):]
	var rawQuery string
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, rawQuery = rest[:i], rest[i+1:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		return fail("fragments (#) are not allowed")
	}
	authority, path, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo := authority[:at]
		authority = authority[at+1:]
		user, pass, _ := strings.Cut(userinfo, ":")
		var err error
		if cfg.Username, err = url.PathUnescape(user); err != nil || cfg.Username == "" {
			return fail("bad user name")
		}
		if cfg.Password, err = url.PathUnescape(pass); err != nil {
			return fail("bad password")
		}
	}
	if authority == "" {
		return fail("no host")
	}
	for _, h := range strings.Split(authority, ",") {
		hp, err := parseHost(h)
		if err != nil {
			return fail("%v", err)
		}
		cfg.Hosts = append(cfg.Hosts, hp)
	}
	ks := strings.TrimSuffix(path, "/")
	switch {
	case ks == "":
		return fail("no keyspace (want cassandra://host/keyspace)")
	case !keyspaceRE.MatchString(ks):
		return fail("keyspace %q: want lower-case letters, digits and _, not starting with a digit", ks)
	case len(ks) > 48:
		return fail("keyspace %q is longer than 48 characters", ks)
	}
	cfg.Keyspace = ks

	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fail("query: %v", err)
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var replicationGiven, consistencyGiven bool
	for _, k := range keys {
		vs := q[k]
		if len(vs) != 1 {
			return fail("parameter %s given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "replication":
			if err := parseReplication(v, &cfg); err != nil {
				return fail("replication=%s: %v", v, err)
			}
			replicationGiven = true
		case "consistency":
			c, err := gocql.ParseConsistencyWrapper(v)
			if err != nil || c == gocql.Any {
				return fail("consistency=%s: want one, local_one, two, three, quorum, local_quorum, each_quorum or all", v)
			}
			cfg.Consistency = c
			consistencyGiven = true
		default:
			return fail("unknown parameter %q (known: replication, consistency)", k)
		}
	}
	if replicationGiven && consistencyGiven {
		if err := cfg.reachable(); err != nil {
			return fail("%v", err)
		}
	}
	return cfg, nil
}

// reachable says why the consistency can never be met with the replication,
// or nil.
func (c Config) reachable() error {
	copies := c.Replication
	if len(c.DataCenters) > 0 {
		copies = 0
		for _, n := range c.DataCenters {
			copies += n
		}
	}
	need := map[gocql.Consistency]int{gocql.Two: 2, gocql.Three: 3}[c.Consistency]
	switch {
	case need > copies:
		return fmt.Errorf("consistency=%s needs %d copies of each row, replication keeps %d", strings.ToLower(c.Consistency.String()), need, copies)
	case c.Consistency == gocql.EachQuorum && len(c.DataCenters) == 0:
		return fmt.Errorf("consistency=each_quorum needs replication per data center (replication=dc:N[,dc:N])")
	}
	return nil
}

func parseHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty host in host list")
	}
	host, port := h, strconv.Itoa(DefaultPort)
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		var err error
		if host, port, err = net.SplitHostPort(h); err != nil {
			if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
				host, port = h[1:len(h)-1], strconv.Itoa(DefaultPort)
			} else {
				return "", fmt.Errorf("host %q: %v", h, err)
			}
		}
	}
	if host == "" {
		return "", fmt.Errorf("host %q: empty host name", h)
	}
	if strings.ContainsAny(host, " /\\") {
		return "", fmt.Errorf("host %q: bad host name", h)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("host %q: port must be a number from 1 to 65535", h)
	}
	return net.JoinHostPort(host, port), nil
}

func parseReplication(v string, cfg *Config) error {
	if !strings.Contains(v, ":") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return fmt.Errorf("want a factor from 1 to 100, or dc:N[,dc:N]")
		}
		cfg.Replication = n
		return nil
	}
	cfg.DataCenters = map[string]int{}
	for _, part := range strings.Split(v, ",") {
		dc, ns, ok := strings.Cut(part, ":")
		n, err := strconv.Atoi(ns)
		if !ok || !dcRE.MatchString(dc) || err != nil || n < 0 || n > 100 {
			return fmt.Errorf("want dc:N[,dc:N] with N from 0 to 100")
		}
		if _, dup := cfg.DataCenters[dc]; dup {
			return fmt.Errorf("data center %s given twice", dc)
		}
		cfg.DataCenters[dc] = n
	}
	return nil
}

// replicationCQL is the keyspace's replication map in CQL.
func (c Config) replicationCQL() string {
	if len(c.DataCenters) == 0 {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", c.Replication)
	}
	dcs := make([]string, 0, len(c.DataCenters))
	for dc := range c.DataCenters {
		dcs = append(dcs, dc)
	}
	sort.Strings(dcs)
	var b strings.Builder
	b.WriteString("{'class': 'NetworkTopologyStrategy'")
	for _, dc := range dcs {
		fmt.Fprintf(&b, ", '%s': %d", dc, c.DataCenters[dc])
	}
	b.WriteString("}")
	return b.String()
}

// redact hides a password in a URI for error messages.
func redact(uri string) string {
	const scheme = "cassandra://"
	if len(uri) < len(scheme) {
		return uri
	}
	rest := uri[len(scheme):]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return uri
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return uri
	}
	return uri[:len(scheme)] + user + ":xxxxx" + rest[at:]
}
