// Package store keeps agenthost's state in a database: conversations (host.ConversationStore), served A2A
// tasks and tool search's vectors (host.EmbeddingCache). SQLite (modernc.org/sqlite, pure Go, WAL) is the default,
// one file in agenthost's state directory; Postgres (pgx) is for replicas that share state.
//
// Both speak the same SQL: positional $N parameters, BIGINT milliseconds for times, TEXT for JSON. The schema is
// versioned (see migrations); a database written by a newer agenthost is refused, never changed.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/statedir"
)

// The backends Open accepts.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Options configures Open.
type Options struct {
	// Backend is SQLite or Postgres.
	Backend string
	// Path is the SQLite file. Its directory is created (0700) when missing, the file and its -wal, -shm and
	// -journal are made 0600 (an existing one readable by others is tightened, with a warning). Required for
	// SQLite.
	Path string
	// DSN is the Postgres connection string. Required for Postgres; never logged.
	DSN string
	// MaxConversations bounds the conversations kept; the least recently used go first. 0 means
	// host.DefaultMaxConversations.
	MaxConversations int
	// IdleTTL is how long an unused conversation is kept: past it, the conversation can no longer be loaded or
	// continued, and a sweep deletes it. 0 means DefaultConversationTTL.
	IdleTTL time.Duration
	// MaxTasks bounds the served A2A tasks kept; the least recently updated finished ones go first. 0 means
	// DefaultMaxTasks.
	MaxTasks int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the sweeps' failures; nil discards them.
	Logger *slog.Logger
}

// DefaultConversationTTL is the default Options.IdleTTL: a month, where memory keeps a conversation an hour
// (host.DefaultConversationTTL), since a database outlives the process and its user comes back later.
const DefaultConversationTTL = 30 * 24 * time.Hour

// DB is an open state database. It is safe for concurrent use.
type DB struct {
	db       *sql.DB
	backend  string
	where    string // the file, or the Postgres host and database: for messages, never the password
	max      int
	maxTasks int
	ttl      time.Duration
	now      func() time.Time
	logger   *slog.Logger

	stmts sync.Map // query → *sql.Stmt, prepared at Open
	// release ends the process's hold of the SQLite file (statedir.HoldSQLite); a no-op for Postgres.
	release func()

	sweepMu    sync.Mutex // held by a sweep
	lastSweep  time.Time
	sinceSweep atomic.Int64 // conversations created since the last sweep
}

var _ host.ConversationStore = (*DB)(nil)

// DefaultPath returns the default SQLite file of the agent named agent: "<agent>.db" in agenthost's state
// directory.
func DefaultPath(agent string) (string, error) {
	dir, err := statedir.Dir()
	if err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return filepath.Join(dir, agent+".db"), nil
}

