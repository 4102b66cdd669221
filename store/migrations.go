package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// migrations are the schema's versions: migrations[i] takes a database from version i to i+1. Append only; never
// edit a migration that has shipped. Every statement must run on SQLite and on Postgres.
var migrations = [][]string{
	{ // 1: conversations
		`CREATE TABLE conversations (
			id         TEXT PRIMARY KEY,
			created_ms BIGINT NOT NULL,
			updated_ms BIGINT NOT NULL,
			messages   INTEGER NOT NULL DEFAULT 0,
			sources    INTEGER NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX conversations_updated ON conversations (updated_ms)`,
		`CREATE TABLE conversation_messages (
			conversation_id TEXT NOT NULL,
			seq             INTEGER NOT NULL,
			message         TEXT NOT NULL,
			PRIMARY KEY (conversation_id, seq)
		)`,
		`CREATE TABLE conversation_sources (
			conversation_id TEXT NOT NULL,
			number          INTEGER NOT NULL,
			title           TEXT NOT NULL,
			uri             TEXT NOT NULL,
			content         TEXT NOT NULL,
			PRIMARY KEY (conversation_id, number)
		)`,
	},
	{ // 2: served A2A tasks
		`CREATE TABLE a2a_tasks (
			id         TEXT PRIMARY KEY,
			context_id TEXT NOT NULL,
			state      TEXT NOT NULL,
			terminal   INTEGER NOT NULL,
			updated_ms BIGINT NOT NULL,
			version    BIGINT NOT NULL,
			task       TEXT NOT NULL
		)`,
		`CREATE INDEX a2a_tasks_updated ON a2a_tasks (updated_ms, id)`,
		`CREATE INDEX a2a_tasks_context ON a2a_tasks (context_id, updated_ms)`,
	},
	{ // 3: requests for the process that runs a task (cancel it, answer its question), from another process
		`CREATE TABLE a2a_signals (
			id         TEXT PRIMARY KEY,
			task_id    TEXT NOT NULL,
			kind       TEXT NOT NULL,
			body       TEXT NOT NULL,
			created_ms BIGINT NOT NULL
		)`,
		`CREATE INDEX a2a_signals_task ON a2a_signals (task_id)`,
	},
	{ // 4: the replicas running durable runs, and when each last said it was alive
		`CREATE TABLE agenthost_replicas (
			executor_id TEXT PRIMARY KEY,
			beat_ms     BIGINT NOT NULL
		)`,
	},
	{ // 5: which process runs a task, and whether its run survives that process
		`ALTER TABLE a2a_tasks ADD COLUMN owner TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE a2a_tasks ADD COLUMN durable INTEGER NOT NULL DEFAULT 0`,
	},
	{ // 6: MCP calls paused between the rounds of their callers (protocol 2026-07-28), which any replica can serve;
		// signals now go to tasks and to those calls alike
		`CREATE TABLE mcp_calls (
			id         TEXT PRIMARY KEY,
			owner      TEXT NOT NULL,
			tool       TEXT NOT NULL,
			args       TEXT NOT NULL,
			round      INTEGER NOT NULL,
			state      TEXT NOT NULL,
			outcome    TEXT NOT NULL,
			updated_ms BIGINT NOT NULL,
			expires_ms BIGINT NOT NULL
		)`,
		`CREATE INDEX mcp_calls_expires ON mcp_calls (expires_ms)`,
		`ALTER TABLE a2a_signals RENAME TO signals`,
		`ALTER TABLE signals RENAME COLUMN task_id TO target_id`,
	},
	{ // 7: OAuth grants to MCP servers (tokens, refresh tokens, dynamically registered clients), as JSON
		`CREATE TABLE oauth_grants (
			server     TEXT PRIMARY KEY,
			grant_json TEXT NOT NULL,
			updated_ms BIGINT NOT NULL
		)`,
	},
	{ // 8: who a task is for (the token's subject when callers authenticate with tokens from an identity provider)
		`ALTER TABLE a2a_tasks ADD COLUMN subject TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX a2a_tasks_subject ON a2a_tasks (subject, updated_ms)`,
	},
	{ // 9: conversations are swept in the order of their last use, read from the index alone, and the sweeps of every
		// process sharing the database take turns (agenthost_sweeps), so that short-lived processes do not each sweep
		`CREATE INDEX conversations_used ON conversations (updated_ms, id)`,
		`DROP INDEX conversations_updated`,
		`CREATE TABLE agenthost_sweeps (
			name     TEXT PRIMARY KEY,
			swept_ms BIGINT NOT NULL
		)`,
	},
	{ // 10: the tools that a conversation's searches loaded, in load order, each name followed by a newline
		`ALTER TABLE conversations ADD COLUMN tools TEXT NOT NULL DEFAULT ''`,
	},
}

// SchemaVersion is the version of the schema this agenthost writes.
var SchemaVersion = len(migrations)

