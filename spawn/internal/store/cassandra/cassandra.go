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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
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
		insertComment: `INSERT INTO ` + ks + `.comments (crawler_id, day, published_at, comment_id,
			source, author, text, url, fetched_at, matched, node_id, inc_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		insertIntent: `INSERT INTO ` + ks + `.usage_intents (node_id, seq, crawler_id, user_id, instance, lease_seq, days)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
		selectIntents: `SELECT seq, crawler_id, user_id, instance, lease_seq, days FROM ` + ks + `.usage_intents
			WHERE node_id = ? AND seq > ?`,
		selectCounted: `SELECT published_at FROM ` + ks + `.comments
			WHERE crawler_id = ? AND day = ? AND node_id = ? AND inc_seq = ? ALLOW FILTERING`,
		insertDay:  `INSERT INTO ` + ks + `.crawler_days (crawler_id, day) VALUES (?, ?)`,
		selectDays: `SELECT day FROM ` + ks + `.crawler_days WHERE crawler_id = ?`,
		selectDay: `SELECT comment_id, source, author, text, url, published_at, fetched_at, matched
			FROM ` + ks + `.comments WHERE crawler_id = ? AND day = ? LIMIT ?`,
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
		// Keyspaces created before comments carried their increment.
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS node_id text`,
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS inc_seq bigint`,
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
	for _, stmt := range stmts {
		// gocql waits for schema agreement after each change.
		if err := s.session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("cassandra: create schema in keyspace %s: %w", ks, err)
		}
	}
	return nil
}

// Write stores every comment, or returns an error after which the caller
// retries the whole batch (rewrites overwrite, so retries are harmless).
func (s *Store) Write(ctx context.Context, comments []api.Comment) error {
	if len(comments) == 0 {
		return nil
	}
	return s.writeParts(ctx, partition(comments), len(comments))
}

// writeParts writes n comments grouped by partition.
func (s *Store) writeParts(ctx context.Context, parts []*part, n int) error {
	if err := s.writeDays(ctx, parts); err != nil {
		return fmt.Errorf("cassandra: write %d comments: day index: %w", n, err)
	}
	var err error
	switch s.mode {
	case writeSingles:
		err = s.writeSingles(ctx, parts)
	default:
		err = s.writeBatches(ctx, parts)
	}
	if err != nil {
		return fmt.Errorf("cassandra: write %d comments: %w", n, err)
	}
	return nil
}

// intentTTL is how long an increment's intent is kept: far longer than a
// lost spawn's usage takes to be recovered.
const intentTTL = 7 * 24 * time.Hour

// Intend records the intents, one idempotent insert each.
func (s *Store) Intend(ctx context.Context, intents []store.Intent) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, in := range intents {
		g.Go(func() error {
			days := make([]time.Time, len(in.Days))
			for i, d := range in.Days {
				days[i] = utcDay(d)
			}
			q := s.session.Query(s.insertIntent, in.NodeID, int64(in.Seq), in.CrawlerID, in.UserID,
				int64(in.Instance), int64(in.LeaseSeq), days).WithContext(gctx).Idempotent(true)
			err := q.Exec()
			q.Release()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: record %d usage intents: %w", len(intents), err)
	}
	return nil
}

// Recover counts, for each intent of node after afterSeq, the comments
// stored under it, in the partitions the intent names.
func (s *Store) Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error) {
	iter := s.session.Query(s.selectIntents, nodeID, int64(afterSeq)).WithContext(ctx).Idempotent(true).Iter()
	var out []api.Increment
	var days [][]time.Time
	var seq, instance, leaseSeq, crawlerID, userID int64
	var d []time.Time
	for iter.Scan(&seq, &crawlerID, &userID, &instance, &leaseSeq, &d) {
		out = append(out, api.Increment{NodeID: nodeID, Seq: uint64(seq), CrawlerID: crawlerID, UserID: userID,
			Instance: uint64(instance), LeaseSeq: uint64(leaseSeq)})
		days = append(days, slices.Clone(d))
		d = nil
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read usage intents of node %s: %w", nodeID, err)
	}
	for i := range out {
		inc := &out[i]
		for _, day := range days[i] {
			it := s.session.Query(s.selectCounted, inc.CrawlerID, day, nodeID, int64(inc.Seq)).WithContext(ctx).Idempotent(true).Iter()
			var pub time.Time
			for it.Scan(&pub) {
				inc.Count++
				if pub.After(inc.Newest) {
					inc.Newest = pub.UTC()
				}
			}
			if err := it.Close(); err != nil {
				return nil, fmt.Errorf("cassandra: count comments of increment %s/%d: %w", nodeID, inc.Seq, err)
			}
		}
	}
	return out, nil
}