// Open opens the database, applying the migrations it lacks. It fails when the database was written by a newer
// agenthost.
func Open(ctx context.Context, opts Options) (*DB, error) {
	s := &DB{backend: opts.Backend, max: opts.MaxConversations, maxTasks: opts.MaxTasks, ttl: opts.IdleTTL, now: opts.Now, logger: opts.Logger, release: func() {}}
	if s.max <= 0 {
		s.max = host.DefaultMaxConversations
	}
	if s.maxTasks <= 0 {
		s.maxTasks = DefaultMaxTasks
	}
	if s.ttl <= 0 {
		s.ttl = DefaultConversationTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	var err error
	switch opts.Backend {
	case SQLite:
		if opts.Path == "" {
			return nil, errors.New("store: no SQLite file given")
		}
		s.where = opts.Where()
		// Conversations are private: the file is made 0600 before SQLite opens it, which then gives its -wal,
		// -shm and -journal the same mode.
		if err := statedir.PrepareSQLite(opts.Path, s.logger); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		s.release = statedir.HoldSQLite(opts.Path) // the file tools leave it alone, the durable engine too
		s.db, err = sql.Open("sqlite", SQLiteDSN(opts.Path))
		if err == nil {
			// One connection: SQLite has one writer at a time, and runs waiting their turn in Go cost nothing,
			// where connections waiting for the file's lock poll and sleep.
			s.db.SetMaxOpenConns(1)
		}
	case Postgres:
		if opts.DSN == "" {
			return nil, errors.New("store: no Postgres connection string given")
		}
		s.where = opts.Where()
		s.db, err = sql.Open("pgx", opts.DSN)
	default:
		return nil, fmt.Errorf("store: unknown backend %q (want %q or %q)", opts.Backend, SQLite, Postgres)
	}
	if err != nil {
		s.release()
		return nil, fmt.Errorf("store: opening %s: %w", s.where, err)
	}
	if err := s.migrateRetryingBusy(ctx, opts.DSN); err != nil {
		s.db.Close()
		s.release()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// migrateRetryingBusy migrates, retrying while a SQLite file answers SQLITE_BUSY at once (see statedir.RetryBusy).
func (s *DB) migrateRetryingBusy(ctx context.Context, dsn string) error {
	if s.backend != SQLite {
		return s.migrate(ctx, dsn)
	}
	return statedir.RetryBusy(ctx, func() error { return s.migrate(ctx, dsn) })
}

// SQLiteDSN returns the data source name agenthost opens the SQLite file path with. Writes begin IMMEDIATE, so
// that two writers wait for each other (busy_timeout) instead of one failing when it upgrades a read lock; NORMAL
// synchronous is durable in WAL mode except for the last commits on a power loss, not on a process crash.
//
// The page cache of each connection is bounded to sqliteCacheKiB of pages instead of SQLite's 2,000 KiB: see
// sqliteCacheKiB.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=cache_size(-" + strconv.Itoa(sqliteCacheKiB) + ")"
}

// sqliteCacheKiB bounds the page cache of a state connection, in KiB of pages. SQLite's default, 2,000 KiB, costs
// twice that in resident memory here: the pure-Go SQLite's allocator rounds each cached 4 KiB page with its header
// (a little over 4 KiB) up to an 8 KiB slot, so a cache that fills as the file grows reaches about 4 MiB per
// connection, and never shrinks. What a run touches is the root-to-leaf path of a few B-trees, which 256 KiB (about 60 pages) holds;
// a page that falls out is read again from the operating system's cache: about one read more per served run.
const sqliteCacheKiB = 256

// Where names the database for messages: the SQLite file, or the Postgres host and database, without user or
// password.
func (o Options) Where() string {
	if o.Backend == SQLite {
		return o.Path
	}
	if u, err := url.Parse(o.DSN); err == nil && u.Host != "" {
		return "postgres://" + u.Host + u.Path
	}
	return "the Postgres database"
}

// Close closes the database.
func (s *DB) Close() error {
	s.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	err := s.db.Close()
	s.release()
	return err
}

// prepare prepares the statements the hot paths use. It runs at Open: preparing inside a transaction would wait for
// a second connection, which SQLite's pool does not have.
func (s *DB) prepare(ctx context.Context) error {
	for _, q := range prepared {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("store: preparing %q: %w", q, err)
		}
		s.stmts.Store(q, st)
	}
	return nil
}

// stmt returns query, which prepare prepared, for tx.
func (s *DB) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, ok := s.stmts.Load(query)
	if !ok {
		return tx.PrepareContext(ctx, query)
	}
	return tx.StmtContext(ctx, st.(*sql.Stmt)), nil
}

// Backend returns SQLite or Postgres.
func (s *DB) Backend() string { return s.backend }

// Where names the database for messages: the SQLite file, or the Postgres host and database (never credentials).
func (s *DB) Where() string { return s.where }

// SQL returns the underlying database, for the durable-run engine that shares it.
func (s *DB) SQL() *sql.DB { return s.db }

// inTx runs f in a transaction, committed when f returns nil.
func (s *DB) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }
