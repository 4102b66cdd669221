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
//
// A run costs one write transaction: a new conversation under a new id gets its row with its first messages, in
// Append, and the bound is enforced in batches (see sweep), so that no run pays for sorting the table.

// sweepEvery is the time between two sweeps of expired conversations: a process sweeps at most this often, and of
// the processes sharing a database (replicas, or one `agenthost run` after another) one sweeps in each such time.
// Sweeps for the count bound do not wait for it.
const sweepEvery = 5 * time.Minute

// Create implements host.ConversationStore. A new id is only drawn: the conversation's row is written with its
// first messages. A chosen id (an A2A context) is written at once, so that a second Create of it fails.
func (s *DB) Create(ctx context.Context, id string) (string, error) {
	if id == "" {
		return host.NewConversationID(), nil
	}
	now := millis(s.now())
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// A kept id whose conversation expired is free again: its rows go first.
		if _, err := deleteConversations(ctx, tx, `id = $1 AND updated_ms < $2`, id, s.cutoff()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, created_ms, updated_ms) VALUES ($1, $2, $2)
			ON CONFLICT (id) DO NOTHING`, id, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, host.ErrConversationExists)
		}
		return nil
	})
	switch {
	case errors.Is(err, host.ErrConversationExists):
		return "", fmt.Errorf("%w: %q", host.ErrConversationExists, id)
	case err != nil:
		return "", fmt.Errorf("store: creating a conversation: %w", err)
	}
	s.created(ctx)
	return id, nil
}

// created counts a new conversation, and sweeps when the bound may have been passed by a tenth, or when it is time.
func (s *DB) created(ctx context.Context) {
	if s.sinceSweep.Add(1) >= int64(s.slack()) {
		s.sweep(ctx)
		return
	}
	s.maybeSweep(ctx)
}

// slack is how far the bound may be passed before a sweep brings the count back to it.
func (s *DB) slack() int { return max(s.max/10, 1) }

// deleteConversations deletes the conversations matching where (over the conversations table) and their logs, and
// returns how many conversations it deleted.
func deleteConversations(ctx context.Context, tx *sql.Tx, where string, args ...any) (int, error) {
	for _, table := range []string{"conversation_messages", "conversation_sources"} {
		q := `DELETE FROM ` + table + ` WHERE conversation_id IN (SELECT id FROM conversations WHERE ` + where + `)`
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE `+where, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// cutoff is the update time before which a conversation has expired.
func (s *DB) cutoff() int64 { return millis(s.now().Add(-s.ttl)) }

// maybeSweep sweeps when this process last did sweepEvery ago and no other process sharing the database did since.
func (s *DB) maybeSweep(ctx context.Context) {
	s.sweepMu.Lock()
	now := s.now()
	due := now.Sub(s.lastSweep) >= sweepEvery
	if due {
		s.lastSweep = now
	}
	s.sweepMu.Unlock()
	if due && s.takeSweepTurn(ctx, now) {
		s.sweep(ctx)
	}
}

// takeSweepTurn records in the database that this process sweeps at now, unless another did less than sweepEvery
// before. A time recorded ahead of now is from a clock that differs, and does not hold the turn.
func (s *DB) takeSweepTurn(ctx context.Context, now time.Time) bool {
	res, err := s.db.ExecContext(ctx, `INSERT INTO agenthost_sweeps (name, swept_ms) VALUES ('conversations', $1)
		ON CONFLICT (name) DO UPDATE SET swept_ms = excluded.swept_ms
		WHERE agenthost_sweeps.swept_ms <= $2 OR agenthost_sweeps.swept_ms > $1`, millis(now), millis(now.Add(-sweepEvery)))
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		s.logger.Warn("store: taking the turn to delete expired conversations failed", "db", s.where, "err", err)
		return false
	}
	return n > 0
}

// The sweep's conditions over the conversations table, which the index conversations_used answers.
const (
	// whereIdle selects the conversations last used before $1.
	whereIdle = `updated_ms < $1`
	// qPastBound returns the first conversation past the bound $1, the most recently used first: it and all used
	// before it go.
	qPastBound = `SELECT updated_ms, id FROM conversations ORDER BY updated_ms DESC, id DESC LIMIT 1 OFFSET $1`
)

