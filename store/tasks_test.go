package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestTasks(t *testing.T) {
	backends(t, Options{MaxTasks: 3}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		at := time.UnixMilli(1_700_000_000_000)
		put := func(id, ctxID, state string, terminal bool, updated time.Time, version int64) {
			t.Helper()
			body := fmt.Sprintf(`{"id":%q,"state":%q,"v":%d}`, id, state, version)
			if err := db.PutTask(ctx, &Task{ID: id, ContextID: ctxID, State: state, Terminal: terminal, Updated: updated, Version: version, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
		put("t1", "c1", "TASK_STATE_WORKING", false, at, 1)
		put("t1", "c1", "TASK_STATE_COMPLETED", true, at.Add(time.Second), 3)
		put("t1", "c1", "TASK_STATE_WORKING", false, at.Add(500*time.Millisecond), 2) // late, older: dropped
		got, err := db.Task(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != "TASK_STATE_COMPLETED" || !got.Terminal || got.Version != 3 || !got.Updated.Equal(at.Add(time.Second)) ||
			string(got.Body) != `{"id":"t1","state":"TASK_STATE_COMPLETED","v":3}` {
			t.Errorf("t1 = %+v (body %s)", got, got.Body)
		}
		if _, err := db.Task(ctx, "nope"); !errors.Is(err, ErrTaskNotFound) {
			t.Errorf("Task(nope): err = %v", err)
		}

		put("t2", "c2", "TASK_STATE_WORKING", false, at.Add(2*time.Second), 1)
		put("t3", "c1", "TASK_STATE_INPUT_REQUIRED", false, at.Add(3*time.Second), 1)
		list, total, err := db.Tasks(ctx, TaskQuery{})
		if err != nil || total != 3 || ids(list) != "t3 t2 t1" {
			t.Fatalf("all tasks: %s, total %d, %v", ids(list), total, err)
		}
		list, total, err = db.Tasks(ctx, TaskQuery{ContextID: "c1"})
		if err != nil || total != 2 || ids(list) != "t3 t1" {
			t.Errorf("context c1: %s, total %d, %v", ids(list), total, err)
		}
		list, total, err = db.Tasks(ctx, TaskQuery{State: "TASK_STATE_WORKING"})
		if err != nil || total != 1 || ids(list) != "t2" {
			t.Errorf("working: %s, total %d, %v", ids(list), total, err)
		}
		list, total, err = db.Tasks(ctx, TaskQuery{UpdatedAfter: at.Add(2 * time.Second)})
		if err != nil || total != 2 || ids(list) != "t3 t2" {
			t.Errorf("updated after 2s: %s, total %d, %v", ids(list), total, err)
		}
		// Pages of one: the cursor of the last task continues after it.
		page, total, err := db.Tasks(ctx, TaskQuery{Limit: 2})
		if err != nil || total != 3 || ids(page) != "t3 t2" {
			t.Fatalf("first page: %s, total %d, %v", ids(page), total, err)
		}
		last := page[len(page)-1]
		page, _, err = db.Tasks(ctx, TaskQuery{Limit: 2, Before: &TaskCursor{Updated: last.Updated, ID: last.ID}})
		if err != nil || ids(page) != "t1" {
			t.Errorf("second page: %s, %v", ids(page), err)
		}

		// A fourth task takes the table over its bound of 3: the oldest finished task goes, never an unfinished one.
		put("t4", "c3", "TASK_STATE_SUBMITTED", false, at.Add(4*time.Second), 1)
		if _, err := db.Task(ctx, "t1"); !errors.Is(err, ErrTaskNotFound) {
			t.Errorf("t1, the oldest finished task, is still kept: %v", err)
		}
		put("t5", "c3", "TASK_STATE_SUBMITTED", false, at.Add(5*time.Second), 1)
		if list, total, _ := db.Tasks(ctx, TaskQuery{}); total != 4 || ids(list) != "t5 t4 t3 t2" {
			t.Errorf("with no finished task to drop, every unfinished one is kept: %s", ids(list))
		}

		if err := db.DeleteTask(ctx, "t2"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteTask(ctx, "t2"); !errors.Is(err, ErrTaskNotFound) {
			t.Errorf("second delete: err = %v", err)
		}
	})
}

func ids(tasks []*Task) string {
	s := ""
	for i, t := range tasks {
		if i > 0 {
			s += " "
		}
		s += t.ID
	}
	return s
}

func TestTaskSignals(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		for _, s := range []struct{ task, kind, body string }{{"t1", "cancel", "{}"}, {"t2", "answer", `{"text":"yes"}`}, {"t1", "answer", `{"text":"no"}`}} {
			if err := db.Signal(ctx, s.task, s.kind, []byte(s.body)); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := db.TakeSignals(ctx, nil); err != nil || got != nil {
			t.Errorf("no task: %v, %v", got, err)
		}
		got, err := db.TakeSignals(ctx, []string{"t1", "t3"})
		if err != nil || len(got) != 2 || got[0].Target != "t1" || got[1].Target != "t1" {
			t.Fatalf("t1's signals: %+v, %v", got, err)
		}
		kinds := got[0].Kind + "," + got[1].Kind
		if kinds != "cancel,answer" && kinds != "answer,cancel" {
			t.Errorf("kinds %s", kinds)
		}
		if again, _ := db.TakeSignals(ctx, []string{"t1"}); len(again) != 0 {
			t.Errorf("t1's signals taken twice: %+v", again)
		}
		if t2, _ := db.TakeSignals(ctx, []string{"t2"}); len(t2) != 1 || string(t2[0].Body) != `{"text":"yes"}` {
			t.Errorf("t2's signals: %+v", t2)
		}
	})
}

func TestOrphans(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		at := time.UnixMilli(1_700_000_000_000)
		for _, tk := range []Task{
			{ID: "plain", State: "TASK_STATE_WORKING", Owner: "a"},
			{ID: "durable", State: "TASK_STATE_WORKING", Owner: "a", Durable: true},
			{ID: "done", State: "TASK_STATE_COMPLETED", Terminal: true, Owner: "a"},
			{ID: "other", State: "TASK_STATE_INPUT_REQUIRED", Owner: "b"},
		} {
			tk.Updated, tk.Version, tk.Body, tk.ContextID = at, 1, []byte(`{}`), "c"
			if err := db.PutTask(ctx, &tk); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.Orphans(ctx, "a")
		if err != nil || len(got) != 1 || got[0].ID != "plain" || got[0].Owner != "a" || got[0].Durable {
			t.Errorf("orphans of a: %+v, %v", got, err)
		}
		if d, _ := db.Task(ctx, "durable"); d == nil || !d.Durable {
			t.Errorf("the durable task read back: %+v", d)
		}
	})
}

// TestTasksBySubject: a listing holds the tasks of one subject, its pages and count included; a task keeps its
// subject through its saves.
func TestTasksBySubject(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		ctx := t.Context()
		at := time.UnixMilli(1_700_000_000_000)
		for i, sub := range []string{"alice", "bob", "alice", ""} {
			id := fmt.Sprintf("t%d", i+1)
			if err := db.PutTask(ctx, &Task{ID: id, ContextID: "c", State: "TASK_STATE_WORKING", Updated: at.Add(time.Duration(i) * time.Second), Version: 1, Body: []byte(`{}`), Subject: sub}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct{ subject, want string }{{"alice", "t3 t1"}, {"bob", "t2"}, {"", "t4"}, {"carol", ""}} {
			list, total, err := db.Tasks(ctx, TaskQuery{Subject: tc.subject, ContextID: "c"})
			if err != nil || ids(list) != tc.want || total != len(list) {
				t.Errorf("tasks of %q: %s, total %d, %v; want %s", tc.subject, ids(list), total, err, tc.want)
			}
		}
		page, total, err := db.Tasks(ctx, TaskQuery{Subject: "alice", Limit: 1, Before: &TaskCursor{Updated: at.Add(2 * time.Second), ID: "t3"}})
		if err != nil || ids(page) != "t1" || total != 2 {
			t.Errorf("alice's second page: %s, total %d, %v", ids(page), total, err)
		}
		if err := db.PutTask(ctx, &Task{ID: "t1", ContextID: "c", State: "TASK_STATE_COMPLETED", Terminal: true, Updated: at.Add(9 * time.Second), Version: 2, Body: []byte(`{}`), Subject: "alice"}); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Task(ctx, "t1"); err != nil || got.Subject != "alice" || got.State != "TASK_STATE_COMPLETED" {
			t.Errorf("t1 after its second save: %+v, %v", got, err)
		}
	})
}
