// Package cassandra is the comment store on Apache Cassandra
// (--store cassandra://host[:port][,host[:port]]/keyspace).
//
// Schema (created by Open, idempotently):
//
//	comments: PRIMARY KEY ((crawler_id, day), published_at, comment_id)
//	          WITH CLUSTERING ORDER BY (published_at DESC, comment_id ASC)
//
// day is the UTC date of the comment's published time, so a crawler's
// comments of one day form one partition, newest first. A comment's key is
// (crawler id, day, published time to the millisecond, comment id): a
// re-delivered comment overwrites itself, and retrying a whole batch after
// an error never makes a second copy.
//
//	crawler_days: PRIMARY KEY (crawler_id, day) WITH CLUSTERING ORDER BY (day DESC)
//
// crawler_days lists the days on which a crawler has comments. Recent reads
// it newest day first and then only those days' partitions, instead of
// probing day after day backwards from today: that probe costs one query per
// empty day (a crawler quiet for a year costs 365 round trips to say
// "nothing"), cannot see comments dated in the future (feeds do that), and
// needs an arbitrary horizon. The index costs one tiny write per new
// (crawler, day), written before the comments so a comment is never stored
// without its day being listed; a Store remembers the days it has already
// listed, so in steady state a batch adds no extra write at all.
//
// matched is a frozen<list<text>>: a non-frozen collection makes every
// INSERT also write a tombstone (to replace the old list), which costs on
// every write and on every read; the list is never updated in place.
package cassandra

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Write mode: unlogged single-partition batches, measured against
// concurrent single-statement writes with BenchmarkWrite (scripts/
// bench-store.sh) on the 2-core test machine, Cassandra 5.0.9 on loopback
// with 1 GiB heap, other builds running beside it (so the numbers are
// noisy: medians of 3 rounds, each round's number in brackets); one op is
// 1000 comments over 20 (crawler, day) partitions, ~250 bytes of text each:
//
//	unlogged batch per partition        37,225 comments/s (25,325 44,490 37,225)
//	concurrent single statements        16,179 comments/s ( 6,513 18,039 16,179)
//	baseline: bare gocql loop, 256      20,008 comments/s (20,008 19,586 29,168)
//	goroutines, single statements
//
// A batch of one partition is one mutation on one replica set: no batch
// log, and one request instead of fifty, which is what costs on a small
// machine (the client and Cassandra share the CPU). So writeBatches is the
// mode; writeSingles stays for the benchmark's comparison.
type writeMode int

const (
	writeBatches writeMode = iota
	writeSingles
)

const (
	// maxInFlight bounds the requests one Write has outstanding.
	maxInFlight = 64
	// A partition's comments go in unlogged batches of at most this many
	// rows and about this many bytes. Single-partition batches are exempt
	// from batch_size_fail_threshold, but a mutation must stay well under
	// half a commit log segment and the native frame limit.
	maxBatchRows  = 250
	maxBatchBytes = 512 << 10
	// maxKnownDays bounds the memory of crawler_days rows already written.
	maxKnownDays = 1 << 16
)

// Store is a store.Store on Cassandra. It is safe for concurrent use.
type Store struct {
	session *gocql.Session
	cfg     Config
	log     *slog.Logger
	mode    writeMode
	// inFlight bounds the requests one Write has outstanding.
	inFlight int

	insertComment string
	insertDay     string
	selectDays    string
	selectDay     string

	selectHeld    string
	insertIntent  string
	selectIntents string
	selectCounted string

	mu        sync.Mutex
	knownDays map[partKey]struct{}
	// unsettled are rows a failed WriteFresh found absent: the retry of
	// the batch must still count them as new even if the failed attempt
	// stored them.
	unsettled map[rowKey]struct{}

	closeOnce sync.Once
}

type partKey struct {
	crawler int64
	day     int64 // Unix seconds of the UTC midnight
}

