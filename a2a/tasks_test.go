package a2a

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// manualClock is a clock that moves only when told.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Date(2026, 3, 12, 10, 0, 0, 0, time.UTC)}
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// storedTask returns a task for the store with three messages of history and one artifact.
func storedTask(id, contextID string, state taskState) *serverTask {
	var history []message
	for i := range 3 {
		history = append(history, message{MessageID: fmt.Sprintf("%s-m%d", id, i), Role: roleUser, Parts: []part{textPart("m")}})
	}
	return &serverTask{
		id: id, contextID: contextID, done: make(chan struct{}),
		t: task{
			ID: id, ContextID: contextID, Status: taskStatus{State: state},
			History:   history,
			Artifacts: []artifact{{ArtifactID: id + "-a", Parts: []part{textPart("out")}}},
		},
	}
}

func mustAddTask(t *testing.T, s *taskStore, st *serverTask) {
	t.Helper()
	if err := s.add(st); err != nil {
		t.Fatalf("add %s: %v", st.id, err)
	}
}

func taskIDs(tasks []task) []string {
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		out[i] = tk.ID
	}
	return out
}

func mustListTasks(t *testing.T, s *taskStore, p listParams) *listResult {
	t.Helper()
	res, err := s.list(t.Context(), "", p)
	if err != nil {
		t.Fatalf("list %+v: %v", p, err)
	}
	return res
}

func TestTaskStoreListFilters(t *testing.T) {
	clock := newManualClock()
	s := newTaskStore(100, clock.now, nil, slog.New(slog.DiscardHandler))
	stamps := map[string]time.Time{}
	for _, x := range []struct {
		id, ctx string
		state   taskState
	}{
		{"a", "c1", stateCompleted}, {"b", "c2", stateWorking}, {"c", "c1", stateWorking},
		{"d", "c1", stateCompleted}, {"e", "c2", stateInputRequired},
	} {
		stamps[x.id] = clock.advance(time.Second)
		mustAddTask(t, s, storedTask(x.id, x.ctx, x.state))
	}
	after := func(id string) string { return stamps[id].Format(time.RFC3339Nano) }
	for _, tt := range []struct {
		name   string
		params string // JSON, as ListTasks reads it
		want   []string
	}{
		{"all, newest first", `{}`, []string{"e", "d", "c", "b", "a"}},
		{"contextId", `{"contextId":"c1"}`, []string{"d", "c", "a"}},
		{"unknown contextId", `{"contextId":"nope"}`, []string{}},
		{"status, v1.0 name", `{"status":"TASK_STATE_COMPLETED"}`, []string{"d", "a"}},
		{"status, v0.3 name", `{"status":"working"}`, []string{"c", "b"}},
		{"status and contextId", `{"status":"TASK_STATE_WORKING","contextId":"c2"}`, []string{"b"}},
		{"statusTimestampAfter, inclusive", `{"statusTimestampAfter":"` + after("c") + `"}`, []string{"e", "d", "c"}},
		{"statusTimestampAfter in another zone", `{"statusTimestampAfter":"` + stamps["d"].In(time.FixedZone("x", 3600)).Format(time.RFC3339Nano) + `"}`, []string{"e", "d"}},
		{"statusTimestampAfter past all", `{"statusTimestampAfter":"2030-01-01T00:00:00Z"}`, []string{}},
		{"everything", `{"contextId":"c1","status":"completed","statusTimestampAfter":"` + after("b") + `"}`, []string{"d"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p listParams
			if err := json.Unmarshal([]byte(tt.params), &p); err != nil {
				t.Fatal(err)
			}
			res := mustListTasks(t, s, p)
			if got := taskIDs(res.Tasks); !slices.Equal(got, tt.want) {
				t.Errorf("tasks = %v, want %v", got, tt.want)
			}
			if res.TotalSize != len(tt.want) || res.PageSize != 50 || res.NextPageToken != "" {
				t.Errorf("totalSize %d pageSize %d nextPageToken %q", res.TotalSize, res.PageSize, res.NextPageToken)
			}
			b, _ := json.Marshal(res)
			if !strings.Contains(string(b), `"tasks":[`) || !strings.Contains(string(b), `"nextPageToken":""`) {
				t.Errorf("result JSON %s", b)
			}
		})
	}

	// An update makes a task the newest.
	st, _ := s.get(t.Context(), "a")
	clock.advance(time.Second)
	s.update(st, func(*serverTask) *streamResponse { return nil })
	if got := taskIDs(mustListTasks(t, s, listParams{}).Tasks); !slices.Equal(got, []string{"a", "e", "d", "c", "b"}) {
		t.Errorf("after an update: %v", got)
	}
}