// MigrationLock is the key of the Postgres advisory lock under which agenthost migrates a database: its own tables
// (Open) and DBOS's schema "dbos" (package durable), so that replicas starting together on an empty database migrate
// one at a time instead of racing each other's CREATE statements. pg_locks shows it held as locktype advisory,
// classid 0, objid 1634168436, objsubid 1 (0x61676e74, "agnt").
const MigrationLock = 0x61676e74

// MigrationWait bounds how long a process waits for MigrationLock, which another process holds while it migrates.
const MigrationWait = 2 * time.Minute

// lockPoll is how often a process waiting for MigrationLock tries to take it.
const lockPoll = 100 * time.Millisecond

// waitMigrationLock takes MigrationLock on conn, trying again every lockPoll while another process holds it, for at
// most MigrationWait, and less when ctx ends first. It polls outside any transaction rather than waits in Postgres
// (pg_advisory_lock): a wait that a canceled context interrupts on the client goes on in the server until the lock
// is free, and takes it for a client that is gone; and a statement, or a transaction, waiting for the lock holds up
// DBOS's CREATE INDEX CONCURRENTLY, which waits for the transactions older than it, run by the process that holds
// the lock.
func waitMigrationLock(ctx context.Context, conn *sql.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, MigrationWait)
	defer cancel()
	poll := time.NewTicker(lockPoll)
	defer poll.Stop()
	for {
		var locked bool
		err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, MigrationLock).Scan(&locked)
		if err == nil && locked {
			return nil
		}
		if err == nil {
			select {
			case <-poll.C:
				continue
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		return fmt.Errorf("waiting for the migration lock (Postgres advisory lock %d), which another agenthost holds "+
			"while it migrates this database: %w", MigrationLock, err)
	}
}

// LockMigrations takes MigrationLock on a connection of its own to the Postgres database dsn, waiting for the
// process migrating it to finish (at most MigrationWait, and less when ctx ends first), and returns the function
// that releases the lock and closes the connection. Open holds it while it migrates agenthost's tables, package
// durable while DBOS creates or migrates its schema. The lock is a session's: dsn must lead to a session of its own
// for as long as the lock is held (a direct connection, or a pooler in session mode), not one a transaction pooler
// shares. logger (nil: discard) is warned when the lock was no longer held by that session at its release.
func LockMigrations(ctx context.Context, dsn string, logger *slog.Logger) (release func(), err error) {
	release, err = lockMigrations(ctx, dsn, logger)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return release, nil
}

func lockMigrations(ctx context.Context, dsn string, logger *slog.Logger) (release func(), err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	// One connection, pinned: the lock and its unlock run on the same session, which database/sql would not
	// promise for two statements on the pool even of one connection (it may discard one and dial another).
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := waitMigrationLock(ctx, conn); err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	return func() {
		unlockMigrations(conn, logger)
		conn.Close()
		db.Close()
	}, nil
}

// unlockMigrations releases MigrationLock on conn, the session that took it, and warns logger when it cannot or
// the session no longer held it. Closing the connection ends its session, which releases the lock all the same: the
// unlock only makes sure the lock is not held a moment longer than the session.
func unlockMigrations(conn *sql.Conn, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var unlocked bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_advisory_unlock($1)`, MigrationLock).Scan(&unlocked); err != nil {
		logger.Warn("store: cannot release the migration lock; it goes with its session", "lock", MigrationLock, "err", err)
	} else if !unlocked {
		logger.Warn("store: the migration lock was no longer held by the session that took it (a pooler in transaction "+
			"mode runs each statement on any of its sessions): [state] needs a direct or session-pooled connection for "+
			"start-up migrations", "lock", MigrationLock)
	}
}

// migrate brings the schema to SchemaVersion, in one transaction, and refuses a database from a newer agenthost. On
// Postgres, the database dsn, it does so under MigrationLock, taken before the transaction begins; on SQLite, the
// transaction is IMMEDIATE, which serializes it with every other writer of the file.
func (s *DB) migrate(ctx context.Context, dsn string) error {
	if s.backend == Postgres {
		release, err := lockMigrations(ctx, dsn, s.logger)
		if err != nil {
			return fmt.Errorf("store: %s: %w", s.where, err)
		}
		defer release()
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agenthost_schema (version INTEGER NOT NULL)`); err != nil {
			return err
		}
		version := 0
		switch err := tx.QueryRowContext(ctx, `SELECT version FROM agenthost_schema`).Scan(&version); err {
		case sql.ErrNoRows:
			if _, err := tx.ExecContext(ctx, `INSERT INTO agenthost_schema (version) VALUES (0)`); err != nil {
				return err
			}
		case nil:
		default:
			return err
		}
		if version > SchemaVersion {
			return fmt.Errorf("%s was written by a newer agenthost (schema version %d; this one knows up to %d): "+
				"upgrade agenthost, or point [state] at another database", s.where, version, SchemaVersion)
		}
		for v := version; v < SchemaVersion; v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w: %s", v+1, err, strings.Join(strings.Fields(stmt), " "))
				}
			}
		}
		if version < SchemaVersion {
			_, err := tx.ExecContext(ctx, `UPDATE agenthost_schema SET version = $1`, SchemaVersion)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: %s: %w", s.where, err)
	}
	return nil
}
