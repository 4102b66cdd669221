package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

// HeldSQLite knows a held database's files, -wal, -shm and -journal included, by what they are, not by their names,
// until the hold is released.
func TestHeldSQLite(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "agent.db")
	for _, p := range []string{path, path + "-wal", path + "-shm", filepath.Join(dir, "agent.db-other"), filepath.Join(other, "agent.db")} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lstat := func(p string) os.FileInfo {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	heldNow := func(want bool, ps ...string) {
		t.Helper()
		for _, p := range ps {
			if got := HeldSQLite(lstat(p)); got != want {
				t.Errorf("HeldSQLite(%s) = %v, want %v", p, got, want)
			}
		}
	}
	heldNow(false, path, path+"-wal")
	release := HoldSQLite(path)
	release2 := HoldSQLite(path) // a second user of the same file, as the durable engine is of the state's
	heldNow(true, path, path+"-wal", path+"-shm")
	heldNow(false, filepath.Join(dir, "agent.db-other"), filepath.Join(other, "agent.db"), dir)
	// Under another name: a hard link is the same file.
	if err := os.Link(path+"-shm", filepath.Join(other, "renamed.bin")); err != nil {
		t.Fatal(err)
	}
	heldNow(true, filepath.Join(other, "renamed.bin"))
	if !heldPath(path) {
		t.Error("heldPath is false for a held database")
	}
	release()
	release() // once only
	heldNow(true, path)
	release2()
	heldNow(false, path, path+"-shm")
}

// PrepareSQLite leaves a held database alone: it was prepared when it was opened, and tightening it now would open
// and close its files, dropping the process's locks.
func TestPrepareSQLiteLeavesHeldAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	release := HoldSQLite(path)
	if err := PrepareSQLite(path, nil); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(path); permBits && fi.Mode().Perm() != 0o644 {
		t.Errorf("a held database was tightened to %v", fi.Mode().Perm())
	}
	release()
	if err := PrepareSQLite(path, nil); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(path); permBits && fi.Mode().Perm() != 0o600 {
		t.Errorf("a database no longer held was left %v, want 0600", fi.Mode().Perm())
	}
}
