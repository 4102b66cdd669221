package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

const month = 30 * 24 * time.Hour

// say appends a user message to the conversation id at version, and fails the test on an error.
func say(t *testing.T, db *DB, id string, version int) {
	t.Helper()
	if err := db.Append(t.Context(), id, version, []llm.Message{{Role: llm.RoleUser, Content: id}}, []host.Reference{{URI: "u:" + id}}, nil); err != nil {
		t.Fatalf("Append(%s, %d): %v", id, version, err)
	}
}

// conversationIDs returns the ids of the rows of the conversations table, expired or not, sorted.
func conversationIDs(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.SQL().QueryContext(t.Context(), `SELECT id FROM conversations ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// A conversation kept in a database lasts a month idle by default: past it, it can be neither loaded nor continued,
// and the next sweep deletes its rows; one used meanwhile stays.
func TestConversationExpiry(t *testing.T) {
	clk := &clock{}
	backends(t, Options{Now: clk.Now}, func(t *testing.T, db *DB) {
		clk.now = time.Unix(1_000_000, 0)
		ctx := t.Context()
		if db.ConversationTTL() != month {
			t.Fatalf("ConversationTTL = %s, want %s", db.ConversationTTL(), month)
		}
		say(t, db, "old", 0)
		say(t, db, "used", 0)
		clk.Add(29 * 24 * time.Hour)
		if _, err := db.Load(ctx, "old"); err != nil {
			t.Fatalf("a conversation idle 29 days: %v", err)
		}
		say(t, db, "used", 1)
		clk.Add(month + time.Second) // old and used: idle a month and a second
		for _, id := range []string{"old", "used"} {
			if _, err := db.Load(ctx, id); !errors.Is(err, host.ErrUnknownConversation) || !strings.Contains(err.Error(), "720h0m0s idle") {
				t.Errorf("Load of %s, idle past the TTL: err = %v", id, err)
			}
			if err := db.Append(ctx, id, 1, []llm.Message{{Role: llm.RoleUser, Content: "again"}}, nil, nil); !errors.Is(err, host.ErrUnknownConversation) {
				t.Errorf("continuing %s, idle past the TTL: err = %v", id, err)
			}
		}
		if list, err := db.Conversations(ctx, 0); err != nil || len(list) != 0 {
			t.Errorf("Conversations = %+v, %v; want none", list, err)
		}
		// Their rows stay until the next sweep, which the next run that writes brings (the last was 31 days ago).
		if got := conversationIDs(t, db); !reflect.DeepEqual(got, []string{"old", "used"}) {
			t.Fatalf("rows before the sweep: %q", got)
		}
		say(t, db, "fresh", 0)
		if got := conversationIDs(t, db); !reflect.DeepEqual(got, []string{"fresh"}) {
			t.Errorf("rows after the sweep: %q, want fresh alone", got)
		}
		assertRows(t, db, 3) // fresh: its row, a message, a source
	})
}

// The processes sharing a database take turns to sweep: one sweeps in each sweepEvery, whichever it is, so that a
// run started in a new process does not sweep the table each time.
func TestSweepTurns(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	backendsWith(t, Options{IdleTTL: time.Minute, Now: clk.Now}, func(t *testing.T, first *DB, opts Options) {
		clk.now = time.Unix(1_000_000, 0)
		second, err := Open(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer second.Close()
		say(t, first, "a", 0) // first sweeps, and holds the turn for sweepEvery
		clk.Add(2 * time.Minute)
		say(t, second, "b", 0) // a has expired, but first swept less than sweepEvery ago
		if got := conversationIDs(t, second); !reflect.DeepEqual(got, []string{"a", "b"}) {
			t.Fatalf("rows after a sweep out of turn: %q, want a and b", got)
		}
		clk.Add(sweepEvery)
		say(t, second, "c", 0) // second's turn: first swept sweepEvery and two minutes ago
		if got := conversationIDs(t, second); !reflect.DeepEqual(got, []string{"c"}) {
			t.Errorf("rows after second's turn: %q, want c alone", got)
		}
	})
}

// PruneConversations deletes the conversations idle for longer than it is told, whatever the TTL; IdleConversations
// lists them first and deletes nothing.
func TestPruneConversations(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	backends(t, Options{Now: clk.Now}, func(t *testing.T, db *DB) {
		clk.now = time.Unix(1_000_000, 0)
		ctx := t.Context()
		say(t, db, "a", 0)
		clk.Add(time.Hour)
		say(t, db, "b", 0)
		clk.Add(time.Hour)
		say(t, db, "c", 0)
		clk.Add(30 * time.Minute) // a idle 2h30, b 1h30, c 30m
		idle, err := db.IdleConversations(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range idle {
			ids = append(ids, c.ID)
		}
		if !reflect.DeepEqual(ids, []string{"a", "b"}) || idle[0].Prompt != "a" || idle[0].Messages != 1 {
			t.Errorf("IdleConversations(1h) = %+v, want a then b", idle)
		}
		if got := conversationIDs(t, db); len(got) != 3 {
			t.Fatalf("IdleConversations deleted rows: %q left", got)
		}
		n, err := db.PruneConversations(ctx, time.Hour)
		if err != nil || n != 2 {
			t.Fatalf("PruneConversations(1h) = %d, %v; want 2", n, err)
		}
		if got := conversationIDs(t, db); !reflect.DeepEqual(got, []string{"c"}) {
			t.Errorf("rows after pruning: %q, want c alone", got)
		}
		assertRows(t, db, 3)
		if n, err := db.PruneConversations(ctx, time.Hour); err != nil || n != 0 {
			t.Errorf("pruning again = %d, %v; want 0", n, err)
		}
		if _, err := db.PruneConversations(ctx, 0); err == nil {
			t.Error("PruneConversations(0) deleted everything, want an error")
		}
	})
}

// The sweep's queries read the index of the last use: neither a scan of the table nor a sort of it.
func TestSweepUsesIndex(t *testing.T) {
	db, err := Open(t.Context(), Options{Backend: SQLite, Path: t.TempDir() + "/agent.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`SELECT id FROM conversations WHERE ` + whereIdle, qPastBound} {
		rows, err := db.SQL().QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, 10)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, "INDEX conversations_used") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("plan of %s: %s; want the index conversations_used and no sort", q, text)
		}
	}
}
