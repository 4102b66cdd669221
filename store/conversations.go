package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// A conversation is a metadata row (its counts, which Append compares and swaps, and its times) and the append-only
// logs of its messages and sources. A conversation idle for longer than the TTL is gone at once for Load and Append
// (their WHERE clauses say so); sweep deletes its rows later.

// sweepEvery is the least time between two sweeps of expired conversations.
const sweepEvery = time.Minute

// Create implements host.ConversationStore.
func (s *DB) Create(ctx context.Context, id string) (string, error) {
	s.maybeSweep(ctx)
	now := millis(s.now())
	for {
		chosen := id
		if chosen == "" {
			chosen = host.NewConversationID()
		}
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			// A kept id whose conversation expired is free again: its rows go first.
			if err := deleteConversations(ctx, tx, `id = $1 AND updated_ms < $2`, chosen, s.cutoff()); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, created_ms, updated_ms) VALUES ($1, $2, $2)
				ON CONFLICT (id) DO NOTHING`, chosen, now)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return errors.Join(err, host.ErrConversationExists)
			}
			return s.evict(ctx, tx)
		})
		switch {
		case err == nil:
			return chosen, nil
		case errors.Is(err, host.ErrConversationExists) && id == "":
			continue // a random id collided: draw another
		case errors.Is(err, host.ErrConversationExists):
			return "", fmt.Errorf("%w: %q", host.ErrConversationExists, id)
		default:
			return "", fmt.Errorf("store: creating a conversation: %w", err)
		}
	}
}

// evict drops the least recently used conversations beyond the bound.
func (s *DB) evict(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM conversations`).Scan(&n); err != nil || n <= s.max {
		return err
	}
	// LIMIT with the largest BIGINT: SQLite needs a LIMIT before OFFSET, and Postgres takes no negative one.
	return deleteConversations(ctx, tx, `id IN (SELECT id FROM conversations ORDER BY updated_ms DESC, id
		LIMIT 9223372036854775807 OFFSET $1)`, s.max)
}

// deleteConversations deletes the conversations matching where (over the conversations table) and their logs.
func deleteConversations(ctx context.Context, tx *sql.Tx, where string, args ...any) error {
	for _, table := range []string{"conversation_messages", "conversation_sources"} {
		q := `DELETE FROM ` + table + ` WHERE conversation_id IN (SELECT id FROM conversations WHERE ` + where + `)`
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE `+where, args...)
	return err
}

// cutoff is the update time before which a conversation has expired.
func (s *DB) cutoff() int64 { return millis(s.now().Add(-s.ttl)) }

// maybeSweep deletes the expired conversations, at most once per sweepEvery. A failure is logged: expired
// conversations are invisible anyway.
func (s *DB) maybeSweep(ctx context.Context) {
	s.sweepMu.Lock()
	now := s.now()
	due := now.Sub(s.lastSweep) >= sweepEvery
	if due {
		s.lastSweep = now
	}
	s.sweepMu.Unlock()
	if !due {
		return
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return deleteConversations(ctx, tx, `updated_ms < $1`, s.cutoff())
	})
	if err != nil {
		s.logger.Warn("store: deleting expired conversations failed", "db", s.where, "err", err)
	}
}

// Load implements host.ConversationStore.
func (s *DB) Load(ctx context.Context, id string) (*host.Conversation, error) {
	return s.load(ctx, id, true)
}

// Peek returns the conversation id like Load, without counting it as a use.
func (s *DB) Peek(ctx context.Context, id string) (*host.Conversation, error) {
	return s.load(ctx, id, false)
}

func (s *DB) load(ctx context.Context, id string, use bool) (*host.Conversation, error) {
	c := &host.Conversation{ID: id}
	var created, updated int64
	var nmsg, nsrc int
	q := `SELECT created_ms, updated_ms, messages, sources FROM conversations WHERE id = $1 AND updated_ms >= $2`
	args := []any{id, s.cutoff()}
	if use {
		q = `UPDATE conversations SET updated_ms = $3 WHERE id = $1 AND updated_ms >= $2
			RETURNING created_ms, updated_ms, messages, sources`
		args = append(args, millis(s.now()))
	}
	switch err := s.db.QueryRowContext(ctx, q, args...).Scan(&created, &updated, &nmsg, &nsrc); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, host.UnknownConversation(id, s.ttl)
	case err != nil:
		return nil, fmt.Errorf("store: loading conversation %q: %w", id, err)
	}
	c.Created, c.Updated = fromMillis(created), fromMillis(updated)
	// The counts bound what is read, so that an Append running meanwhile is either wholly seen or not at all.
	var err error
	if c.Messages, err = s.messages(ctx, id, nmsg); err == nil {
		c.Sources, err = s.sources(ctx, id, nsrc)
	}
	if err != nil {
		return nil, fmt.Errorf("store: loading conversation %q: %w", id, err)
	}
	return c, nil
}

func (s *DB) messages(ctx context.Context, id string, n int) ([]llm.Message, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT message FROM conversation_messages
		WHERE conversation_id = $1 AND seq < $2 ORDER BY seq`, id, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]llm.Message, 0, n)
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		var m llm.Message
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return nil, fmt.Errorf("message %d: %w", len(out), err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("%d of its %d messages are missing", n-len(out), n)
	}
	return out, nil
}

