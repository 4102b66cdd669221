package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/pgtest"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(readerEnv); path != "" {
		if err := readerProcess(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	pgtest.Main(m)
}

// clock is a settable clock for the idle expiry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// backends opens a fresh database of each backend with opts (Backend, Path and DSN filled in) and runs f on it.
func backends(t *testing.T, opts Options, f func(t *testing.T, db *DB)) {
	backendsWith(t, opts, func(t *testing.T, db *DB, _ Options) { f(t, db) })
}

// backendsWith is backends, f getting the options too.
func backendsWith(t *testing.T, opts Options, f func(t *testing.T, db *DB, opts Options)) {
	for _, backend := range []string{SQLite, Postgres} {
		t.Run(backend, func(t *testing.T) {
			o := opts
			o.Backend = backend
			if backend == SQLite {
				o.Path = filepath.Join(t.TempDir(), "state", "agent.db")
			} else {
				o.DSN = pgtest.NewDatabase(t)
			}
			db, err := Open(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			f(t, db, o)
		})
	}
}

func TestConversationRoundTrip(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		id, err := db.Create(ctx, "")
		if err != nil || len(id) != 32 {
			t.Fatalf("Create = %q, %v", id, err)
		}
		first := []llm.Message{
			{Role: llm.RoleUser, Content: "What time is it?\nIn Paris."},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "current_time", Arguments: `{"tz":"Europe/Paris"}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Name: "current_time", Content: "12:00 ✓"},
			{Role: llm.RoleAssistant, Content: "Noon [1]."},
		}
		refs := []host.Reference{{Title: "Clock", URI: "time:paris", Content: "12:00"}, {Title: "Other", URI: "u:2"}}
		if err := db.Append(ctx, id, 0, first, refs, nil); err != nil {
			t.Fatal(err)
		}
		second := []llm.Message{{Role: llm.RoleUser, Content: "And in Tokyo?"}, {Role: llm.RoleAssistant, Content: "20:00 [3]."}}
		if err := db.Append(ctx, id, 4, second, []host.Reference{{Title: "Tokyo", URI: "time:tokyo"}}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := db.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := append(first, second...); !reflect.DeepEqual(got.Messages, want) {
			t.Errorf("messages =\n%+v\nwant\n%+v", got.Messages, want)
		}
		if want := append(refs, host.Reference{Title: "Tokyo", URI: "time:tokyo"}); !reflect.DeepEqual(got.Sources, want) {
			t.Errorf("sources = %+v, want %+v", got.Sources, want)
		}

		list, err := db.Conversations(ctx, 0)
		if err != nil || len(list) != 1 {
			t.Fatalf("Conversations = %+v, %v", list, err)
		}
		if c := list[0]; c.ID != id || c.Messages != 6 || c.Sources != 3 || c.Prompt != "What time is it?" {
			t.Errorf("summary = %+v", c)
		}
		if err := db.DeleteConversation(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Load(ctx, id); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("Load after delete: err = %v", err)
		}
		if err := db.DeleteConversation(ctx, id); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("second delete: err = %v", err)
		}
		assertRows(t, db, 0)
	})
}

// TestConversationLoadedTools: the tools a conversation's searches loaded come back from Load in load order, after
// each Append, and a run that loaded none leaves them as they were.
func TestConversationLoadedTools(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		id, err := db.Create(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		turn := []llm.Message{{Role: llm.RoleUser, Content: "q"}, {Role: llm.RoleAssistant, Content: "a"}}
		if err := db.Append(ctx, id, 0, turn, nil, []string{"weather_get", "mcp_files-read"}); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Load(ctx, id); err != nil || !slices.Equal(got.Tools, []string{"weather_get", "mcp_files-read"}) {
			t.Fatalf("after the first run: Tools = %q, %v", got.Tools, err)
		}
		if err := db.Append(ctx, id, 2, turn, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Append(ctx, id, 4, turn, nil, []string{"calendar_add"}); err != nil {
			t.Fatal(err)
		}
		got, err := db.Peek(ctx, id)
		if err != nil || !slices.Equal(got.Tools, []string{"weather_get", "mcp_files-read", "calendar_add"}) || len(got.Messages) != 6 {
			t.Fatalf("after three runs: Tools = %q, %d messages, %v", got.Tools, len(got.Messages), err)
		}
		// A run that lost the conflict loaded nothing into the conversation.
		if err := db.Append(ctx, id, 4, turn, nil, []string{"lost_tool"}); !errors.Is(err, host.ErrConversationConflict) {
			t.Fatalf("stale Append: err = %v", err)
		}
		if got, _ := db.Load(ctx, id); !slices.Equal(got.Tools, []string{"weather_get", "mcp_files-read", "calendar_add"}) {
			t.Errorf("after a lost conflict: Tools = %q", got.Tools)
		}
	})
}

// assertRows checks how many rows the conversation tables hold in all.
func assertRows(t *testing.T, db *DB, want int) {
	t.Helper()
	total := 0
	for _, table := range []string{"conversations", "conversation_messages", "conversation_sources"} {
		var n int
		if err := db.SQL().QueryRowContext(t.Context(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != want {
		t.Errorf("%d rows left in the conversation tables, want %d", total, want)
	}
}

func TestConversationCreateWithID(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		if id, err := db.Create(ctx, "ctx-1"); err != nil || id != "ctx-1" {
			t.Fatalf("Create(ctx-1) = %q, %v", id, err)
		}
		if _, err := db.Create(ctx, "ctx-1"); !errors.Is(err, host.ErrConversationExists) {
			t.Errorf("second Create: err = %v, want ErrConversationExists", err)
		}
		if _, err := db.Load(ctx, "nope"); !errors.Is(err, host.ErrUnknownConversation) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("Load(nope): err = %v", err)
		}
		if err := db.Append(ctx, "nope", 2, []llm.Message{{Role: llm.RoleUser, Content: "x"}}, nil, nil); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("Append(nope) at version 2: err = %v", err)
		}
		// A new id is only drawn: the conversation exists from its first Append, at version 0.
		id, err := db.Create(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Load(ctx, id); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("Load of a drawn id before its first Append: err = %v", err)
		}
		if err := db.Append(ctx, id, 0, []llm.Message{{Role: llm.RoleUser, Content: "x"}}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Append(ctx, "ctx-1", 0, []llm.Message{{Role: llm.RoleUser, Content: "y"}}, nil, nil); err != nil {
			t.Errorf("the first Append to a created conversation: %v", err)
		}
		if err := db.Append(ctx, "ctx-1", 0, []llm.Message{{Role: llm.RoleUser, Content: "z"}}, nil, nil); !errors.Is(err, host.ErrConversationConflict) {
			t.Errorf("a second Append at version 0: err = %v, want ErrConversationConflict", err)
		}
	})
}

// Of many runs appending to one conversation from the same version at once, exactly one wins.
func TestConversationConflict(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		id, err := db.Create(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		const runs = 8
		errs := make([]error, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() {
				msgs := []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("run ", i)}, {Role: llm.RoleAssistant, Content: "ok"}}
				errs[i] = db.Append(ctx, id, 0, msgs, []host.Reference{{Title: fmt.Sprint(i)}}, nil)
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, host.ErrConversationConflict):
				t.Errorf("run %d: err = %v, want nil or ErrConversationConflict", i, err)
			}
		}
		c, err := db.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if won != 1 || len(c.Messages) != 2 || len(c.Sources) != 1 {
			t.Errorf("%d runs won; the conversation has %d messages and %d sources, want 1 winner, 2 and 1", won, len(c.Messages), len(c.Sources))
		}
	})
}

func TestConversationBounds(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	backends(t, Options{MaxConversations: 2, IdleTTL: time.Hour, Now: clk.Now}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		create := func(id string) {
			if _, err := db.Create(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := db.Append(ctx, id, 0, []llm.Message{{Role: llm.RoleUser, Content: id}}, []host.Reference{{URI: "u:" + id}}, nil); err != nil {
				t.Fatal(err)
			}
			clk.Add(time.Second)
		}
		create("a")
		create("b")
		if _, err := db.Load(ctx, "a"); err != nil { // a is now the most recently used
			t.Fatal(err)
		}
		clk.Add(time.Second)
		create("c") // evicts b
		if _, err := db.Peek(ctx, "b"); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("evicted b: err = %v", err)
		}
		assertRows(t, db, 6) // a and c: a row, a message and a source each

		// a was last used at 2s, c at 3s; now it is 4s: half a second later than an hour after 2s, a has expired.
		clk.Add(time.Hour - 2*time.Second + 500*time.Millisecond)
		if _, err := db.Peek(ctx, "a"); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("idle a: err = %v", err)
		}
		if _, err := db.Peek(ctx, "c"); err != nil {
			t.Errorf("c: %v", err)
		}
		// Peek does not count as a use: c expires on time.
		clk.Add(time.Minute)
		if _, err := db.Load(ctx, "c"); !errors.Is(err, host.ErrUnknownConversation) {
			t.Errorf("idle c: err = %v", err)
		}
		// Expired rows stay until a sweep, which a Create runs (at most once a minute).
		if _, err := db.Create(ctx, "a"); err != nil {
			t.Fatalf("reusing an expired id: %v", err)
		}
		if c, err := db.Load(ctx, "a"); err != nil || len(c.Messages) != 0 {
			t.Fatalf("the new a: %+v, %v", c, err)
		}
		assertRows(t, db, 1)
	})
}

func TestOpenSQLiteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "agent.db")
	db, err := Open(t.Context(), Options{Backend: SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	id, err := db.Create(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Append(t.Context(), id, 0, []llm.Message{{Role: llm.RoleUser, Content: "kept"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{false: 0o600, true: 0o700}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	// Reopened, it has the conversation, and the migrations are not applied again.
	db, err = Open(t.Context(), Options{Backend: SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if c, err := db.Load(t.Context(), id); err != nil || len(c.Messages) != 1 || c.Messages[0].Content != "kept" {
		t.Fatalf("after reopening: %+v, %v", c, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	backendsWith(t, Options{}, func(t *testing.T, db *DB, opts Options) {
		if _, err := db.SQL().ExecContext(t.Context(), `UPDATE agenthost_schema SET version = $1`, SchemaVersion+1); err != nil {
			t.Fatal(err)
		}
		_, err := Open(t.Context(), opts)
		want := fmt.Sprintf("was written by a newer agenthost (schema version %d; this one knows up to %d)", SchemaVersion+1, SchemaVersion)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open of a newer database: err = %v, want it to say %q", err, want)
		}
		var v int
		if err := db.SQL().QueryRowContext(t.Context(), `SELECT version FROM agenthost_schema`).Scan(&v); err != nil || v != SchemaVersion+1 {
			t.Errorf("the version is now %d (%v): the newer database was changed", v, err)
		}
	})
}

// Processes starting at once on one new database, each with connections of its own, all open it, and it is
// migrated once: on Postgres they take turns under MigrationLock, on SQLite under the file's write lock.
func TestConcurrentMigration(t *testing.T) {
	for _, backend := range []string{SQLite, Postgres} {
		t.Run(backend, func(t *testing.T) {
			opts := Options{Backend: backend}
			if backend == SQLite {
				opts.Path = filepath.Join(t.TempDir(), "state", "agent.db")
			} else {
				opts.DSN = pgtest.NewDatabase(t)
			}
			const n = 8
			var ready, wg sync.WaitGroup
			ready.Add(n)
			start := make(chan struct{})
			errs := make([]error, n)
			for i := range errs {
				wg.Go(func() {
					ready.Done()
					<-start
					db, err := Open(t.Context(), opts)
					if err == nil {
						db.Close()
					}
					errs[i] = err
				})
			}
			ready.Wait()
			close(start) // all at once
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			db, err := Open(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var rows, version int
			if err := db.SQL().QueryRowContext(t.Context(), `SELECT count(*), max(version) FROM agenthost_schema`).Scan(&rows, &version); err != nil ||
				rows != 1 || version != SchemaVersion {
				t.Errorf("agenthost_schema: %d rows, version %d (%v); want 1 row, version %d", rows, version, err, SchemaVersion)
			}
		})
	}
}

// A process that finds MigrationLock held waits for it, gives up when its context ends, and migrates once the lock
// is released.
func TestMigrationLockWait(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	release, err := LockMigrations(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { release() }()
	watch, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	count := func(query string, args ...any) int {
		var n int
		if err := watch.QueryRowContext(t.Context(), query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A session of Open's, not the one holding the lock, has tried to take it.
	polling := func() bool {
		return count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_try_advisory_lock%'
			AND query NOT LIKE '%pg_stat_activity%' AND pid NOT IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`) > 0
	}
	tables := func() int {
		return count(`SELECT count(*) FROM information_schema.tables WHERE table_name = 'agenthost_schema'`)
	}
	open := func(ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() {
			db, err := Open(ctx, Options{Backend: Postgres, DSN: dsn})
			if err == nil {
				db.Close()
			}
			done <- err
		}()
		return done
	}
	result := func(done chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Open did not return")
		}
		return nil
	}

	// The lock is held by a session (objid is the key's lower half, as a DBA sees it in pg_locks).
	if n := count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = 1634168436 AND granted`); n != 1 {
		t.Fatalf("%d sessions hold the migration lock, want 1", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := open(ctx)
	testwait.Until(t, 30*time.Second, "Open tries the migration lock", polling)
	cancel()
	if err := result(done); err == nil || !strings.Contains(err.Error(), "waiting for the migration lock (Postgres advisory lock 1634168436)") ||
		!errors.Is(err, context.Canceled) {
		t.Fatalf("Open canceled while it waited: %v", err)
	}
	if n := tables(); n != 0 {
		t.Errorf("agenthost_schema exists: the canceled Open migrated without the lock")
	}

	done = open(t.Context())
	testwait.Until(t, 30*time.Second, "Open tries the migration lock again", polling)
	if n := tables(); n != 0 {
		t.Errorf("agenthost_schema exists: Open migrated without the lock")
	}
	release()
	release = func() {}
	if err := result(done); err != nil {
		t.Fatalf("Open once the lock is released: %v", err)
	}
	if tables() != 1 {
		t.Error("Open did not migrate once the lock was released")
	}
	if n := count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'`); n != 0 {
		t.Errorf("%d advisory locks still held after release and Open", n)
	}
}