// Open connects to the cluster in uri (see ParseURI), creates the keyspace
// and tables when they are missing and returns the store.
func Open(ctx context.Context, uri string, logger *slog.Logger) (*Store, error) {
	cfg, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "store", "store", "cassandra", "keyspace", cfg.Keyspace)

	cluster := gocql.NewCluster(cfg.Hosts...)
	// Protocol v4: gocql v1.7 speaks up to v4, and naming it saves the
	// discovery round trip on every connect.
	cluster.ProtoVersion = 4
	cluster.Consistency = cfg.Consistency
	cluster.Timeout = 10 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.NumConns = 2
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	cluster.RetryPolicy = &gocql.ExponentialBackoffRetryPolicy{NumRetries: 3, Min: 50 * time.Millisecond, Max: 2 * time.Second}
	cluster.ReconnectionPolicy = &gocql.ExponentialReconnectionPolicy{MaxRetries: 5, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second}
	cluster.DefaultIdempotence = true
	cluster.MaxWaitSchemaAgreement = 60 * time.Second
	cluster.Logger = gocqlLogger{logger}
	if cfg.Username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: cfg.Username, Password: cfg.Password}
	}
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 && d < cluster.ConnectTimeout {
			cluster.ConnectTimeout = d
		}
	}

	session, err := createSession(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("cassandra: connect to %s: %w", strings.Join(cfg.Hosts, ","), err)
	}
	ks := cfg.Keyspace
	s := &Store{
		session:  session,
		cfg:      cfg,
		log:      logger,
		mode:     writeBatches,
		inFlight: maxInFlight,
		insertComment: `INSERT INTO ` + ks + `.comments (crawler_id, day, published_at, comment_id, thread_id, node_id, inc_seq,
			` + bodyCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ` + placeholders(bodyCols) + `)`,
		insertIntent: `INSERT INTO ` + ks + `.usage_intents (node_id, seq, crawler_id, user_id, instance, lease_seq, days)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
		selectIntents: `SELECT seq, crawler_id, user_id, instance, lease_seq, days FROM ` + ks + `.usage_intents
			WHERE node_id = ? AND seq > ?`,
		selectCounted: `SELECT published_at FROM ` + ks + `.comments
			WHERE crawler_id = ? AND day = ? AND node_id = ? AND inc_seq = ? ALLOW FILTERING`,
		insertDay:  `INSERT INTO ` + ks + `.crawler_days (crawler_id, day) VALUES (?, ?)`,
		selectDays: `SELECT day FROM ` + ks + `.crawler_days WHERE crawler_id = ?`,
		selectDay: `SELECT comment_id, published_at, thread_id, ` + bodyCols + ` FROM ` + ks + `.comments
			WHERE crawler_id = ? AND day = ? LIMIT ?`,
		selectHeld: `SELECT published_at, comment_id FROM ` + ks + `.comments
			WHERE crawler_id = ? AND day = ? AND published_at IN ?`,
		knownDays: make(map[partKey]struct{}),
		unsettled: make(map[rowKey]struct{}),
	}
	if err := s.createSchema(ctx); err != nil {
		session.Close()
		return nil, err
	}
	logger.Info("cassandra store open", "hosts", strings.Join(cfg.Hosts, ","), "consistency", cfg.Consistency.String())
	return s, nil
}

// createSession is CreateSession bounded by ctx.
func createSession(ctx context.Context, cluster *gocql.ClusterConfig) (*gocql.Session, error) {
	type result struct {
		s   *gocql.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := cluster.CreateSession()
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func (s *Store) createSchema(ctx context.Context) error {
	ks := s.cfg.Keyspace
	stmts := []string{
		`CREATE KEYSPACE IF NOT EXISTS ` + ks + ` WITH replication = ` + s.cfg.replicationCQL(),
		`CREATE TABLE IF NOT EXISTS ` + ks + `.comments (
			crawler_id bigint,
			day date,
			published_at timestamp,
			comment_id text,
			source text,
			author text,
			text text,
			url text,
			fetched_at timestamp,
			matched frozen<list<text>>,
			node_id text,
			inc_seq bigint,
			PRIMARY KEY ((crawler_id, day), published_at, comment_id)
		) WITH CLUSTERING ORDER BY (published_at DESC, comment_id ASC)`,
		// Keyspaces created before comments carried their increment and
		// thread.
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS node_id text`,
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS inc_seq bigint`,
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS thread_id text`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.usage_intents (
			node_id text,
			seq bigint,
			crawler_id bigint,
			user_id bigint,
			instance bigint,
			lease_seq bigint,
			days set<date>,
			PRIMARY KEY (node_id, seq)
		) WITH default_time_to_live = ` + fmt.Sprint(int(intentTTL.Seconds())),
		`CREATE TABLE IF NOT EXISTS ` + ks + `.crawler_days (
			crawler_id bigint,
			day date,
			PRIMARY KEY (crawler_id, day)
		) WITH CLUSTERING ORDER BY (day DESC)`,
	}
	stmts = append(stmts, addColumns(ks+".comments")...)
	stmts = append(stmts, s.threadSchema()...)
	for _, stmt := range stmts {
		// gocql waits for schema agreement after each change.
		if err := s.session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("cassandra: create schema in keyspace %s: %w", ks, err)
		}
	}
	return nil
}

// Close releases the store's connections. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(s.session.Close)
	return nil
}

// gocqlLogger sends gocql's log lines (connection trouble, mostly) to slog.
type gocqlLogger struct{ l *slog.Logger }

func (g gocqlLogger) Print(v ...any) { g.l.Warn(strings.TrimSpace(fmt.Sprint(v...))) }
func (g gocqlLogger) Printf(format string, v ...any) {
	g.l.Warn(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
func (g gocqlLogger) Println(v ...any) { g.l.Warn(strings.TrimSpace(fmt.Sprintln(v...))) }

var (
	_ store.Store        = (*Store)(nil)
	_ store.FreshWriter  = (*Store)(nil)
	_ store.UsageJournal = (*Store)(nil)
)