func (s *DB) sources(ctx context.Context, id string, n int) ([]host.Reference, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT title, uri, content FROM conversation_sources
		WHERE conversation_id = $1 AND number <= $2 ORDER BY number`, id, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]host.Reference, 0, n)
	for rows.Next() {
		var r host.Reference
		if err := rows.Scan(&r.Title, &r.URI, &r.Content); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("%d of its %d sources are missing", n-len(out), n)
	}
	return out, nil
}

// Append implements host.ConversationStore. The counts are compared and swapped in the metadata row, so that of
// two runs appending from the same version, on any replicas, one wins and the other gets
// host.ErrConversationConflict.
func (s *DB) Append(ctx context.Context, id string, version int, messages []llm.Message, sources []host.Reference) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var nsrc int
		err := tx.QueryRowContext(ctx, `UPDATE conversations SET messages = messages + $1, sources = sources + $2, updated_ms = $3
			WHERE id = $4 AND messages = $5 AND updated_ms >= $6 RETURNING sources`,
			len(messages), len(sources), millis(s.now()), id, version, s.cutoff()).Scan(&nsrc)
		if errors.Is(err, sql.ErrNoRows) {
			return s.whyNotAppended(ctx, tx, id, version)
		}
		if err != nil {
			return err
		}
		if err := insertRows(ctx, tx, `conversation_messages (conversation_id, seq, message)`, len(messages), func(i int) ([]any, error) {
			b, err := json.Marshal(messages[i])
			return []any{id, version + i, string(b)}, err
		}); err != nil {
			return err
		}
		first := nsrc - len(sources) + 1
		return insertRows(ctx, tx, `conversation_sources (conversation_id, number, title, uri, content)`, len(sources), func(i int) ([]any, error) {
			r := sources[i]
			return []any{id, first + i, r.Title, r.URI, r.Content}, nil
		})
	})
	if err != nil && !errors.Is(err, host.ErrConversationConflict) && !errors.Is(err, host.ErrUnknownConversation) {
		return fmt.Errorf("store: appending to conversation %q: %w", id, err)
	}
	return err
}

// whyNotAppended returns the error for an Append whose update matched no row.
func (s *DB) whyNotAppended(ctx context.Context, tx *sql.Tx, id string, version int) error {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT messages FROM conversations WHERE id = $1 AND updated_ms >= $2`, id, s.cutoff()).Scan(&n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return host.UnknownConversation(id, s.ttl)
	case err != nil:
		return err
	}
	return fmt.Errorf("%w (%q has %d messages, the run started from %d)", host.ErrConversationConflict, id, n, version)
}

// insertBatch is how many rows one INSERT carries: well under SQLite's 32766 parameters.
const insertBatch = 200

// insertRows inserts n rows into table (with its column list), row(i) giving the values of row i, in statements
// of up to insertBatch rows.
func insertRows(ctx context.Context, tx *sql.Tx, table string, n int, row func(i int) ([]any, error)) error {
	for start := 0; start < n; start += insertBatch {
		end := min(start+insertBatch, n)
		var q strings.Builder
		q.WriteString("INSERT INTO " + table + " VALUES ")
		var args []any
		for i := start; i < end; i++ {
			vals, err := row(i)
			if err != nil {
				return err
			}
			if i > start {
				q.WriteByte(',')
			}
			q.WriteByte('(')
			for j, v := range vals {
				if j > 0 {
					q.WriteByte(',')
				}
				args = append(args, v)
				fmt.Fprintf(&q, "$%d", len(args))
			}
			q.WriteByte(')')
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// ConversationSummary is a conversation as `agenthost state conversations` lists it.
type ConversationSummary struct {
	ID       string
	Created  time.Time
	Updated  time.Time
	Messages int
	Sources  int
	// Prompt is the first user message, cut to a line.
	Prompt string
}

// Conversations lists the conversations kept, most recently used first, at most limit (0: all).
func (s *DB) Conversations(ctx context.Context, limit int) ([]ConversationSummary, error) {
	if limit <= 0 {
		limit = s.max
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, c.created_ms, c.updated_ms, c.messages, c.sources, COALESCE(m.message, '')
		FROM conversations c LEFT JOIN conversation_messages m ON m.conversation_id = c.id AND m.seq = 0
		WHERE c.updated_ms >= $1 ORDER BY c.updated_ms DESC, c.id LIMIT $2`, s.cutoff(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: listing conversations: %w", err)
	}
	defer rows.Close()
	var out []ConversationSummary
	for rows.Next() {
		var c ConversationSummary
		var created, updated int64
		var first string
		if err := rows.Scan(&c.ID, &created, &updated, &c.Messages, &c.Sources, &first); err != nil {
			return nil, fmt.Errorf("store: listing conversations: %w", err)
		}
		c.Created, c.Updated = fromMillis(created), fromMillis(updated)
		var m llm.Message
		if json.Unmarshal([]byte(first), &m) == nil {
			c.Prompt, _, _ = strings.Cut(strings.TrimSpace(m.Content), "\n")
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: listing conversations: %w", err)
	}
	return out, nil
}

// DeleteConversation deletes the conversation id, and fails with host.ErrUnknownConversation when there is none.
func (s *DB) DeleteConversation(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = $1`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return host.UnknownConversation(id, s.ttl)
		} else if err != nil {
			return err
		}
		return deleteConversations(ctx, tx, `id = $1`, id)
	})
	if err != nil && !errors.Is(err, host.ErrUnknownConversation) {
		return fmt.Errorf("store: deleting conversation %q: %w", id, err)
	}
	return err
}
