package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/store"
)

// readerEnv names the state file the test binary opens, reads and closes when TestFileToolsLeaveStateAlone runs it
// as another process (see TestMain); readerEnv+"_MESSAGES" is how many messages conversation c1 must have.
const readerEnv = "AGENTHOST_BUILTIN_TEST_READER"

func TestMain(m *testing.M) {
	if path := os.Getenv(readerEnv); path != "" {
		if err := readState(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// readState is that other process: it opens the file as `agenthost state` does, reads the conversation and closes.
func readState(path string) error {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Backend: store.SQLite, Path: path})
	if err != nil {
		return err
	}
	c, err := db.Peek(ctx, "c1")
	if err == nil && strconv.Itoa(len(c.Messages)) != os.Getenv(readerEnv+"_MESSAGES") {
		err = fmt.Errorf("%d messages, want %s", len(c.Messages), os.Getenv(readerEnv+"_MESSAGES"))
	}
	return errors.Join(err, db.Close())
}

// TestFileToolsLeaveStateAlone: with the state database under a root of the file tools (state.path =
// "agent-state.db" and roots = ["."] is a plausible agent.toml), search_files, read_file and list_dir do not open
// the database or its -wal and -shm, under any name. Closing such a descriptor would drop the process's SQLite locks, and another
// process reading the state (`agenthost state`, a console) would then delete the WAL under the running agent, whose
// later commits it would never see.
func TestFileToolsLeaveStateAlone(t *testing.T) {
	dir := fileTree(t, map[string]string{"notes.txt": "TODO: water the plants\n"})
	path := filepath.Join(dir, "agent-state.db")
	db, err := store.Open(t.Context(), store.Options{Backend: store.SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msg := []llm.Message{{Role: llm.RoleUser, Content: "TODO"}}
	if err := db.Append(t.Context(), "c1", 0, msg, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Other names for it: a symbolic link in the root, a hard link.
	if err := os.Symlink("agent-state.db", filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(dir, "copy.bin")); err != nil {
		t.Fatal(err)
	}
	tools := fileTools(t, FilesOptions{Roots: []string{dir}})
	for i := range 2 {
		res := callTool(t, tools["search_files"], `{"pattern":"TODO"}`)
		if res.IsError || !strings.Contains(res.Text, "notes.txt") {
			t.Fatalf("search_files: %+v", res)
		}
		for _, name := range []string{"agent-state.db", "agent-state.db-wal", "agent-state.db-shm", "link.db", "copy.bin"} {
			res := callTool(t, tools["read_file"], `{"path":"`+name+`"}`)
			if !res.IsError || !strings.Contains(res.Text, "a database agenthost has open") {
				t.Errorf("read_file %s: %+v; want it refused as the state", name, res)
			}
			res = callTool(t, tools["list_dir"], `{"path":"`+name+`"}`)
			if !res.IsError || !strings.Contains(res.Text, "not a directory") {
				t.Errorf("list_dir %s: %+v; want it refused as a file", name, res)
			}
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), readerEnv+"="+path, fmt.Sprintf("%s_MESSAGES=%d", readerEnv, 1+i))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the reader process: %v\n%s", err, out)
		}
		if err := db.Append(t.Context(), "c1", 1+i, msg, nil, nil); err != nil {
			t.Fatalf("a write after another process read the state: %v", err)
		}
	}
}
