package console

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"testing"
)

// The whole page, every file the console serves, weighs at most 300 KB compressed as the console sends it.
func TestPageWeight(t *testing.T) {
	const budget = 300 << 10
	total, files := 0, 0
	err := fs.WalkDir(web, "web", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web, path)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		n := min(buf.Len(), len(b)) // a file that does not shrink is sent as it is
		t.Logf("%-24s %7d bytes, %6d compressed", path, len(b), n)
		total += n
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files, %d bytes compressed (budget %d)", files, total, budget)
	if files < 5 {
		t.Fatalf("the embedded page has %d files: the embed patterns miss some", files)
	}
	if total > budget {
		t.Errorf("the page weighs %d bytes compressed, over the budget of %d", total, budget)
	}
}
