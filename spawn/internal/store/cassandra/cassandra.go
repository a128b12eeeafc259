// Package cassandra is the comment store on Apache Cassandra
// (--store cassandra://host[:port][,host[:port]...]/keyspace): comments
// partitioned by crawler and UTC day, newest first, a day index per
// crawler, and the usage journal, created by Open. A comment is one row:
// storage-attached indexes on the row's own columns find it by id, by
// author and by thread (for deletions, edits and conversations), and its
// search terms, a set of the words of its text cut by the query language's
// word rule, find it by what it says. Why this schema and these writes:
// docs/decisions/0010-cassandra-schema.md and
// docs/decisions/0020-comments-found-by-their-own-row.md.
package cassandra

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Write mode: an unlogged batch per partition (writeBatches) is one
// mutation on one replica set, no batch log and one request instead of
// many; it outruns concurrent single statements (writeSingles, kept for
// the benchmark's comparison) on a small machine. The figures are in
// docs/benchmarks.md ("Comment store into Cassandra"), the reasoning in
// docs/decisions/0010-cassandra-schema.md.
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
	// id names the keyspace's store (store.Retractor.ID).
	id string
	// indexRowsRead counts the index rows removals read (indexes.go), for
	// the benchmark that shows they read no more than they remove.
	indexRowsRead atomic.Int64
	// heldKeysRead counts the keys counted writes read (write.go), for the
	// tests that show which they read.
	heldKeysRead atomic.Int64

	upsertComment string
	insertDay     string
	selectDays    string
	selectDay     string

	selectHeld    string
	selectWriters string
	addWriter     string
	insertIntent  string
	selectIntents string
	selectCounted string

	// legacy names the index tables an earlier release wrote (before the
	// row's own indexes), read and kept in step while they exist.
	legacy legacyTables
	// textFrom is the first day whose partitions hold search terms on
	// every row (zero: every day): comments written before this release
	// carry none, and their days are searched by reading them.
	textFrom time.Time
	// writer is this Store's name in the partitions' writers sets;
	// writersFrom the first day whose partitions name every writer (zero:
	// every day); known what it remembers of the partitions it alone
	// writes (known.go).
	writer      string
	writersFrom time.Time
	known       *knownKeys

	mu        sync.Mutex
	knownDays map[partKey]struct{}
	// unsettled are rows a failed WriteFresh found absent: the retry of
	// the batch must still count them as new even if the failed attempt
	// stored them.
	unsettled map[rowKey]struct{}
	// prefetched are writers sets Intend read for the WriteFresh that
	// follows it (writers.go).
	prefetched map[partKey]prefetch

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
		upsertComment: `UPDATE ` + ks + `.comments USING TTL ? SET thread_id = ?, node_id = ?, inc_seq = ?, ` + setList(bodyCols) + `,
			author_key = ?, terms = terms + ? WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ?`,
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
			WHERE crawler_id = ? AND day = ? AND (published_at, comment_id) IN (`,
		selectWriters: `SELECT day, writers FROM ` + ks + `.crawler_days WHERE crawler_id = ? AND day IN ?`,
		addWriter:     `UPDATE ` + ks + `.crawler_days SET writers = writers + ? WHERE crawler_id = ? AND day = ?`,
		known:         newKnownKeys(),
		knownDays:     make(map[partKey]struct{}),
		unsettled:     make(map[rowKey]struct{}),
		prefetched:    make(map[partKey]prefetch),
	}
	if s.writer, err = newWriterID(); err != nil {
		session.Close()
		return nil, err
	}
	if err := s.createSchema(ctx); err != nil {
		session.Close()
		return nil, err
	}
	if err := s.waitIndexes(ctx); err != nil {
		session.Close()
		return nil, err
	}
	if err := s.loadID(ctx); err != nil {
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
	if err := s.session.Query(`CREATE KEYSPACE IF NOT EXISTS ` + ks + ` WITH replication = ` + s.cfg.replicationCQL()).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("cassandra: create keyspace %s: %w", ks, err)
	}
	before, err := s.schemaOf(ctx)
	if err != nil {
		return err
	}
	s.legacy = before.legacy
	stmts := []string{
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
		// Who wrote the partition's rows (writers.go).
		`ALTER TABLE ` + ks + `.crawler_days ADD IF NOT EXISTS writers set<text>`,
	}
	stmts = append(stmts, addColumns(ks+".comments")...)
	stmts = append(stmts, s.indexSchema()...)
	if s.legacy.thread {
		stmts = append(stmts, addColumns(ks+".comments_by_thread")...)
	}
	stmts = append(stmts, s.retractSchema()...)
	for _, stmt := range stmts {
		// gocql waits for schema agreement after each change.
		if err := s.session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("cassandra: create schema in keyspace %s: %w", ks, err)
		}
	}
	if err := s.loadTextFrom(ctx, before); err != nil {
		return err
	}
	return s.loadWritersFrom(ctx, before)
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
