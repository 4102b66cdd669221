package statedir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// SQLite locks a database with POSIX advisory locks, which belong to the process: closing any descriptor of the
// database file, or of its -wal or -shm, drops every lock the process holds on it, whichever descriptor took them.
// Another process that opens the database then believes it is alone, and may delete the WAL under the process that
// writes it (whose later commits are lost to everyone else) or reset its shared-memory index. So code that opens
// files it does not own (the file tools, doc_search's indexing) must leave alone the SQLite files the process has
// open, and PrepareSQLite must not open them again.

// heldSuffixes are the names SQLite gives a database's companion files, after the database's own.
var heldSuffixes = []string{"", "-wal", "-shm", "-journal"}

// held are the SQLite databases the process has open (HoldSQLite), a path each time it was held.
var held struct {
	mu    sync.Mutex
	paths []string // absolute
}

// HoldSQLite records that the process has the SQLite database at path open, until the returned release is called
// (once, when the database is closed). A database held twice is held until both are released.
func HoldSQLite(path string) (release func()) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	held.mu.Lock()
	held.paths = append(held.paths, abs)
	held.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			held.mu.Lock()
			defer held.mu.Unlock()
			if i := slices.Index(held.paths, abs); i >= 0 {
				held.paths = slices.Delete(held.paths, i, i+1)
			}
		})
	}
}

// HeldSQLite reports whether fi (as os.Lstat or a directory walk describes it) is a file of an SQLite database the
// process holds open: the database itself, or its -wal, -shm or -journal. Such a file must not be opened: closing
// the descriptor would drop the process's locks on it.
func HeldSQLite(fi fs.FileInfo) bool {
	if fi == nil || !fi.Mode().IsRegular() {
		return false
	}
	held.mu.Lock()
	paths := slices.Clone(held.paths)
	held.mu.Unlock()
	name := fi.Name()
	for _, p := range paths {
		base := filepath.Base(p)
		suffix, ok := strings.CutPrefix(name, base)
		if !ok || !slices.Contains(heldSuffixes, suffix) {
			continue // a name the database's files never have: no need to look at the file
		}
		if li, err := os.Lstat(p + suffix); err == nil && os.SameFile(fi, li) {
			return true
		}
	}
	return false
}

// heldPath reports whether the database at path is held by the process.
func heldPath(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	return slices.Contains(held.paths, abs)
}

// RetryBusy calls f, again while it fails with SQLite's SQLITE_BUSY at once, for wait at most or until ctx ends,
// and returns its last error. busy_timeout makes SQLite wait for a lock, but not where waiting could deadlock:
// connections that open one new file together each turn it to WAL, and of two that hold a shared lock and want the
// exclusive one, SQLite fails one immediately. The connection is made again on the next try, and by then the file
// is in WAL mode.
func RetryBusy(ctx context.Context, wait time.Duration, f func() error) error {
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		err := f()
		var se interface{ Code() int } // modernc.org/sqlite's *Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5
