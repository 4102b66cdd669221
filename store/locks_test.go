package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agenthost/agenthost/internal/statedir"
	"github.com/agenthost/agenthost/llm"
)

// readerEnv names the SQLite file the test binary opens, reads and closes when TestSQLiteLocksKeptWhenPreparedAgain
// runs it as its other process (see TestMain); readerEnv+"_MESSAGES" is how many messages conversation c1 must have.
const readerEnv = "AGENTHOST_STORE_TEST_READER"

// readerProcess is that other process: it opens the file as `agenthost state` does, reads the conversation and
// closes.
func readerProcess(path string) error {
	ctx := context.Background()
	db, err := Open(ctx, Options{Backend: SQLite, Path: path})
	if err != nil {
		return err
	}
	c, err := db.Peek(ctx, "c1")
	if err == nil && strconv.Itoa(len(c.Messages)) != os.Getenv(readerEnv+"_MESSAGES") {
		err = fmt.Errorf("%d messages, want %s", len(c.Messages), os.Getenv(readerEnv+"_MESSAGES"))
	}
	return errors.Join(err, db.Close())
}

// A process that holds a SQLite file open and prepares it again for a second user (the durable engine shares the
// state file) keeps its locks on the file and its -shm: POSIX locks are the process's, and closing any descriptor of
// the file drops them all. Without them, another process that opens the file believes it is alone: on closing it
// checkpoints and deletes the WAL under the writer, whose later commits go to the deleted file, unseen by other
// processes and lost if it crashes; opening while the writer writes, it resets the wal-index under it, whose write
// then fails with SQLITE_IOERR_IN_PAGE ("disk I/O error (8714)").
func TestSQLiteLocksKeptWhenPreparedAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "agent.db")
	db, err := Open(t.Context(), Options{Backend: SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msg := func(s string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: s}} }
	if err := db.Append(t.Context(), "c1", 0, msg("one"), nil, nil); err != nil {
		t.Fatal(err)
	}
	// The files made readable by others since, PrepareSQLite would tighten them, opening and closing each.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Chmod(path+suffix, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := statedir.PrepareSQLite(path, nil); err != nil { // as durable.New does on the same file
		t.Fatal(err)
	}
	for i := range 3 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), readerEnv+"="+path, fmt.Sprintf("%s_MESSAGES=%d", readerEnv, 1+i))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the reader process: %v\n%s", err, out)
		}
		if err := db.Append(t.Context(), "c1", 1+i, msg("more"), nil, nil); err != nil {
			t.Fatalf("a write after another process read the file: %v", err)
		}
	}
}
