package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Call is an MCP call paused between two rounds of its caller (protocol 2026-07-28 and later), as the processes
// sharing the database see it: the call runs in its owner, and another process that receives the caller's next
// request forwards the answers to it with a Signal and reads the round's outcome here.
type Call struct {
	// ID is the call's requestState.
	ID string
	// Owner names the process that runs the call.
	Owner string
	// Tool and Args are those of the call: a retry must carry the same.
	Tool string
	Args []byte
	// Round counts the rounds that ended with questions.
	Round int
	// State is what the call is doing, in the caller's terms: "waiting" for the answers to Round's questions,
	// "running" on answers, or "done".
	State string
	// Outcome is the last round's result, as JSON: its questions, or the call's result once done.
	Outcome []byte
	Updated time.Time
	// Expires is when the row may be deleted: no caller waits on the call any more.
	Expires time.Time
}

// PutCall inserts or replaces a paused call, and deletes the expired ones.
func (s *DB) PutCall(ctx context.Context, c *Call) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if c.Round <= 1 && c.State == "waiting" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_calls WHERE expires_ms < $1`, millis(s.now())); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_calls (id, owner, tool, args, round, state, outcome, updated_ms, expires_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, tool = excluded.tool, args = excluded.args,
				round = excluded.round, state = excluded.state, outcome = excluded.outcome,
				updated_ms = excluded.updated_ms, expires_ms = excluded.expires_ms`,
			c.ID, c.Owner, c.Tool, string(c.Args), c.Round, c.State, string(c.Outcome), millis(c.Updated), millis(c.Expires))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: saving paused call: %w", err)
	}
	return nil
}

// Call returns the paused call id, or nil and no error when there is none or it expired.
func (s *DB) Call(ctx context.Context, id string) (*Call, error) {
	c := &Call{ID: id}
	var args, outcome string
	var updated, expires int64
	err := s.db.QueryRowContext(ctx, `SELECT owner, tool, args, round, state, outcome, updated_ms, expires_ms FROM mcp_calls
		WHERE id = $1 AND expires_ms >= $2`, id, millis(s.now())).Scan(&c.Owner, &c.Tool, &args, &c.Round, &c.State, &outcome, &updated, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: reading paused call: %w", err)
	}
	c.Args, c.Outcome, c.Updated, c.Expires = []byte(args), []byte(outcome), fromMillis(updated), fromMillis(expires)
	return c, nil
}

// DeleteCall deletes the paused call id and the signals left for it. Deleting one that is gone is not an error.
func (s *DB) DeleteCall(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_calls WHERE id = $1`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM signals WHERE target_id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: deleting paused call: %w", err)
	}
	return nil
}

// Calls returns the paused calls that have not expired, most recently updated first.
func (s *DB) Calls(ctx context.Context) ([]*Call, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, owner, tool, round, state, updated_ms, expires_ms FROM mcp_calls
		WHERE expires_ms >= $1 ORDER BY updated_ms DESC, id`, millis(s.now()))
	if err != nil {
		return nil, fmt.Errorf("store: listing paused calls: %w", err)
	}
	defer rows.Close()
	var out []*Call
	for rows.Next() {
		c := &Call{}
		var updated, expires int64
		if err := rows.Scan(&c.ID, &c.Owner, &c.Tool, &c.Round, &c.State, &updated, &expires); err != nil {
			return nil, fmt.Errorf("store: listing paused calls: %w", err)
		}
		c.Updated, c.Expires = fromMillis(updated), fromMillis(expires)
		out = append(out, c)
	}
	return out, rows.Err()
}
