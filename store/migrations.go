package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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
}

// SchemaVersion is the version of the schema this agenthost writes.
var SchemaVersion = len(migrations)

// migrationLock is the Postgres advisory lock that makes replicas starting together migrate one at a time.
const migrationLock = 0x61676e74 // "agnt"

// migrate brings the schema to SchemaVersion, in one transaction, and refuses a database from a newer agenthost.
func (s *DB) migrate(ctx context.Context) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.backend == Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
				return err
			}
		}
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