// sweep deletes the expired conversations, then the least recently used beyond the bound. Both are found in the
// index of the last use: a sweep reads the rows it deletes and at most the bound's worth of index entries, never the
// whole table. A failure is logged: expired conversations are invisible anyway, and the next sweep drops the others.
func (s *DB) sweep(ctx context.Context) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	s.lastSweep = s.now()
	s.sinceSweep.Store(0)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := deleteConversations(ctx, tx, whereIdle, s.cutoff()); err != nil {
			return err
		}
		var updated int64
		var id string
		err := tx.QueryRowContext(ctx, qPastBound, s.max).Scan(&updated, &id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = deleteConversations(ctx, tx, `updated_ms < $1 OR (updated_ms = $1 AND id <= $2)`, updated, id)
		return err
	})
	if err != nil {
		s.logger.Warn("store: deleting expired and surplus conversations failed", "db", s.where, "err", err)
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
	var tools string
	q := `SELECT created_ms, updated_ms, messages, sources, tools FROM conversations WHERE id = $1 AND updated_ms >= $2`
	args := []any{id, s.cutoff()}
	if use {
		q = `UPDATE conversations SET updated_ms = $3 WHERE id = $1 AND updated_ms >= $2
			RETURNING created_ms, updated_ms, messages, sources, tools`
		args = append(args, millis(s.now()))
	}
	switch err := s.db.QueryRowContext(ctx, q, args...).Scan(&created, &updated, &nmsg, &nsrc, &tools); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, host.UnknownConversation(id, s.ttl)
	case err != nil:
		return nil, fmt.Errorf("store: loading conversation %q: %w", id, err)
	}
	c.Created, c.Updated = fromMillis(created), fromMillis(updated)
	c.Tools = strings.Fields(tools) // tool names hold no spaces
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

// The statements of Append, prepared when the database opens.
const (
	// qStart writes a conversation's first messages: its row, new or made by Create.
	qStart = `INSERT INTO conversations (id, created_ms, updated_ms, messages, sources) VALUES ($1, $2, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET messages = excluded.messages, sources = excluded.sources, updated_ms = excluded.updated_ms
		WHERE conversations.messages = 0 AND conversations.updated_ms >= $5
		RETURNING sources, created_ms`
	qContinue = `UPDATE conversations SET messages = messages + $1, sources = sources + $2, updated_ms = $3
		WHERE id = $4 AND messages = $5 AND updated_ms >= $6 RETURNING sources`
	qMessage = `INSERT INTO conversation_messages (conversation_id, seq, message) VALUES ($1, $2, $3)`
	qSource  = `INSERT INTO conversation_sources (conversation_id, number, title, uri, content) VALUES ($1, $2, $3, $4, $5)`
	// qTools appends the names of the tools a run loaded, each followed by a newline. Few runs load tools: it is
	// not prepared.
	qTools = `UPDATE conversations SET tools = tools || $1 WHERE id = $2`
)

// prepared are the statements prepared when the database opens.
var prepared = []string{qStart, qContinue, qMessage, qSource}

