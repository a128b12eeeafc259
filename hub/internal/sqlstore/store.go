package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
)

// Database tuning. SQLite allows one writer at a time; one connection makes
// that explicit (transactions queue in the pool instead of failing with
// SQLITE_BUSY) and costs nothing for the hub's small, short statements.
const (
	// sqliteBusyTimeout is how long SQLite waits for a lock held by another
	// process (an operator's sqlite3 shell, a second hub by mistake).
	sqliteBusyTimeout = 10 * time.Second
	// sqliteOpenRetryMin and sqliteOpenRetryMax bound the wait between
	// attempts at opening a database another hub is switching to WAL; the
	// wait doubles from the first to the second, jittered so that hubs
	// that collided once do not collide again.
	sqliteOpenRetryMin = 5 * time.Millisecond
	sqliteOpenRetryMax = 200 * time.Millisecond
	// postgresMaxOpenConns bounds the hub's PostgreSQL connections: polls of
	// many nodes apply usage concurrently, admin requests come on top.
	postgresMaxOpenConns = 16
	// postgresMaxIdleConns keeps a few connections warm between polls.
	postgresMaxIdleConns = 4
	// postgresConnMaxIdleTime closes connections idle for longer, so a quiet
	// hub does not hold server slots.
	postgresConnMaxIdleTime = 5 * time.Minute
	// slowQueryThreshold is when a statement is logged as slow.
	slowQueryThreshold = 500 * time.Millisecond
)

// Dialect names, as Store.Dialect reports them.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// Store is the hub's SQL database. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	dialect string
	logger  *slog.Logger
	// sources are the source kinds crawlers may read (UseSources).
	sources atomic.Pointer[api.SourceRegistry]
	prune   analyticsPrune // when old analytics buckets were last deleted
}

// Open connects to the database named by dsn and brings its schema up to
// date. Supported forms:
//
//	sqlite://blackwidow.db       a file relative to the working directory
//	sqlite:///var/lib/bw/hub.db  an absolute path
//	postgres://user:pass@host:5432/db?sslmode=disable  (or postgresql://)
//
// SQLite runs in WAL mode with foreign keys on, a busy timeout and a single
// connection (one writer, as SQLite wants).
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "sqlstore")
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return nil, fmt.Errorf("%w: database %q has no scheme (want sqlite://PATH or postgres://…)", ErrInvalid, Redact(dsn))
	}
	cfg := &gorm.Config{
		Logger:         &slogGorm{logger: logger},
		NowFunc:        now,
		TranslateError: true,
		// Single statements are atomic on their own; the store opens its
		// own transactions where several must commit together.
		SkipDefaultTransaction: true,
	}
	var (
		dialector func() gorm.Dialector
		dialect   string
	)
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		name, err := sqliteDSN(rest)
		if err != nil {
			return nil, err
		}
		dialector, dialect = func() gorm.Dialector { return sqlite.Open(name) }, DialectSQLite
	case "postgres", "postgresql":
		dialector, dialect = func() gorm.Dialector { return postgres.New(postgres.Config{DSN: dsn}) }, DialectPostgres
	default:
		return nil, fmt.Errorf("%w: unknown database scheme %q (want sqlite:// or postgres://)", ErrInvalid, scheme)
	}
	// Switching a fresh SQLite file to WAL takes an exclusive lock that
	// SQLite does not wait for: hubs opening one new file together can get
	// SQLITE_BUSY at once. Such an open is retried for as long as the busy
	// timeout would have waited.
	deadline := time.Now().Add(sqliteBusyTimeout)
	retry := backoff.Policy{Min: sqliteOpenRetryMin, Max: sqliteOpenRetryMax}
	for {
		s, err := open(ctx, dialector(), dialect, cfg, dsn, logger)
		if err == nil || dialect != DialectSQLite || !isSQLiteBusy(err) {
			return s, err
		}
		wait := retry.Next()
		if time.Now().Add(wait).After(deadline) {
			return s, err
		}
		logger.Debug("sqlite database busy while opening, retrying", "wait", wait)
		if !backoff.Sleep(ctx, wait) {
			return nil, fmt.Errorf("sqlstore: unable to open %s: %w", Redact(dsn), ctx.Err())
		}
	}
}

