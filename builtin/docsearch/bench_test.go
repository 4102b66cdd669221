package docsearch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// corpus writes n markdown files of about 2 KB under dir: a title, headings and paragraphs of words drawn from a
// vocabulary of 4,000 made-up words with a Zipf-like frequency, as in real text. It returns the vocabulary.
func corpus(b *testing.B, dir string, n int) []string {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	syllables := []string{"ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ven", "dor", "al", "ex", "qua", "ri", "so", "tem"}
	vocab := make([]string, 4000)
	for i := range vocab {
		var w strings.Builder
		for range 2 + r.IntN(3) {
			w.WriteString(syllables[r.IntN(len(syllables))])
		}
		vocab[i] = w.String()
	}
	zipf := rand.NewZipf(r, 1.1, 4, uint64(len(vocab)-1))
	for i := range n {
		writeDoc(b, dir, i, r, zipf, vocab, 0)
	}
	return vocab
}

// writeDoc writes document i, version v.
func writeDoc(b *testing.B, dir string, i int, r *rand.Rand, zipf *rand.Zipf, vocab []string, v int) {
	var s strings.Builder
	fmt.Fprintf(&s, "# %s %s %d\n\n", vocab[zipf.Uint64()], vocab[r.IntN(len(vocab))], v)
	for s.Len() < 2000 {
		if r.IntN(6) == 0 {
			fmt.Fprintf(&s, "\n## %s %s\n\n", vocab[zipf.Uint64()], vocab[zipf.Uint64()])
		}
		for range 12 {
			s.WriteString(vocab[zipf.Uint64()])
			s.WriteByte(' ')
		}
		s.WriteString(".\n")
	}
	p := filepath.Join(dir, fmt.Sprintf("%02d", i%100), fmt.Sprintf("doc%05d.md", i))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

const benchDocs = 10_000

// BenchmarkDocSearchFullIndex indexes the corpus from nothing.
func BenchmarkDocSearchFullIndex(b *testing.B) {
	dir := b.TempDir()
	corpus(b, dir, benchDocs)
	var size int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), fmt.Sprintf("full%d.db", i))
		ix, err := Open(&Options{Path: path, Roots: []string{dir}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := ix.Refresh(context.Background(), nil)
		if err != nil || st.Indexed != benchDocs {
			b.Fatalf("%+v %v", st, err)
		}
		b.StopTimer()
		ix.Close()
		size = dbSize(b, path)
		b.StartTimer()
	}
	b.ReportMetric(float64(size)/(1<<20), "index-MiB")
}

// dbSize is the database's size with its write-ahead log.
func dbSize(b *testing.B, path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// BenchmarkDocSearchReindex100 refreshes the index after 100 of its files were edited.
func BenchmarkDocSearchReindex100(b *testing.B) {
	dir := b.TempDir()
	vocab := corpus(b, dir, benchDocs)
	ix, err := Open(&Options{Path: filepath.Join(b.TempDir(), "docs.db"), Roots: []string{dir}})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Refresh(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(r, 1.1, 4, uint64(len(vocab)-1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for k := range 100 {
			writeDoc(b, dir, (i*100+k)*97%benchDocs, r, zipf, vocab, i+1)
		}
		b.StartTimer()
		st, err := ix.Refresh(context.Background(), nil)
		if err != nil || st.Indexed != 100 {
			b.Fatalf("%+v %v", st, err)
		}
	}
}

// BenchmarkDocSearchQuery runs queries of one to three words, common and rare, and reports their latency
// percentiles.
func BenchmarkDocSearchQuery(b *testing.B) {
	dir := b.TempDir()
	vocab := corpus(b, dir, benchDocs)
	ix, err := Open(&Options{Path: filepath.Join(b.TempDir(), "docs.db"), Roots: []string{dir}})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Refresh(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	queries := make([]string, 200)
	for i := range queries {
		words := make([]string, 1+r.IntN(3))
		zipf := rand.NewZipf(r, 1.1, 4, uint64(len(vocab)-1))
		for j := range words {
			// Half the words are common ones, found in thousands of documents.
			if r.IntN(2) == 0 {
				words[j] = vocab[zipf.Uint64()]
			} else {
				words[j] = vocab[r.IntN(len(vocab))]
			}
		}
		queries[i] = strings.Join(words, " ")
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := ix.Search(context.Background(), queries[i%len(queries)], 5); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