func TestTaskStoreListErrors(t *testing.T) {
	s := newTaskStore(10, newManualClock().now, nil, slog.New(slog.DiscardHandler))
	mustAddTask(t, s, storedTask("a", "c", stateWorking))
	for _, p := range []listParams{
		{PageSize: ptr(0)},
		{PageSize: ptr(101)},
		{PageSize: ptr(-1)},
		{StatusTimestampAfter: "yesterday"},
		{Status: stateUnspecified},
		{PageToken: "!!!"},
		{PageToken: base64.RawURLEncoding.EncodeToString([]byte("no colon"))},
		{PageToken: base64.RawURLEncoding.EncodeToString([]byte("x:id"))},
		{PageToken: "MTI6+/"},
		{PageToken: base64.RawURLEncoding.EncodeToString([]byte(":id"))},
	} {
		if _, err := s.list(t.Context(), "", p); err == nil || err.Code != codeInvalidParams {
			t.Errorf("list %+v: err = %v, want -32602", p, err)
		}
	}
	var p listParams
	if err := json.Unmarshal([]byte(`{"status":"bogus"}`), &p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.list(t.Context(), "", p); err == nil || err.Code != codeInvalidParams {
		t.Errorf("status bogus: err = %v", err)
	}
}

func TestTaskStoreListPageSize(t *testing.T) {
	clock := newManualClock()
	s := newTaskStore(1000, clock.now, nil, slog.New(slog.DiscardHandler))
	for i := range 120 {
		clock.advance(time.Millisecond)
		mustAddTask(t, s, storedTask(fmt.Sprintf("t%03d", i), "c", stateCompleted))
	}
	for _, tt := range []struct {
		size *int
		want int
	}{{nil, 50}, {ptr(1), 1}, {ptr(100), 100}, {ptr(7), 7}} {
		res := mustListTasks(t, s, listParams{PageSize: tt.size})
		if len(res.Tasks) != tt.want || res.PageSize != tt.want || res.TotalSize != 120 || res.NextPageToken == "" {
			t.Errorf("pageSize %v: %d tasks, pageSize %d, totalSize %d, token %q", tt.size, len(res.Tasks), res.PageSize, res.TotalSize, res.NextPageToken)
		}
		if res.Tasks[0].ID != "t119" {
			t.Errorf("pageSize %v: first %s, want the newest", tt.size, res.Tasks[0].ID)
		}
	}
}

func TestTaskStoreListPaging(t *testing.T) {
	clock := newManualClock()
	s := newTaskStore(1000, clock.now, nil, slog.New(slog.DiscardHandler))
	for i := range 23 {
		if i%3 == 0 {
			clock.advance(time.Second) // three tasks share each time stamp: the id breaks the tie
		}
		ctx := "even"
		if i%2 == 1 {
			ctx = "odd"
		}
		mustAddTask(t, s, storedTask(fmt.Sprintf("t%02d", i), ctx, stateCompleted))
	}
	for _, filter := range []listParams{{}, {ContextID: "odd"}} {
		all := taskIDs(mustListTasks(t, s, listParams{ContextID: filter.ContextID, PageSize: ptr(100)}).Tasks)
		for _, size := range []int{1, 2, 5, 11, 22, 23, 100} {
			var got []string
			p := filter
			p.PageSize = ptr(size)
			for page := 0; ; page++ {
				if page > len(all) {
					t.Fatalf("size %d: more pages than tasks", size)
				}
				res := mustListTasks(t, s, p)
				if res.TotalSize != len(all) {
					t.Errorf("size %d page %d: totalSize %d, want %d", size, page, res.TotalSize, len(all))
				}
				got = append(got, taskIDs(res.Tasks)...)
				if res.NextPageToken == "" {
					break
				}
				if len(res.Tasks) != size {
					t.Errorf("size %d page %d: %d tasks before the last page", size, page, len(res.Tasks))
				}
				p.PageToken = res.NextPageToken
			}
			if !slices.Equal(got, all) {
				t.Errorf("context %q size %d: pages gave %v, want %v", filter.ContextID, size, got, all)
			}
		}
	}
	// Newest first, ties by id, descending.
	want := []string{"t22", "t21", "t20", "t19", "t18"}
	if got := taskIDs(mustListTasks(t, s, listParams{PageSize: ptr(5)}).Tasks); !slices.Equal(got, want) {
		t.Errorf("first page %v, want %v", got, want)
	}
}

func TestTaskStoreListHistoryAndArtifacts(t *testing.T) {
	s := newTaskStore(10, newManualClock().now, nil, slog.New(slog.DiscardHandler))
	mustAddTask(t, s, storedTask("a", "c", stateCompleted))
	for _, tt := range []struct {
		name      string
		p         listParams
		history   int
		artifacts bool
	}{
		{"defaults", listParams{}, 3, false},
		{"historyLength 0", listParams{HistoryLength: ptr(0)}, 0, false},
		{"historyLength 2", listParams{HistoryLength: ptr(2)}, 2, false},
		{"historyLength past the history", listParams{HistoryLength: ptr(10)}, 3, false},
		{"includeArtifacts", listParams{IncludeArtifacts: true, HistoryLength: ptr(1)}, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := mustListTasks(t, s, tt.p)
			b, _ := json.Marshal(res.Tasks[0])
			var obj map[string]json.RawMessage
			_ = json.Unmarshal(b, &obj)
			_, hasHistory := obj["history"]
			_, hasArtifacts := obj["artifacts"]
			if hasHistory != (tt.history > 0) || hasArtifacts != tt.artifacts {
				t.Errorf("task JSON %s", b)
			}
			if h := res.Tasks[0].History; len(h) != tt.history || (len(h) > 0 && h[len(h)-1].MessageID != "a-m2") {
				t.Errorf("history %v, want the last %d", h, tt.history)
			}
		})
	}
	// The store's own task is not changed by what a listing leaves out.
	st, _ := s.get(t.Context(), "a")
	if snap := s.snapshot(st, nil); len(snap.History) != 3 || len(snap.Artifacts) != 1 {
		t.Errorf("snapshot after listing: %+v", snap)
	}
}