// Append implements host.ConversationStore. The counts are compared and swapped in the metadata row, so that of
// two runs appending from the same version, on any replicas, one wins and the other gets
// host.ErrConversationConflict. The first Append of a conversation Create only drew an id for writes its row.
func (s *DB) Append(ctx context.Context, id string, version int, messages []llm.Message, sources []host.Reference, tools []string) error {
	now := millis(s.now())
	inserted := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var nsrc int
		var err error
		if version == 0 {
			var created int64
			st, perr := s.stmt(ctx, tx, qStart)
			if perr != nil {
				return perr
			}
			err = st.QueryRowContext(ctx, id, now, len(messages), len(sources), s.cutoff()).Scan(&nsrc, &created)
			inserted = err == nil && created == now
		} else {
			st, perr := s.stmt(ctx, tx, qContinue)
			if perr != nil {
				return perr
			}
			err = st.QueryRowContext(ctx, len(messages), len(sources), now, id, version, s.cutoff()).Scan(&nsrc)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return s.whyNotAppended(ctx, tx, id, version)
		}
		if err != nil {
			return err
		}
		if err := s.insertRows(ctx, tx, qMessage, len(messages), func(i int) ([]any, error) {
			b, err := json.Marshal(messages[i])
			return []any{id, version + i, string(b)}, err
		}); err != nil {
			return err
		}
		first := nsrc - len(sources) + 1
		if err := s.insertRows(ctx, tx, qSource, len(sources), func(i int) ([]any, error) {
			r := sources[i]
			return []any{id, first + i, r.Title, r.URI, r.Content}, nil
		}); err != nil {
			return err
		}
		if len(tools) == 0 {
			return nil
		}
		// The row was won above: no other Append of this conversation can run until this one commits.
		_, err = tx.ExecContext(ctx, qTools, strings.Join(tools, "\n")+"\n", id)
		return err
	})
	if err != nil && !errors.Is(err, host.ErrConversationConflict) && !errors.Is(err, host.ErrUnknownConversation) {
		return fmt.Errorf("store: appending to conversation %q: %w", id, err)
	}
	if err == nil && inserted {
		s.created(ctx)
	} else if err == nil {
		s.maybeSweep(ctx)
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

// insertRows inserts n rows with the one-row INSERT query, row(i) giving the values of row i: a prepared statement
// run n times costs less than parsing a statement of n rows.
func (s *DB) insertRows(ctx context.Context, tx *sql.Tx, query string, n int, row func(i int) ([]any, error)) error {
	if n == 0 {
		return nil
	}
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return err
	}
	for i := range n {
		vals, err := row(i)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, vals...); err != nil {
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
	list, err := s.summaries(ctx, `c.updated_ms >= $1 ORDER BY c.updated_ms DESC, c.id LIMIT $2`, s.cutoff(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: listing conversations: %w", err)
	}
	return list, nil
}

// ConversationTTL returns how long an unused conversation is kept (Options.IdleTTL).
func (s *DB) ConversationTTL() time.Duration { return s.ttl }

// IdleConversations lists the conversations unused for longer than idle, the expired ones not swept yet included,
// least recently used first: those PruneConversations(ctx, idle) would delete now.
func (s *DB) IdleConversations(ctx context.Context, idle time.Duration) ([]ConversationSummary, error) {
	if idle <= 0 {
		return nil, fmt.Errorf("store: listing idle conversations: the idle time must be positive (got %s)", idle)
	}
	list, err := s.summaries(ctx, `c.updated_ms < $1 ORDER BY c.updated_ms, c.id`, millis(s.now().Add(-idle)))
	if err != nil {
		return nil, fmt.Errorf("store: listing idle conversations: %w", err)
	}
	return list, nil
}

// PruneConversations deletes the conversations unused for longer than idle, the expired ones not swept yet included,
// and returns how many it deleted.
func (s *DB) PruneConversations(ctx context.Context, idle time.Duration) (int, error) {
	if idle <= 0 {
		return 0, fmt.Errorf("store: pruning conversations: the idle time must be positive (got %s)", idle)
	}
	var n int
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = deleteConversations(ctx, tx, whereIdle, millis(s.now().Add(-idle)))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: pruning conversations: %w", err)
	}
	return n, nil
}

// summaries returns the conversations the query's tail selects (WHERE, ORDER BY, LIMIT over the conversations c).
func (s *DB) summaries(ctx context.Context, tail string, args ...any) ([]ConversationSummary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, c.created_ms, c.updated_ms, c.messages, c.sources, COALESCE(m.message, '')
		FROM conversations c LEFT JOIN conversation_messages m ON m.conversation_id = c.id AND m.seq = 0
		WHERE `+tail, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ConversationSummary
	for rows.Next() {
		var c ConversationSummary
		var created, updated int64
		var first string
		if err := rows.Scan(&c.ID, &created, &updated, &c.Messages, &c.Sources, &first); err != nil {
			return nil, err
		}
		c.Created, c.Updated = fromMillis(created), fromMillis(updated)
		var m llm.Message
		if json.Unmarshal([]byte(first), &m) == nil {
			c.Prompt, _, _ = strings.Cut(strings.TrimSpace(m.Content), "\n")
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
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
		_, err := deleteConversations(ctx, tx, `id = $1`, id)
		return err
	})
	if err != nil && !errors.Is(err, host.ErrUnknownConversation) {
		return fmt.Errorf("store: deleting conversation %q: %w", id, err)
	}
	return err
}
