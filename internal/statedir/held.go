package statedir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// SQLite locks a database with POSIX advisory locks, which belong to the process: closing any descriptor of the
// database file, or of its -wal or -shm, drops every lock the process holds on it, whichever descriptor took them.
// Another process that opens the database then believes it is alone, and may delete the WAL under the process that
// writes it (whose later commits are lost to everyone else) or reset its shared-memory index. So code that opens
// files it does not own (the file tools, doc_search's indexing) must leave alone the SQLite files the process has
// open, and PrepareSQLite must not open them again.

// sqliteCompanions are the suffixes SQLite gives a database's companion files, after the database's own name.
var sqliteCompanions = []string{"-wal", "-shm", "-journal"}

// heldSuffixes are the suffixes of a database's files: its own (none) and its companions'.
var heldSuffixes = append([]string{""}, sqliteCompanions...)

// held are the SQLite databases the process has open (HoldSQLite), one entry each time one was held.
var held struct {
	mu  sync.Mutex
	dbs []*heldDB
}

// heldDB is a database held: its absolute path, and its files as seen once they exist, by suffix. While the process
// holds a database open its files stay the same ones: SQLite deletes the WAL only when the last connection closes.
type heldDB struct {
	path  string
	files map[string]os.FileInfo
}

// HoldSQLite records that the process has the SQLite database at path open, until the returned release is called
// (once, when the database is closed). A database held twice is held until both are released.
func HoldSQLite(path string) (release func()) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	db := &heldDB{path: abs, files: map[string]os.FileInfo{}}
	held.mu.Lock()
	held.dbs = append(held.dbs, db)
	held.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			held.mu.Lock()
			defer held.mu.Unlock()
			held.dbs = slices.DeleteFunc(held.dbs, func(d *heldDB) bool { return d == db })
		})
	}
}

// HeldSQLite reports whether fi (as os.Stat, os.Lstat or a directory walk describes it) is a file of an SQLite
// database the process holds open: the database itself, or its -wal, -shm or -journal, under whatever name or link
// it was reached by. Such a file must not be opened: closing the descriptor would drop the process's locks on it.
func HeldSQLite(fi fs.FileInfo) bool {
	if fi == nil || !fi.Mode().IsRegular() {
		return false
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	for _, db := range held.dbs {
		for _, suffix := range heldSuffixes {
			known := db.files[suffix]
			if known == nil {
				if li, err := os.Stat(db.path + suffix); err == nil {
					db.files[suffix], known = li, li
				}
			}
			if known != nil && os.SameFile(fi, known) {
				return true
			}
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
	return slices.ContainsFunc(held.dbs, func(d *heldDB) bool { return d.path == abs })
}

// busyWait bounds how long RetryBusy retries a file that stays busy while other connections open it.
const busyWait = 10 * time.Second

// RetryBusy calls f, again while it fails with SQLite's SQLITE_BUSY at once, for 10 s at most or until ctx ends,
// and returns its last error. busy_timeout makes SQLite wait for a lock, but not where waiting could deadlock:
// connections that open one new file together each turn it to WAL, and of two that hold a shared lock and want the
// exclusive one, SQLite fails one immediately. The connection is made again on the next try, and by then the file
// is in WAL mode.
func RetryBusy(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(busyWait)
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
