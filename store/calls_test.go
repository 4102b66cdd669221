package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestCalls(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	backends(t, Options{Now: clk.Now}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		if c, err := db.Call(ctx, "nope"); c != nil || err != nil {
			t.Fatalf("a call never saved: %+v, %v", c, err)
		}
		c := &Call{ID: "rs1", Owner: "a/1", Tool: "ask_agent", Args: []byte(`{"prompt":"hi"}`), Round: 1, State: "waiting",
			Outcome: []byte(`{"inputRequests":{}}`), Updated: clk.Now(), Expires: clk.Now().Add(time.Minute)}
		if err := db.PutCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := db.Call(ctx, "rs1")
		if err != nil || got == nil || got.Owner != "a/1" || got.Tool != "ask_agent" || string(got.Args) != `{"prompt":"hi"}` ||
			got.Round != 1 || got.State != "waiting" || string(got.Outcome) != `{"inputRequests":{}}` || !got.Expires.Equal(c.Expires) {
			t.Fatalf("read back: %+v, %v", got, err)
		}
		c.State, c.Round, c.Outcome = "done", 2, []byte(`{"content":[]}`)
		if err := db.PutCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.Call(ctx, "rs1"); got == nil || got.State != "done" || got.Round != 2 || string(got.Outcome) != `{"content":[]}` {
			t.Fatalf("replaced: %+v", got)
		}
		if list, err := db.Calls(ctx); err != nil || len(list) != 1 || list[0].ID != "rs1" {
			t.Errorf("Calls = %+v, %v", list, err)
		}

		// Deleting takes the signals left for the call with it.
		if err := db.Signal(ctx, "rs1", "answers", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteCall(ctx, "rs1"); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.Call(ctx, "rs1"); got != nil {
			t.Errorf("deleted, still read: %+v", got)
		}
		if sigs, _ := db.TakeSignals(ctx, []string{"rs1"}); len(sigs) != 0 {
			t.Errorf("signals of a deleted call: %+v", sigs)
		}
		if err := db.DeleteCall(ctx, "rs1"); err != nil {
			t.Errorf("deleting again: %v", err)
		}

		// An expired call is not read, and the next new call deletes it.
		old := &Call{ID: "old", Owner: "a/1", Tool: "t", Args: []byte(`{}`), Round: 1, State: "waiting", Outcome: []byte(`{}`),
			Updated: clk.Now(), Expires: clk.Now().Add(time.Second)}
		if err := db.PutCall(ctx, old); err != nil {
			t.Fatal(err)
		}
		clk.Add(2 * time.Second)
		if got, _ := db.Call(ctx, "old"); got != nil {
			t.Errorf("expired, still read: %+v", got)
		}
		fresh := &Call{ID: "new", Owner: "b/1", Tool: "t", Args: []byte(`{}`), Round: 1, State: "waiting", Outcome: []byte(`{}`),
			Updated: clk.Now(), Expires: clk.Now().Add(time.Minute)}
		if err := db.PutCall(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM mcp_calls WHERE id = 'old'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("expired row left: %d, %v", n, err)
		}
	})
}

// Signals left while others are taken are each taken exactly once.
func TestSignalsTakenOnce(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		const senders, each = 4, 50
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for i := range each {
					if err := db.Signal(ctx, "target", "k", fmt.Appendf(nil, `"%d-%d"`, s, i)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		seen := map[string]int{}
		var takerErr error
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true // one more take after the last signal
			default:
			}
			sigs, err := db.TakeSignals(ctx, []string{"target"})
			if err != nil {
				takerErr = err
				break
			}
			for _, s := range sigs {
				seen[string(s.Body)]++
			}
		}
		if takerErr != nil {
			t.Fatal(takerErr)
		}
		if len(seen) != senders*each {
			t.Errorf("%d distinct signals taken, want %d", len(seen), senders*each)
		}
		for body, n := range seen {
			if n != 1 {
				t.Errorf("signal %s taken %d times", body, n)
			}
		}
	})
}

// A database of schema 5 keeps the signals left in it when it is upgraded, which renames their table.
func TestSignalsSurviveUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	SchemaVersion = 5
	db, err := Open(t.Context(), Options{Backend: SQLite, Path: path})
	SchemaVersion = len(migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(t.Context(), `INSERT INTO a2a_signals (id, task_id, kind, body, created_ms) VALUES ('s1', 'task1', 'cancel', '{}', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(t.Context(), Options{Backend: SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sigs, err := db.TakeSignals(t.Context(), []string{"task1"})
	if err != nil || len(sigs) != 1 || sigs[0].Kind != "cancel" || sigs[0].Target != "task1" {
		t.Errorf("after the upgrade: %+v, %v", sigs, err)
	}
}

func TestGrants(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		if g, err := db.Grant(ctx, "github"); g != nil || err != nil {
			t.Fatalf("no grant yet: %s, %v", g, err)
		}
		for _, s := range []struct{ server, grant string }{{"github", `{"v":1}`}, {"atlassian", `{"v":2}`}, {"github", `{"v":3}`}} {
			if err := db.PutGrant(ctx, s.server, []byte(s.grant)); err != nil {
				t.Fatal(err)
			}
		}
		if g, err := db.Grant(ctx, "github"); string(g) != `{"v":3}` || err != nil {
			t.Errorf("github: %s, %v", g, err)
		}
		all, err := db.Grants(ctx)
		if err != nil || len(all) != 2 || string(all[0]) != `{"v":2}` || string(all[1]) != `{"v":3}` {
			t.Errorf("Grants = %q, %v", all, err)
		}
		if err := db.DeleteGrant(ctx, "github"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteGrant(ctx, "github"); err != nil {
			t.Errorf("deleting again: %v", err)
		}
		if g, _ := db.Grant(ctx, "github"); g != nil {
			t.Errorf("deleted, still read: %s", g)
		}
	})
}