// isSQLiteBusy reports whether err is SQLite's SQLITE_BUSY, in any of its
// extended forms.
func isSQLiteBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// open makes one attempt at connecting and migrating.
func open(ctx context.Context, dialector gorm.Dialector, dialect string, cfg *gorm.Config, dsn string, logger *slog.Logger) (*Store, error) {
	db, err := gorm.Open(dialector, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to open %s: %w", Redact(dsn), err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to open %s: %w", Redact(dsn), err)
	}
	if dialect == DialectSQLite {
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
		sqlDB.SetConnMaxLifetime(0)
		sqlDB.SetConnMaxIdleTime(0)
	} else {
		sqlDB.SetMaxOpenConns(postgresMaxOpenConns)
		sqlDB.SetMaxIdleConns(postgresMaxIdleConns)
		sqlDB.SetConnMaxIdleTime(postgresConnMaxIdleTime)
	}
	s := &Store{db: db, dialect: dialect, logger: logger}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("sqlstore: unable to connect to %s: %w", Redact(dsn), err)
	}
	if err := s.migrate(ctx, migrations); err != nil {
		sqlDB.Close()
		return nil, err
	}
	return s, nil
}

// sqliteDSN turns the part of a sqlite:// DSN after the scheme into the
// driver's file name with the pragmas every connection needs. Query
// parameters the operator gave are kept and come after ours.
func sqliteDSN(rest string) (string, error) {
	path, query, _ := strings.Cut(rest, "?")
	if path == "" {
		return "", fmt.Errorf("%w: sqlite:// needs a file path, e.g. sqlite://blackwidow.db", ErrInvalid)
	}
	if path != ":memory:" {
		dir := filepath.Dir(path)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%w: directory %s of the SQLite database does not exist", ErrInvalid, dir)
		}
	}
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Add("_pragma", "foreign_keys(1)")
	// IMMEDIATE takes the write lock at BEGIN, so a transaction never fails
	// half-way when upgrading from a read lock.
	params.Set("_txlock", "immediate")
	name := path + "?" + params.Encode()
	if query != "" {
		name += "&" + query
	}
	return name, nil
}

// Dialect reports which database the store talks to: DialectSQLite or
// DialectPostgres.
func (s *Store) Dialect() string { return s.dialect }

// Close releases the database connections.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("sqlstore: unable to close: %w", err)
	}
	if err := sqlDB.Close(); err != nil {
		return fmt.Errorf("sqlstore: unable to close: %w", err)
	}
	return nil
}

// now is the store's clock: UTC (so SQLite's text timestamps compare in
// order) at microsecond precision (what PostgreSQL keeps), so both
// databases give back exactly what was written.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// dbTime normalises a time the way now does.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// notFound maps gorm's "record not found" to ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}

// slogGorm routes gorm's own messages to slog. Statement errors are not
// logged here: they are returned to the caller, which decides. Slow
// statements are logged without their parameters, which may hold customer
// data.
type slogGorm struct {
	logger *slog.Logger
}

func (l *slogGorm) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }

func (l *slogGorm) Info(ctx context.Context, msg string, args ...any) {
	l.logger.DebugContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *slogGorm) Warn(ctx context.Context, msg string, args ...any) {
	l.logger.WarnContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *slogGorm) Error(ctx context.Context, msg string, args ...any) {
	l.logger.WarnContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *slogGorm) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if elapsed := time.Since(begin); elapsed > slowQueryThreshold {
		sql, rows := fc()
		l.logger.WarnContext(ctx, "slow sql statement", "elapsed", elapsed, "rows", rows, "sql", sql)
	}
}

// ParamsFilter keeps statement parameters out of the log.
func (l *slogGorm) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// UseSources sets the declarations of the source kinds crawlers may read:
// the hub's own registry, which learns the kinds spawns bring. A store
// not told knows the builtin ones.
func (s *Store) UseSources(r *api.SourceRegistry) { s.sources.Store(r) }

func (s *Store) sourceRegistry() *api.SourceRegistry {
	if r := s.sources.Load(); r != nil {
		return r
	}
	return builtinSources()
}

func (s *Store) knownSource(name string) bool {
	_, ok := s.sourceRegistry().Lookup(name)
	return ok
}

var builtinSources = sync.OnceValue(func() *api.SourceRegistry { return api.NewSourceRegistry(api.BuiltinSources()...) })
