//go:build unix

package docsearch

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The index holds the documents' text: it, its -wal and -shm, and its directory are private whatever the umask,
// and an index left readable by others is tightened once, with a warning. The umask is process-wide: this test is
// not parallel, and none of this package is.
func TestIndexFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	docs := t.TempDir()
	write(t, docs, "a.md", "# Salaries\n\nconfidential figures")
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "docs.db")
	ix := open(t, Options{Path: path, Roots: []string{docs}})
	refresh(t, ix)
	want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600}
	for p, m := range want {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != m {
			t.Errorf("%s: %v, %v, want %#o", p, fi.Mode(), err, m)
		}
	}
	ix.Close()

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	for range 2 {
		ix := open(t, Options{Path: path, Roots: []string{docs}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ix.Close()
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("reopened: %v, %v", fi.Mode(), err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "path="+path) ||
		!strings.Contains(lines[0], "mode=0644") {
		t.Errorf("want one warning naming the index and its old mode:\n%s", logs.String())
	}
}

// A file swapped, between the scan and the read, for a symbolic link (out of the root or inside it), a named pipe or
// a file over the size cap is skipped: the read never follows the link, never blocks, never reads past the cap.
func TestIndexReadsWhatWasScanned(t *testing.T) {
	outside := write(t, t.TempDir(), "secret.md", "# Secret\n\nzanzibar payroll")
	dir := t.TempDir()
	write(t, dir, "inside.md", "# Inside\n\nquokka notes")
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	swaps := map[string]func(p string) error{
		"out.md":  func(p string) error { return os.Symlink(outside, p) },
		"in.md":   func(p string) error { return os.Symlink(filepath.Join(dir, "inside.md"), p) },
		"fifo.md": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"grown.md": func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("zanzibar ", 200)), 0o644)
		},
	}
	for name := range swaps {
		write(t, dir, name, "# Plain\n\nplain words")
	}
	setHook(t, func(p string) {
		swap := swaps[filepath.Base(p)]
		if swap == nil {
			return
		}
		if err := os.Remove(p); err != nil {
			t.Error(err)
		}
		if err := swap(p); err != nil {
			t.Error(err)
		}
	})
	ix := open(t, Options{Roots: []string{dir}, MaxFileBytes: 1000})
	st := refresh(t, ix)
	if st.Scanned != 5 || st.Indexed != 1 || st.Skipped != 4 {
		t.Errorf("stats %+v, want 5 scanned (not the pipe), 1 indexed, 4 skipped", st)
	}
	if hits := search(t, ix, "zanzibar"); len(hits) != 0 {
		t.Errorf("a file outside the root or over the cap is indexed: %v", paths(hits))
	}
	if got := paths(search(t, ix, "quokka")); len(got) != 1 || got[0] != "inside.md" {
		t.Errorf("quokka: %v, want inside.md only (not through in.md)", got)
	}
	if got := paths(search(t, ix, "plain")); len(got) != 0 {
		t.Errorf("plain: %v", got)
	}
}
