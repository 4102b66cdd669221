package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host"
)

// Signal leaves a request for the process that runs target.
func (s *DB) Signal(ctx context.Context, target, kind string, body []byte) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO signals (id, target_id, kind, body, created_ms) VALUES ($1, $2, $3, $4, $5)`,
		host.NewConversationID(), target, kind, string(body), millis(s.now()))
	if err != nil {
		return fmt.Errorf("store: signalling %q: %w", target, err)
	}
	return nil
}

// TakeSignals returns the requests left for targets, oldest first, and deletes them in the same statement: each is
// taken once, and one left meanwhile waits for the next call.
func (s *DB) TakeSignals(ctx context.Context, targets []string) ([]host.RunSignal, error) {
	if len(targets) == 0 {
		return nil, nil
	}
	marks, args := make([]string, len(targets)), make([]any, len(targets))
	for i, id := range targets {
		marks[i], args[i] = fmt.Sprintf("$%d", i+1), id
	}
	rows, err := s.db.QueryContext(ctx, `DELETE FROM signals WHERE target_id IN (`+strings.Join(marks, ",")+`)
		RETURNING id, target_id, kind, body, created_ms`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: taking signals: %w", err)
	}
	defer rows.Close()
	var out []host.RunSignal
	for rows.Next() {
		var sig host.RunSignal
		var body string
		var at int64
		if err := rows.Scan(&sig.ID, &sig.Target, &sig.Kind, &body, &at); err != nil {
			return nil, fmt.Errorf("store: taking signals: %w", err)
		}
		sig.Body, sig.At = []byte(body), fromMillis(at)
		out = append(out, sig)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: taking signals: %w", err)
	}
	slices.SortFunc(out, func(a, b host.RunSignal) int { return cmp.Or(a.At.Compare(b.At), strings.Compare(a.ID, b.ID)) })
	return out, nil
}
