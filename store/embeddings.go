package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
)

// Tool search's vectors (host.EmbeddingCache) are rows of tool_embeddings keyed by the embedding model and the hash of
// the text embedded, so that a restart, or another replica, finds the vectors of the tools it lists and embeds only
// the new ones. A vector is its float32s, little-endian, 4 bytes each: a tenth of their JSON.
//
// The table is bounded by time rather than count: a row records when it was last used, and the conversations' sweep
// (see sweep) drops the rows unused for EmbeddingTTL, those of tools gone or changed, or of a model no longer
// configured. The tools a process lists are used at each start, so only what is gone ages out.

// EmbeddingTTL is how long a tool's vector is kept unused.
const EmbeddingTTL = 30 * 24 * time.Hour

// embeddingTouch is how stale a row's last use may get before a read writes it again: reads stay reads, except
// about once a day for each row.
const embeddingTouch = 24 * time.Hour

// embeddingsPerQuery bounds the hashes of one query, well below the parameters SQLite and Postgres take.
const embeddingsPerQuery = 500

var _ host.EmbeddingCache = (*DB)(nil)

// Embeddings implements host.EmbeddingCache. It marks the rows it finds used (at most once in embeddingTouch), so
// that the sweep keeps them.
func (s *DB) Embeddings(ctx context.Context, model string, hashes []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(hashes))
	now := s.now()
	var stale []string
	for start := 0; start < len(hashes); start += embeddingsPerQuery {
		chunk := hashes[start:min(start+embeddingsPerQuery, len(hashes))]
		args := []any{model}
		for _, h := range chunk {
			args = append(args, h)
		}
		rows, err := s.db.QueryContext(ctx, `SELECT hash, vector, used_ms FROM tool_embeddings WHERE model = $1 AND hash IN (`+
			placeholders(2, len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("store: reading tool embeddings of %q: %w", model, err)
		}
		err = func() error {
			defer rows.Close()
			for rows.Next() {
				var hash string
				var blob []byte
				var used int64
				if err := rows.Scan(&hash, &blob, &used); err != nil {
					return err
				}
				vec, ok := decodeVector(blob)
				if !ok {
					continue // not a vector this agenthost wrote: embedded again, and overwritten
				}
				out[hash] = vec
				if used < millis(now.Add(-embeddingTouch)) {
					stale = append(stale, hash)
				}
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("store: reading tool embeddings of %q: %w", model, err)
		}
	}
	s.touchEmbeddings(ctx, model, stale, now)
	return out, nil
}

// touchEmbeddings records that the rows of hashes were used at now. A failure is logged: the vectors were read, and
// at worst a row is swept and embedded again.
func (s *DB) touchEmbeddings(ctx context.Context, model string, hashes []string, now time.Time) {
	for start := 0; start < len(hashes); start += embeddingsPerQuery {
		chunk := hashes[start:min(start+embeddingsPerQuery, len(hashes))]
		args := []any{millis(now), model}
		for _, h := range chunk {
			args = append(args, h)
		}
		_, err := s.db.ExecContext(ctx, `UPDATE tool_embeddings SET used_ms = $1 WHERE model = $2 AND hash IN (`+
			placeholders(3, len(chunk))+`)`, args...)
		if err != nil {
			s.logger.Warn("store: marking tool embeddings used failed", "db", s.where, "model", model, "err", err)
			return
		}
	}
}

// qPutEmbedding writes one vector, replacing the one of the same model and hash.
const qPutEmbedding = `INSERT INTO tool_embeddings (model, hash, vector, used_ms) VALUES ($1, $2, $3, $4)
	ON CONFLICT (model, hash) DO UPDATE SET vector = excluded.vector, used_ms = excluded.used_ms`

// PutEmbeddings implements host.EmbeddingCache, in one transaction.
func (s *DB) PutEmbeddings(ctx context.Context, model string, vectors map[string][]float32) error {
	if len(vectors) == 0 {
		return nil
	}
	now := millis(s.now())
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, qPutEmbedding)
		if err != nil {
			return err
		}
		defer st.Close()
		for hash, vec := range vectors {
			if _, err := st.ExecContext(ctx, model, hash, encodeVector(vec), now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: writing %d tool embeddings of %q: %w", len(vectors), model, err)
	}
	s.maybeSweep(ctx)
	return nil
}

// sweepEmbeddings deletes the vectors unused for EmbeddingTTL; the index tool_embeddings_used finds them. A failure is
// logged: the next sweep tries again.
func (s *DB) sweepEmbeddings(ctx context.Context) {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM tool_embeddings WHERE used_ms < $1`, millis(s.now().Add(-EmbeddingTTL))); err != nil {
		s.logger.Warn("store: deleting unused tool embeddings failed", "db", s.where, "err", err)
	}
}

// encodeVector writes vec as little-endian float32s.
func encodeVector(vec []float32) []byte {
	b := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector reads what encodeVector wrote; it is false for a blob that cannot be one.
func decodeVector(b []byte) ([]float32, bool) {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil, false
	}
	vec := make([]float32, len(b)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return vec, true
}

// placeholders returns "$from, $from+1, ..." for n parameters.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", from+i)
	}
	return b.String()
}
