package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// An OAuth grant is kept as the JSON its owner (mcpauth) writes: it holds tokens, so the store never logs or
// prints it.

// PutGrant inserts or replaces the grant of server.
func (s *DB) PutGrant(ctx context.Context, server string, grant []byte) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO oauth_grants (server, grant_json, updated_ms) VALUES ($1, $2, $3)
		ON CONFLICT (server) DO UPDATE SET grant_json = excluded.grant_json, updated_ms = excluded.updated_ms`,
		server, string(grant), millis(s.now()))
	if err != nil {
		return fmt.Errorf("store: saving the OAuth grant of %q: %w", server, err)
	}
	return nil
}

// Grant returns the grant of server, or nil and no error when there is none.
func (s *DB) Grant(ctx context.Context, server string) ([]byte, error) {
	var grant string
	err := s.db.QueryRowContext(ctx, `SELECT grant_json FROM oauth_grants WHERE server = $1`, server).Scan(&grant)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: reading the OAuth grant of %q: %w", server, err)
	}
	return []byte(grant), nil
}

// DeleteGrant deletes the grant of server; deleting one that is gone is not an error.
func (s *DB) DeleteGrant(ctx context.Context, server string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM oauth_grants WHERE server = $1`, server); err != nil {
		return fmt.Errorf("store: deleting the OAuth grant of %q: %w", server, err)
	}
	return nil
}

// Grants returns every grant, by server name.
func (s *DB) Grants(ctx context.Context) ([][]byte, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT grant_json FROM oauth_grants ORDER BY server`)
	if err != nil {
		return nil, fmt.Errorf("store: listing OAuth grants: %w", err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, fmt.Errorf("store: listing OAuth grants: %w", err)
		}
		out = append(out, []byte(g))
	}
	return out, rows.Err()
}