// The migration lock is taken and released on one session, pinned: when that session is gone, or did not hold the
// lock (a pooler in transaction mode that ran the unlock on another), the release says so.
func TestMigrationLockSession(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	release, err := LockMigrations(t.Context(), dsn, logger)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	// The session holding the lock ends: its lock goes with it, and the release must not run on a new session,
	// where the unlock would quietly find nothing to release.
	var terminated int
	if err := watch.QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = 0 AND objid = 1634168436 AND granted`).Scan(&terminated); err != nil || terminated != 1 {
		t.Fatalf("terminated %d sessions holding the migration lock (%v), want 1", terminated, err)
	}
	release()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "cannot release the migration lock") {
		t.Errorf("release on a session that ended logged %q; want a warning that it cannot release the lock", logs.String())
	}

	logs.Reset()
	conn, err := watch.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	unlockMigrations(conn, logger)
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "no longer held by the session that took it") ||
		!strings.Contains(logs.String(), "session-pooled") {
		t.Errorf("an unlock on a session without the lock logged %q; want a warning that names session pooling", logs.String())
	}
	// The lock is free again.
	release, err = LockMigrations(t.Context(), dsn, logger)
	if err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	release()
	if logs.Len() != 0 {
		t.Errorf("a release of a held lock logged %q", logs.String())
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Backend: "mysql"}, `store: unknown backend "mysql"`},
		{Options{Backend: SQLite}, "store: no SQLite file given"},
		{Options{Backend: Postgres}, "store: no Postgres connection string given"},
		{Options{Backend: Postgres, DSN: "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2"}, "postgres://127.0.0.1:1/db"},
	} {
		_, err := Open(ctx, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v): err = %v, want it to contain %q", tc.opts.Backend, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// withUmask sets the process's umask for the test. The umask is process-wide: the tests of this package that
// call it are not parallel, and none of this package is.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func TestSQLiteFilesPrivate(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "agent.db")
	db, err := Open(t.Context(), Options{Backend: SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id, err := db.Create(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Append(t.Context(), id, 0, []llm.Message{{Role: llm.RoleUser, Content: "a private prompt"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	// While the database is open, the prompt is in the write-ahead log, which must be as private as the file.
	want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600}
	for p, m := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != m {
			t.Errorf("%s: mode %#o, want %#o", p, fi.Mode().Perm(), m)
		}
	}
	if b, _ := os.ReadFile(path + "-wal"); !strings.Contains(string(b), "a private prompt") {
		t.Error("the prompt is not in the -wal file: the test checks the wrong file")
	}
}

// The state connection's page cache is bounded (see sqliteCacheKiB): SQLite's default would hold up to 2,000 KiB of
// pages, about 4 MiB resident.
func TestSQLitePageCacheBounded(t *testing.T) {
	db, err := Open(t.Context(), Options{Backend: SQLite, Path: filepath.Join(t.TempDir(), "agent.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var kib int
	if err := db.SQL().QueryRowContext(t.Context(), `PRAGMA cache_size`).Scan(&kib); err != nil {
		t.Fatal(err)
	}
	if kib != -256 {
		t.Errorf("cache_size %d, want -256 (256 KiB)", kib)
	}
}

func TestSQLiteFileTightened(t *testing.T) {
	withUmask(t, 0o022)
	path := filepath.Join(t.TempDir(), "agent.db")
	// A database an older agenthost left readable by others, with its -wal.
	old, err := sql.Open("sqlite", SQLiteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE t (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: %v, %v: the test needs a file readable by others", p, fi.Mode(), err)
		}
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for range 2 {
		db, err := Open(t.Context(), Options{Backend: SQLite, Path: path, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Create(t.Context(), ""); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("after Open: %v, %v", fi.Mode(), err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "path="+path+" ") ||
		!strings.Contains(lines[0], "mode=0644") || !strings.Contains(lines[1], "path="+path+"-wal") {
		t.Errorf("want one warning for the file and one for its -wal, naming the old mode, once:\n%s", logs.String())
	}
}
