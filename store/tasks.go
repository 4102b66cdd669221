package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrTaskNotFound is returned for a task the database does not have.
var ErrTaskNotFound = errors.New("task not found")

// DefaultMaxTasks bounds the tasks kept when Options.MaxTasks is 0.
const DefaultMaxTasks = 1000

// Task is a served A2A task as the database keeps it: the fields it filters and orders on, and the task itself as
// its callers see it (JSON), which the store does not read.
type Task struct {
	ID        string
	ContextID string
	State     string
	// Terminal marks a task that will not change again: the bound drops the oldest of these first.
	Terminal bool
	Updated  time.Time
	// Version orders the saves of one task: a save older than the kept one is dropped, so that saves racing from
	// two goroutines cannot leave the older state.
	Version int64
	Body    []byte
	// Owner names the process that runs the task (its executor); Durable says its run survives that process.
	Owner   string
	Durable bool
	// Subject is who the task is for: the caller's identity, "" when callers are not told apart.
	Subject string
}

// PutTask inserts or replaces a task, unless the database has a newer version of it. It makes room by the bound:
// the least recently updated terminal tasks go first; unfinished ones are never dropped.
func (s *DB) PutTask(ctx context.Context, t *Task) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO a2a_tasks (id, context_id, state, terminal, updated_ms, version, task, owner, durable, subject)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id, state = excluded.state,
				terminal = excluded.terminal, updated_ms = excluded.updated_ms, version = excluded.version, task = excluded.task,
				owner = excluded.owner, durable = excluded.durable
			WHERE a2a_tasks.version < excluded.version`,
			t.ID, t.ContextID, t.State, boolInt(t.Terminal), millis(t.Updated), t.Version, string(t.Body), t.Owner, boolInt(t.Durable), t.Subject)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 || t.Version > 1 {
			return err // only a new task can take the table over its bound
		}
		var count int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM a2a_tasks`).Scan(&count); err != nil || count <= s.maxTasks {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM a2a_tasks WHERE id IN (SELECT id FROM a2a_tasks WHERE terminal = 1
			ORDER BY updated_ms, id LIMIT $1)`, count-s.maxTasks)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: saving task %q: %w", t.ID, err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

const taskColumns = `id, context_id, state, terminal, updated_ms, version, task, owner, durable, subject`

func scanTask(row interface{ Scan(...any) error }) (*Task, error) {
	var t Task
	var terminal, durable int
	var updated int64
	var body string
	if err := row.Scan(&t.ID, &t.ContextID, &t.State, &terminal, &updated, &t.Version, &body, &t.Owner, &durable, &t.Subject); err != nil {
		return nil, err
	}
	t.Terminal, t.Updated, t.Body, t.Durable = terminal != 0, fromMillis(updated), []byte(body), durable != 0
	return &t, nil
}

// Task returns the task id, or ErrTaskNotFound.
func (s *DB) Task(ctx context.Context, id string) (*Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM a2a_tasks WHERE id = $1`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
	case err != nil:
		return nil, fmt.Errorf("store: loading task %q: %w", id, err)
	}
	return t, nil
}

// TaskQuery selects tasks for Tasks. Zero fields do not filter, but Subject: the tasks listed are always those of
// one subject ("" for those of callers that are not told apart).
type TaskQuery struct {
	Subject      string
	ContextID    string
	State        string
	UpdatedAfter time.Time // tasks updated at or after this time
	// Before continues a listing: only tasks that come after (Updated, ID) in the listing's order, newest first.
	Before *TaskCursor
	// Limit bounds the tasks returned; 0 means all.
	Limit int
}

// TaskCursor is a place in a listing of tasks.
type TaskCursor struct {
	Updated time.Time
	ID      string
}

// Tasks lists the tasks that match q, most recently updated first (ties by id, descending), and how many match
// in all, the cursor aside.
func (s *DB) Tasks(ctx context.Context, q TaskQuery) ([]*Task, int, error) {
	where := `($1 = '' OR context_id = $1) AND ($2 = '' OR state = $2) AND updated_ms >= $3 AND subject = $4`
	args := []any{q.ContextID, q.State, millis(q.UpdatedAfter), q.Subject}
	if q.UpdatedAfter.IsZero() {
		args[2] = int64(0)
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM a2a_tasks WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: listing tasks: %w", err)
	}
	page := where
	if q.Before != nil {
		page += ` AND (updated_ms < $5 OR (updated_ms = $5 AND id < $6))`
		args = append(args, millis(q.Before.Updated), q.Before.ID)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = total
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, `SELECT `+taskColumns+` FROM a2a_tasks WHERE `+page+
		fmt.Sprintf(` ORDER BY updated_ms DESC, id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: listing tasks: %w", err)
	}
	defer rows.Close()
	var out []*Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("store: listing tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: listing tasks: %w", err)
	}
	return out, total, nil
}

// DeleteTask deletes the task id, or fails with ErrTaskNotFound.
func (s *DB) DeleteTask(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM a2a_tasks WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: deleting task %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(err, fmt.Errorf("%w: %q", ErrTaskNotFound, id))
	}
	return nil
}

// Orphans returns the unfinished tasks of owner whose runs do not survive it: after owner restarted, nothing runs
// them any more.
func (s *DB) Orphans(ctx context.Context, owner string) ([]*Task, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+taskColumns+` FROM a2a_tasks WHERE owner = $1 AND terminal = 0 AND durable = 0`, owner)
	if err != nil {
		return nil, fmt.Errorf("store: listing orphaned tasks: %w", err)
	}
	defer rows.Close()
	var out []*Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("store: listing orphaned tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
