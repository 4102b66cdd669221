package store

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// embeddingRows returns the model/hash of every row of tool_embeddings, sorted.
func embeddingRows(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.SQL().QueryContext(t.Context(), `SELECT model, hash FROM tool_embeddings ORDER BY model, hash`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var model, hash string
		if err := rows.Scan(&model, &hash); err != nil {
			t.Fatal(err)
		}
		got = append(got, model+"/"+hash)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// Vectors come back bit for bit, by model and hash, from the database reopened too; missing hashes are absent.
func TestEmbeddingCache(t *testing.T) {
	backendsWith(t, Options{}, func(t *testing.T, db *DB, opts Options) {
		ctx := t.Context()
		var cache host.EmbeddingCache = db
		a := []float32{1, -1.5, 3.25e-7, math.MaxFloat32, -0, float32(math.Inf(-1))}
		b := []float32{0.5}
		if err := cache.PutEmbeddings(ctx, "m1", map[string][]float32{"ha": a, "hb": b}); err != nil {
			t.Fatal(err)
		}
		if err := cache.PutEmbeddings(ctx, "m2", map[string][]float32{"ha": {9, 9}}); err != nil {
			t.Fatal(err)
		}
		if err := cache.PutEmbeddings(ctx, "m1", nil); err != nil {
			t.Fatalf("PutEmbeddings of nothing: %v", err)
		}
		got, err := cache.Embeddings(ctx, "m1", []string{"ha", "hb", "hc"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string][]float32{"ha": a, "hb": b}; !reflect.DeepEqual(got, want) {
			t.Errorf("Embeddings(m1) = %v, want %v", got, want)
		}
		if got, err := cache.Embeddings(ctx, "m2", []string{"ha", "hb"}); err != nil || !reflect.DeepEqual(got, map[string][]float32{"ha": {9, 9}}) {
			t.Errorf("Embeddings(m2) = %v, %v; want only m2's vector", got, err)
		}
		if got, err := cache.Embeddings(ctx, "m3", nil); err != nil || len(got) != 0 {
			t.Errorf("Embeddings of no hashes = %v, %v", got, err)
		}

		// Stored compactly: 4 bytes a dimension, little-endian.
		var blob []byte
		if err := db.SQL().QueryRowContext(ctx, `SELECT vector FROM tool_embeddings WHERE model = 'm1' AND hash = 'hb'`).Scan(&blob); err != nil {
			t.Fatal(err)
		}
		if want := []byte{0, 0, 0, 0x3f}; !reflect.DeepEqual(blob, want) {
			t.Errorf("0.5 stored as % x, want % x", blob, want)
		}

		// A vector put again replaces the old one.
		if err := cache.PutEmbeddings(ctx, "m1", map[string][]float32{"hb": {2, 3}}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		again, err := Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		got, err = again.Embeddings(ctx, "m1", []string{"ha", "hb"})
		if want := map[string][]float32{"ha": a, "hb": {2, 3}}; err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("after reopening: Embeddings(m1) = %v, %v; want %v", got, err, want)
		}
	})
}

// More hashes than one query takes are read in several.
func TestEmbeddingCacheMany(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		n := 2*embeddingsPerQuery + 7
		vectors := make(map[string][]float32, n)
		var hashes []string
		for i := range n {
			h := fmt.Sprintf("h%04d", i)
			vectors[h] = []float32{float32(i)}
			hashes = append(hashes, h)
		}
		if err := db.PutEmbeddings(ctx, "m", vectors); err != nil {
			t.Fatal(err)
		}
		got, err := db.Embeddings(ctx, "m", append(hashes, "missing"))
		if err != nil || !reflect.DeepEqual(got, vectors) {
			t.Errorf("Embeddings of %d hashes: %d found, %v", n+1, len(got), err)
		}
	})
}

// A vector unused for EmbeddingTTL is dropped by the sweep; one read meanwhile is kept, a read marking it used.
func TestEmbeddingExpiry(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	backends(t, Options{Now: clk.Now}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		clk.now = time.Unix(1_000_000, 0)
		if err := db.PutEmbeddings(ctx, "m", map[string][]float32{"used": {1}, "gone": {2}}); err != nil {
			t.Fatal(err)
		}
		clk.Add(20 * 24 * time.Hour)
		if got, err := db.Embeddings(ctx, "m", []string{"used"}); err != nil || len(got) != 1 {
			t.Fatalf("Embeddings = %v, %v", got, err)
		}
		clk.Add(EmbeddingTTL - 10*24*time.Hour) // gone: unused 40 days; used: 20
		say(t, db, "c", 0)                      // a write sweeps, the last sweep being long ago
		if got, want := embeddingRows(t, db), []string{"m/used"}; !reflect.DeepEqual(got, want) {
			t.Errorf("rows after the sweep: %q, want %q", got, want)
		}
		clk.Add(EmbeddingTTL)
		if err := db.PutEmbeddings(ctx, "m", map[string][]float32{"new": {3}}); err != nil {
			t.Fatal(err)
		}
		if got, want := embeddingRows(t, db), []string{"m/new"}; !reflect.DeepEqual(got, want) {
			t.Errorf("rows after a write of vectors a TTL later: %q, want %q", got, want)
		}
	})
}

// Reads within embeddingTouch of the last use do not write.
func TestEmbeddingTouchOncePerDay(t *testing.T) {
	clk := &clock{}
	backends(t, Options{Now: clk.Now}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		clk.now = time.Unix(1_000_000, 0)
		if err := db.PutEmbeddings(ctx, "m", map[string][]float32{"h": {1}}); err != nil {
			t.Fatal(err)
		}
		used := func() int64 {
			var ms int64
			if err := db.SQL().QueryRowContext(ctx, `SELECT used_ms FROM tool_embeddings`).Scan(&ms); err != nil {
				t.Fatal(err)
			}
			return ms
		}
		put := used()
		clk.Add(time.Hour)
		if _, err := db.Embeddings(ctx, "m", []string{"h"}); err != nil {
			t.Fatal(err)
		}
		if used() != put {
			t.Errorf("a read an hour after the write moved the last use")
		}
		clk.Add(embeddingTouch)
		if _, err := db.Embeddings(ctx, "m", []string{"h"}); err != nil {
			t.Fatal(err)
		}
		if got, want := used(), millis(clk.Now()); got != want {
			t.Errorf("used_ms = %d after a read a day later, want %d", got, want)
		}
	})
}
