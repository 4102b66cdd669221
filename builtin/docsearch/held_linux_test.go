//go:build linux

package docsearch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// locked reports whether this process holds a POSIX lock on the file at path, from /proc/locks.
func locked(t *testing.T, path string) bool {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// 1: POSIX  ADVISORY  READ 1234 fe:00:5678 128 128
		if len(f) > 5 && f[1] == "POSIX" && f[4] == strconv.Itoa(os.Getpid()) && strings.HasSuffix(f[5], ":"+strconv.FormatUint(st.Ino, 10)) {
			return true
		}
	}
	return false
}

// TestIndexLeavesItsOwnFileAlone: an index whose roots hold its own SQLite file, with extensions that match it,
// skips the file instead of opening it: closing the descriptor would drop the process's SQLite locks on it (see
// statedir.HoldSQLite). The locks SQLite took when the index opened are still held after a refresh.
func TestIndexLeavesItsOwnFileAlone(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "notes.txt", "kittens")
	path := filepath.Join(dir, "docs.db")
	ix := open(t, Options{Roots: []string{dir}, Path: path, Extensions: []string{".txt", ".db", ".db-shm", ".db-wal"}})
	refresh(t, ix)
	if !locked(t, path) || !locked(t, path+"-shm") {
		t.Fatalf("the process holds no lock on its index (%v) or its -shm (%v) after the first refresh", locked(t, path), locked(t, path+"-shm"))
	}
	st := refresh(t, ix)
	if st.Indexed != 0 || st.Skipped != 3 {
		t.Errorf("stats %+v; want the index's three files skipped", st)
	}
	if !locked(t, path) || !locked(t, path+"-shm") {
		t.Errorf("a refresh dropped the process's locks on its index (%v) or its -shm (%v)", locked(t, path), locked(t, path+"-shm"))
	}
	if hits := search(t, ix, "kittens"); len(hits) != 1 {
		t.Errorf("kittens: %v", paths(hits))
	}
}