func TestTaskStoreEviction(t *testing.T) {
	clock := newManualClock()
	s := newTaskStore(3, clock.now, nil, slog.New(slog.DiscardHandler))
	for _, x := range []struct {
		id    string
		state taskState
	}{{"old-done", stateCompleted}, {"newer-done", stateFailed}, {"running", stateWorking}} {
		clock.advance(time.Second)
		mustAddTask(t, s, storedTask(x.id, "c", x.state))
	}
	clock.advance(time.Second)
	mustAddTask(t, s, storedTask("new", "c", stateSubmitted))
	if _, err := s.get(t.Context(), "old-done"); err == nil || err.Code != codeTaskNotFound {
		t.Errorf("the oldest finished task was kept (err %v)", err)
	}
	for _, id := range []string{"newer-done", "running", "new"} {
		if _, err := s.get(t.Context(), id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}

	// Oldest means least recently updated: a finished task updated since is kept over an older one.
	s = newTaskStore(3, clock.now, nil, slog.New(slog.DiscardHandler))
	for _, x := range []struct {
		id    string
		state taskState
	}{{"a", stateCompleted}, {"b", stateRejected}, {"r", stateWorking}} {
		clock.advance(time.Second)
		mustAddTask(t, s, storedTask(x.id, "c", x.state))
	}
	a, _ := s.get(t.Context(), "a")
	clock.advance(time.Second)
	s.update(a, func(*serverTask) *streamResponse { return nil })
	clock.advance(time.Second)
	mustAddTask(t, s, storedTask("n", "c", stateSubmitted))
	if _, err := s.get(t.Context(), "b"); err == nil {
		t.Error("b, the least recently updated finished task, was kept")
	}
	if _, err := s.get(t.Context(), "a"); err != nil {
		t.Errorf("a, updated since, was dropped: %v", err)
	}

	// Every task unfinished: a new one is refused, and nothing is dropped.
	full := newTaskStore(2, clock.now, nil, slog.New(slog.DiscardHandler))
	mustAddTask(t, full, storedTask("w1", "c", stateWorking))
	mustAddTask(t, full, storedTask("w2", "c", stateInputRequired))
	if err := full.add(storedTask("w3", "c", stateSubmitted)); err == nil {
		t.Fatal("a task was added past the limit with every task unfinished")
	}
	if res := mustListTasks(t, full, listParams{}); res.TotalSize != 2 {
		t.Errorf("tasks after a refused add: %v", taskIDs(res.Tasks))
	}
	// Once one finishes, there is room again.
	w1, _ := full.get(t.Context(), "w1")
	full.update(w1, func(st *serverTask) *streamResponse { st.t.Status.State = stateCanceled; return nil })
	mustAddTask(t, full, storedTask("w3", "c", stateSubmitted))
}

// drainEvents reads sub until its channel closes, bounded.
func drainEvents(t *testing.T, sub *subscriber) []*streamResponse {
	t.Helper()
	var out []*streamResponse
	testwait.Within(t, 10*time.Second, "the subscriber's channel to close", func() {
		for ev := range sub.events {
			out = append(out, ev)
		}
	})
	return out
}

func TestTaskStoreSubscribe(t *testing.T) {
	clock := newManualClock()
	s := newTaskStore(10, clock.now, nil, slog.New(slog.DiscardHandler))

	for _, state := range []taskState{stateCompleted, stateCanceled, stateInputRequired} {
		st := storedTask("f-"+string(state), "c", state)
		mustAddTask(t, s, st)
		evs := drainEvents(t, s.subscribe(st))
		if len(evs) != 1 || evs[0].Task == nil || evs[0].Task.Status.State != state || len(evs[0].Task.History) != 3 {
			t.Errorf("%s: events %s, want the snapshot alone", state, asJSON(evs))
		}
		s.unsubscribe(st, nil) // unknown: nothing to do
	}

	st := storedTask("live", "c", stateWorking)
	mustAddTask(t, s, st)
	sub := s.subscribe(st)
	s.update(st, func(*serverTask) *streamResponse { return nil }) // no event
	s.update(st, func(t *serverTask) *streamResponse {
		return &streamResponse{StatusUpdate: &statusUpdate{TaskID: t.id, Status: taskStatus{State: stateWorking}}}
	})
	s.update(st, func(t *serverTask) *streamResponse {
		t.t.Status.State = stateCompleted
		return &streamResponse{StatusUpdate: &statusUpdate{TaskID: t.id, Status: t.t.Status}}
	})
	evs := drainEvents(t, sub)
	if len(evs) != 3 || evs[0].Task == nil || evs[1].StatusUpdate == nil || evs[2].StatusUpdate.Status.State != stateCompleted {
		t.Errorf("events %s", asJSON(evs))
	}
	s.unsubscribe(st, sub) // already closed by the terminal state: no double close
	if len(st.subs) != 0 {
		t.Errorf("%d subscribers left", len(st.subs))
	}
}

func TestTaskStoreSlowSubscriber(t *testing.T) {
	s := newTaskStore(10, newManualClock().now, nil, slog.New(slog.DiscardHandler))
	st := storedTask("busy", "c", stateWorking)
	mustAddTask(t, s, st)
	slow := s.subscribe(st)
	n := 0
	event := func(t *serverTask) *streamResponse {
		n++
		return &streamResponse{ArtifactUpdate: &artifactUpdate{TaskID: t.id, Artifact: artifact{ArtifactID: fmt.Sprint(n)}}}
	}
	testwait.Within(t, 10*time.Second, "updates past a stalled subscriber", func() {
		for range subscriberBuffer + 10 {
			s.update(st, event)
		}
	})
	evs := drainEvents(t, slow) // closed: it was dropped
	if len(evs) != subscriberBuffer || evs[0].Task == nil {
		t.Errorf("the slow subscriber got %d events, want the %d its buffer holds", len(evs), subscriberBuffer)
	}
	for i, ev := range evs[1:] {
		if ev.ArtifactUpdate == nil || ev.ArtifactUpdate.Artifact.ArtifactID != fmt.Sprint(i+1) {
			t.Fatalf("event %d out of order: %s", i+1, asJSON(ev))
		}
	}
	if len(st.subs) != 0 {
		t.Errorf("the dropped subscriber is still listed")
	}
	s.unsubscribe(st, slow) // no double close

	// It may subscribe again, and hears what follows.
	again := s.subscribe(st)
	s.update(st, func(t *serverTask) *streamResponse {
		t.t.Status.State = stateFailed
		return &streamResponse{StatusUpdate: &statusUpdate{TaskID: t.id, Status: t.t.Status}}
	})
	if evs := drainEvents(t, again); len(evs) != 2 || evs[1].StatusUpdate == nil {
		t.Errorf("resubscribed: %s", asJSON(evs))
	}
}

func TestListCursor(t *testing.T) {
	c := listCursor{updated: time.Unix(1700000000, 123456789), id: "task:with:colons"}
	back, err := parseCursor(c.String())
	if err != nil || !back.updated.Equal(c.updated) || back.id != c.id {
		t.Errorf("cursor round trip: %+v, %v", back, err)
	}
	if got := timestamp(time.Date(2026, 3, 12, 10, 0, 0, 5e6, time.FixedZone("x", 3600))); got != "2026-03-12T09:00:00.005Z" {
		t.Errorf("timestamp = %q", got)
	}
}