// maxUnsettled bounds the rows remembered from failed writes; the writer
// retries one batch at a time, so it holds at most a batch or two.
const maxUnsettled = 1 << 16

// WriteFresh is Write reporting which comments the store did not hold
// before. It reads the batch's keys first (one query per partition), so a
// comment delivered again is not counted twice. Two spawns writing the
// same new comment at the same moment (a crawler moving) can both see it
// as new; the hub's handover keeps that window short.
func (s *Store) WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error) {
	fresh := make([]bool, len(comments))
	if len(comments) == 0 {
		return fresh, nil
	}
	parts := partition(comments)
	held, err := s.held(ctx, parts)
	if err != nil {
		return fresh, fmt.Errorf("cassandra: read %d comment keys: %w", len(comments), err)
	}
	candidates := make(map[rowKey]bool, len(comments))
	s.mu.Lock()
	for i := range comments {
		c := &comments[i]
		k := rowKey{partKey{c.CrawlerID, utcDay(c.PublishedAt).Unix()}, c.PublishedAt.UnixMilli(), c.ID}
		if _, seen := candidates[k]; seen {
			continue // the same comment twice in one batch counts once
		}
		_, retried := s.unsettled[k]
		isNew := retried || !held[k]
		candidates[k] = isNew
		fresh[i] = isNew
	}
	s.mu.Unlock()
	// Only new comments are written: rewriting a held one would take it
	// from the increment that counted it.
	var toWrite []*part
	n := 0
	for _, p := range parts {
		rows := slices.DeleteFunc(slices.Clone(p.rows), func(c *api.Comment) bool {
			return !candidates[rowKey{p.key, c.PublishedAt.UnixMilli(), c.ID}]
		})
		if len(rows) > 0 {
			toWrite = append(toWrite, &part{key: p.key, day: p.day, rows: rows})
			n += len(rows)
		}
	}
	if n == 0 {
		return fresh, nil
	}
	if err := s.writeParts(ctx, toWrite, n); err != nil {
		s.mu.Lock()
		if len(s.unsettled)+len(candidates) > maxUnsettled {
			clear(s.unsettled)
		}
		for k, isNew := range candidates {
			if isNew {
				s.unsettled[k] = struct{}{}
			}
		}
		s.mu.Unlock()
		return make([]bool, len(comments)), err
	}
	s.mu.Lock()
	for k := range candidates {
		delete(s.unsettled, k)
	}
	s.mu.Unlock()
	return fresh, nil
}

// held reads which of the parts' rows are already stored.
func (s *Store) held(ctx context.Context, parts []*part) (map[rowKey]bool, error) {
	var mu sync.Mutex
	out := map[rowKey]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range parts {
		g.Go(func() error {
			pubs := make([]time.Time, 0, len(p.rows))
			seen := map[int64]bool{}
			for _, c := range p.rows {
				if m := c.PublishedAt.UnixMilli(); !seen[m] {
					seen[m] = true
					pubs = append(pubs, ms(c.PublishedAt))
				}
			}
			iter := s.session.Query(s.selectHeld, p.key.crawler, p.day, pubs).WithContext(gctx).Idempotent(true).Iter()
			var pub time.Time
			var id string
			for iter.Scan(&pub, &id) {
				mu.Lock()
				out[rowKey{p.key, pub.UnixMilli(), id}] = true
				mu.Unlock()
			}
			return iter.Close()
		})
	}
	return out, g.Wait()
}

type part struct {
	key  partKey
	day  time.Time
	rows []*api.Comment
}

type rowKey struct {
	part partKey
	pub  int64 // Unix milliseconds
	id   string
}

// partition groups comments by (crawler id, UTC day of published time),
// keeping their order. A comment given twice (same primary key) is kept
// once, its last version: the rows of one batch share a write timestamp,
// and Cassandra would settle such a tie by comparing values, not by order.
func partition(comments []api.Comment) []*part {
	parts := make(map[partKey]*part)
	rows := make(map[rowKey]int, len(comments))
	var order []*part
	for i := range comments {
		c := &comments[i]
		day := utcDay(c.PublishedAt)
		k := partKey{c.CrawlerID, day.Unix()}
		p := parts[k]
		if p == nil {
			p = &part{key: k, day: day}
			parts[k] = p
			order = append(order, p)
		}
		rk := rowKey{k, c.PublishedAt.UnixMilli(), c.ID}
		if j, dup := rows[rk]; dup {
			p.rows[j] = c
			continue
		}
		rows[rk] = len(p.rows)
		p.rows = append(p.rows, c)
	}
	return order
}

func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ms is t in UTC at the millisecond precision of a Cassandra timestamp.
func ms(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}

// writeDays lists the batch's (crawler, day) pairs in crawler_days, skipping
// the ones this Store has listed before.
func (s *Store) writeDays(ctx context.Context, parts []*part) error {
	var todo []*part
	s.mu.Lock()
	for _, p := range parts {
		if _, ok := s.knownDays[p.key]; !ok {
			todo = append(todo, p)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range todo {
		g.Go(func() error {
			q := s.session.Query(s.insertDay, p.key.crawler, p.day).WithContext(gctx).Idempotent(true)
			err := q.Exec()
			q.Release()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.knownDays)+len(todo) > maxKnownDays {
		clear(s.knownDays)
	}
	for _, p := range todo {
		s.knownDays[p.key] = struct{}{}
	}
	s.mu.Unlock()
	return nil
}

func (s *Store) commentArgs(c *api.Comment, day time.Time) []any {
	matched := c.Matched
	if matched == nil {
		// An empty frozen list, not a null: a null is a tombstone.
		matched = []string{}
	}
	var node *string
	var seq *int64
	if c.NodeID != "" {
		n, q := c.NodeID, int64(c.IncSeq)
		node, seq = &n, &q
	}
	return []any{c.CrawlerID, day, ms(c.PublishedAt), c.ID,
		c.Source, c.Author, c.Text, c.URL, ms(c.FetchedAt), matched, node, seq}
}

// writeBatches writes each partition's comments as unlogged single-partition
// batches (one mutation on one replica set: no batch log, no coordinator
// fan-out), the partitions concurrently.
func (s *Store) writeBatches(ctx context.Context, parts []*part) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range parts {
		for start := 0; start < len(p.rows); {
			end, size := start, 0
			for end < len(p.rows) && end-start < maxBatchRows && (size < maxBatchBytes || end == start) {
				size += rowSize(p.rows[end])
				end++
			}
			rows := p.rows[start:end]
			start = end
			g.Go(func() error {
				b := s.session.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
				b.Entries = make([]gocql.BatchEntry, 0, len(rows))
				for _, c := range rows {
					b.Entries = append(b.Entries, gocql.BatchEntry{
						Stmt: s.insertComment, Args: s.commentArgs(c, p.day), Idempotent: true,
					})
				}
				return s.session.ExecuteBatch(b)
			})
		}
	}
	return g.Wait()
}

func rowSize(c *api.Comment) int {
	n := 64 + len(c.ID) + len(c.Source) + len(c.Author) + len(c.Text) + len(c.URL)
	for _, m := range c.Matched {
		n += 4 + len(m)
	}
	return n
}

// writeSingles writes every comment as its own statement, concurrently.
func (s *Store) writeSingles(ctx context.Context, parts []*part) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range parts {
		for _, c := range p.rows {
			g.Go(func() error {
				q := s.session.Query(s.insertComment, s.commentArgs(c, p.day)...).
					WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	return g.Wait()
}

// Recent returns up to n of a crawler's comments, newest published first.
func (s *Store) Recent(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error) {
	if n <= 0 {
		return nil, nil
	}
	days := s.session.Query(s.selectDays, crawlerID).WithContext(ctx).PageSize(64).Iter()
	out := make([]api.Comment, 0, min(n, 1024))
	var day time.Time
	for len(out) < n && days.Scan(&day) {
		var err error
		if out, err = s.readDay(ctx, crawlerID, day, n-len(out), out); err != nil {
			days.Close()
			return nil, fmt.Errorf("cassandra: recent comments of crawler %d: %w", crawlerID, err)
		}
	}
	if err := days.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: recent comments of crawler %d: days: %w", crawlerID, err)
	}
	return out, nil
}

func (s *Store) readDay(ctx context.Context, crawlerID int64, day time.Time, limit int, out []api.Comment) ([]api.Comment, error) {
	q := s.session.Query(s.selectDay, crawlerID, day, limit).WithContext(ctx)
	if limit < 5000 {
		q = q.PageSize(limit)
	}
	it := q.Iter()
	for {
		c := api.Comment{CrawlerID: crawlerID}
		if !it.Scan(&c.ID, &c.Source, &c.Author, &c.Text, &c.URL, &c.PublishedAt, &c.FetchedAt, &c.Matched) {
			break
		}
		c.PublishedAt = c.PublishedAt.UTC()
		c.FetchedAt = c.FetchedAt.UTC()
		if len(c.Matched) == 0 {
			c.Matched = nil
		}
		out = append(out, c)
	}
	err := it.Close()
	q.Release()
	return out, err
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
