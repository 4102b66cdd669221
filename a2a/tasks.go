package a2a

import (
	"container/list"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
)

// A served task is one run of the orchestrator. The store keeps the tasks in memory, bounded: when it is full, the
// oldest finished tasks go first, and a new task is refused when every kept task is still running.

// serverTask is one task of the server: its state as callers see it, the run behind it, and its listeners.
// Everything but the immutable fields is guarded by the store's lock.
type serverTask struct {
	id        string
	contextID string
	// subject is who the task is for (ServerOptions.Caller): only that caller sees it.
	subject string

	t       task // as callers see it; artifacts and history included
	updated time.Time
	cancel  context.CancelCauseFunc // ends the run
	done    chan struct{}           // closed when the run has ended
	subs    map[*subscriber]struct{}
	waiting *question // the question the run waits on, in INPUT_REQUIRED

	// release gives back the task's place in ServerOptions.Sessions (nil for a task that took none): finish calls
	// it just before the final state is published, so that a caller told the task ended may send the next one at
	// once. Calls after the first do nothing (httpedge.Sessions.Open).
	release func()

	// The answer artifact as it streams: its text so far, and whether the next chunk starts it again (a new
	// iteration after text that turned out to come with tool calls).
	answerText  strings.Builder
	answerReset bool
	answerSent  bool

	finished *list.Element // its place in the store's finished list, while it is finished and kept

	// What was last saved to the TaskStore, to save again only when the state or the history changes.
	version      int64
	savedState   taskState
	savedHistory int
	updating     sync.Mutex // held by an update from its change to its events, so that they keep their order
	// stored marks a task read back from the TaskStore: one of an earlier process or of another replica, which
	// has no run here to cancel, answer or listen to.
	stored bool
}

// TaskStore keeps a Server's tasks beyond its process, so that GetTask and ListTasks answer for the tasks of an
// earlier process (after a restart) and of other replicas sharing the store, and carries the requests of other
// replicas to the process that runs a task (see remote.go). The Server saves a task when it is
// created and whenever its state or history changes (not for each streamed chunk of its answer: the answer is in
// the save of the state that ends the task). Implementations must be safe for concurrent use.
type TaskStore interface {
	// SaveTask inserts or replaces a task, unless the store has a later Version of it.
	SaveTask(ctx context.Context, t *StoredTask) error
	// LoadTask returns the task id, or nil and no error when the store has none.
	LoadTask(ctx context.Context, id string) (*StoredTask, error)
	// ListTasks returns the tasks q selects, most recently updated first (ties by id, descending), and how many
	// match in all, the cursor aside.
	ListTasks(ctx context.Context, q TaskQuery) ([]*StoredTask, int, error)
	// Signal leaves a request for the process that runs the task taskID.
	Signal(ctx context.Context, taskID, kind string, body json.RawMessage) error
	// TakeSignals returns the requests left for the tasks taskIDs, oldest first, and deletes them; a signal's
	// Target is its task's id.
	TakeSignals(ctx context.Context, taskIDs []string) ([]host.RunSignal, error)
	// Orphans returns the unfinished tasks of owner whose runs were not durable.
	Orphans(ctx context.Context, owner string) ([]*StoredTask, error)
}

// StoredTask is a task as a TaskStore keeps it: the fields it filters and orders on, and the task as callers see it
// (JSON, in the protocol's version 1.0 shape), which the store need not read.
type StoredTask struct {
	ID, ContextID, State string
	Terminal             bool
	Updated              time.Time
	Version              int64
	Task                 json.RawMessage
	// Owner names the process that runs the task; Durable says its run survives that process.
	Owner   string
	Durable bool
	// Subject is who the task is for (ServerOptions.Caller); "" when callers are not told apart.
	Subject string
}

// TaskQuery selects tasks for TaskStore.ListTasks. Zero fields do not filter, but Subject: only the tasks of that
// subject are listed ("" for those of callers that are not told apart).
type TaskQuery struct {
	Subject      string
	ContextID    string
	State        string
	UpdatedAfter time.Time
	// AfterUpdated and AfterID, when AfterID is set, continue a listing after that task.
	AfterUpdated time.Time
	AfterID      string
	// Limit bounds the tasks returned; 0 means all.
	Limit int
}

// saveTimeout bounds one save to the TaskStore. Saves happen also when the run was cancelled.
const saveTimeout = 10 * time.Second

// subscriber is one stream listening to a task. Its channel is closed when the task reaches a terminal or
// interrupted state, or when the listener falls too far behind (it may subscribe again).
type subscriber struct {
	events chan *streamResponse
	// endOnly marks a listener that waits for the end alone (a blocking send): it is sent no event, so it is never
	// dropped, and its unbuffered channel is closed when a stream's would be.
	endOnly bool
}

// subscriberBuffer is how many events a stream may fall behind before it is dropped.
const subscriberBuffer = 1024

type taskStore struct {
	max     int
	now     func() time.Time
	persist TaskStore // nil: memory only
	owner   string    // this process, in the tasks it saves
	durable bool      // the runs of its tasks survive it
	logger  *slog.Logger

	mu       sync.Mutex
	tasks    map[string]*serverTask
	finished *list.List // the kept tasks in a terminal state, least recently updated first
}

func newTaskStore(max int, now func() time.Time, persist TaskStore, logger *slog.Logger) *taskStore {
	return &taskStore{max: max, now: now, persist: persist, logger: logger, tasks: map[string]*serverTask{}, finished: list.New()}
}

// saveLocked returns the record to save for st when its state or history changed since the last save, else nil.
func (s *taskStore) saveLocked(st *serverTask) *StoredTask {
	if s.persist == nil || st.stored || (st.version > 0 && st.t.Status.State == st.savedState && len(st.t.History) == st.savedHistory) {
		return nil
	}
	body, err := json.Marshal(copyTask(st.t, nil, true))
	if err != nil { // plain data: cannot happen
		s.logger.Error("a2a: encoding a task to save it", "task", st.id, "err", err)
		return nil
	}
	st.version++
	st.savedState, st.savedHistory = st.t.Status.State, len(st.t.History)
	state := st.t.Status.State
	return &StoredTask{ID: st.id, ContextID: st.contextID, State: string(state), Terminal: state.terminal(),
		Updated: st.updated, Version: st.version, Task: body, Owner: s.owner, Durable: s.durable, Subject: st.subject}
}

// save writes rec, if any, to the TaskStore. A failure is logged: the task goes on in memory.
func (s *taskStore) save(rec *StoredTask) {
	if rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := s.persist.SaveTask(ctx, rec); err != nil {
		s.logger.Warn("a2a: saving a task failed; it is kept in memory only", "task", rec.ID, "state", rec.State, "err", err)
	}
}

// add keeps a new task, making room by dropping the least recently updated finished tasks.
func (s *taskStore) add(st *serverTask) *rpcError {
	var rec *StoredTask
	defer func() { s.save(rec) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	// The finished list is in the order of the tasks' last update, so the front is the one to drop. (Sorting the
	// finished tasks on every add of a full store took a third of a request's CPU.)
	for len(s.tasks) >= s.max {
		front := s.finished.Front()
		if front == nil {
			return newError(codeInternal, "the server has %d unfinished tasks, its limit; try again later", s.max)
		}
		oldest := s.finished.Remove(front).(*serverTask)
		oldest.finished = nil
		delete(s.tasks, oldest.id)
	}
	st.updated = s.now()
	s.tasks[st.id] = st
	s.touch(st)
	rec = s.saveLocked(st)
	return nil
}

// touch keeps st's place in the finished list after an update: at the back while it is finished, out of the list
// otherwise. A task no longer kept stays out.
func (s *taskStore) touch(st *serverTask) {
	switch {
	case !st.t.Status.State.terminal() || s.tasks[st.id] != st:
		if st.finished != nil {
			s.finished.Remove(st.finished)
			st.finished = nil
		}
	case st.finished == nil:
		st.finished = s.finished.PushBack(st)
	default:
		s.finished.MoveToBack(st.finished)
	}
}

// get returns the task id: a task of this process, else one the TaskStore has (marked stored).
func (s *taskStore) get(ctx context.Context, id string) (*serverTask, *rpcError) {
	s.mu.Lock()
	st, ok := s.tasks[id]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	if s.persist != nil {
		rec, err := s.persist.LoadTask(ctx, id)
		if err != nil {
			s.logger.Warn("a2a: loading a task failed", "task", id, "err", err)
			return nil, newError(codeInternal, "task %q could not be read from the state database", id)
		}
		if rec != nil {
			return fromStored(rec)
		}
	}
	return nil, newError(codeTaskNotFound, "task %q not found", id)
}

// getFor returns the task id when it is subject's: another caller's task is not found, as if it did not exist.
func (s *taskStore) getFor(ctx context.Context, subject, id string) (*serverTask, *rpcError) {
	st, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if st.subject != subject {
		return nil, newError(codeTaskNotFound, "task %q not found", id)
	}
	return st, nil
}

// waitingIn returns the tasks of subject in contextID that wait in INPUT_REQUIRED, this process's and, with a
// TaskStore, the others' (at most a few: enough to tell one from several).
func (s *taskStore) waitingIn(ctx context.Context, subject, contextID string) ([]*serverTask, *rpcError) {
	const enough = 5
	var waiting []*serverTask
	s.mu.Lock()
	for _, st := range s.tasks {
		if st.contextID == contextID && st.subject == subject && st.t.Status.State == stateInputRequired && len(waiting) < enough {
			waiting = append(waiting, st)
		}
	}
	s.mu.Unlock()
	if s.persist == nil {
		return waiting, nil
	}
	recs, _, err := s.persist.ListTasks(ctx, TaskQuery{Subject: subject, ContextID: contextID, State: string(stateInputRequired), Limit: enough})
	if err != nil {
		s.logger.Warn("a2a: listing the tasks waiting for input failed", "context", contextID, "err", err)
		return nil, newError(codeInternal, "the tasks of context %q could not be read from the state database", contextID)
	}
	for _, rec := range recs {
		if slices.ContainsFunc(waiting, func(st *serverTask) bool { return st.id == rec.ID }) {
			continue // this process's: its state in memory is the newer
		}
		s.mu.Lock()
		_, mine := s.tasks[rec.ID]
		s.mu.Unlock()
		if mine {
			continue // this process's, and no longer waiting
		}
		st, perr := fromStored(rec)
		if perr != nil {
			return nil, perr
		}
		waiting = append(waiting, st)
	}
	slices.SortFunc(waiting, func(a, b *serverTask) int { return strings.Compare(a.id, b.id) })
	return waiting, nil
}

// fromStored makes a task read back from the TaskStore.
func fromStored(rec *StoredTask) (*serverTask, *rpcError) {
	st := &serverTask{id: rec.ID, contextID: rec.ContextID, subject: rec.Subject, updated: rec.Updated, stored: true, done: make(chan struct{}), version: rec.Version}
	close(st.done)
	if err := json.Unmarshal(rec.Task, &st.t); err != nil {
		return nil, newError(codeInternal, "task %q in the state database is unreadable: %v", rec.ID, err)
	}
	st.savedState, st.savedHistory = st.t.Status.State, len(st.t.History)
	return st, nil
}

// snapshot returns a copy of the task as callers see it, with at most historyLength messages of history (nil: all;
// 0: none).
func (s *taskStore) snapshot(st *serverTask, historyLength *int) task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyTask(st.t, historyLength, true)
}

func copyTask(t task, historyLength *int, artifacts bool) task {
	out := t
	out.Artifacts = nil
	if artifacts {
		for _, a := range t.Artifacts {
			a.Parts = slices.Clone(a.Parts)
			out.Artifacts = append(out.Artifacts, a)
		}
	}
	h := t.History
	if historyLength != nil {
		n := max(*historyLength, 0)
		h = h[max(len(h)-n, 0):]
	}
	out.History = slices.Clone(h)
	if len(out.History) == 0 {
		out.History = nil
	}
	return out
}

// update changes the task under the lock with f, stamps it, and sends the event f returns (if any) to its
// subscribers. A terminal or interrupted state ends the subscribers' streams after the event.
//
// A change that the TaskStore must keep is saved before anyone hears of it (a caller that learns of a state from
// one replica finds it on the others), outside the store's lock, the updates of the task waiting in turn.
func (s *taskStore) update(st *serverTask, f func(t *serverTask) *streamResponse) {
	st.updating.Lock()
	defer st.updating.Unlock()
	s.mu.Lock()
	ev := f(st)
	st.updated = s.now()
	s.touch(st)
	if rec := s.saveLocked(st); rec != nil {
		s.mu.Unlock()
		s.save(rec)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if ev == nil {
		return
	}
	last := st.t.Status.State.terminal() || st.t.Status.State.interrupted()
	for sub := range st.subs {
		if sub.endOnly {
			if last {
				delete(st.subs, sub)
				close(sub.events)
			}
			continue
		}
		select {
		case sub.events <- ev:
		default:
			// The listener fell behind: its stream ends, and it can subscribe again.
			delete(st.subs, sub)
			close(sub.events)
			continue
		}
		if last {
			delete(st.subs, sub)
			close(sub.events)
		}
	}
}

// subscribe adds a listener. Its first event is the task as it is now; when the task is already terminal or
// interrupted, that is its only event.
func (s *taskStore) subscribe(st *serverTask) *subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := &subscriber{events: make(chan *streamResponse, subscriberBuffer)}
	snap := copyTask(st.t, nil, true)
	sub.events <- &streamResponse{Task: &snap}
	if st.t.Status.State.terminal() || st.t.Status.State.interrupted() {
		close(sub.events)
		return sub
	}
	if st.subs == nil {
		st.subs = map[*subscriber]struct{}{}
	}
	st.subs[sub] = struct{}{}
	return sub
}

// await adds a listener told of the end alone: its channel is closed when the task reaches a terminal or
// interrupted state, at once when it is in one.
func (s *taskStore) await(st *serverTask) *subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := &subscriber{events: make(chan *streamResponse), endOnly: true}
	if st.t.Status.State.terminal() || st.t.Status.State.interrupted() {
		close(sub.events)
		return sub
	}
	if st.subs == nil {
		st.subs = map[*subscriber]struct{}{}
	}
	st.subs[sub] = struct{}{}
	return sub
}

func (s *taskStore) unsubscribe(st *serverTask, sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := st.subs[sub]; ok {
		delete(st.subs, sub)
		close(sub.events)
	}
}

// list returns the tasks that pass the filters, newest status first, a page at a time: from the TaskStore when
// there is one (it has every task, of this process and of others), else from memory.
func (s *taskStore) list(ctx context.Context, subject string, p listParams) (*listResult, *rpcError) {
	size := 50
	if p.PageSize != nil {
		size = *p.PageSize
		if size < 1 || size > 100 {
			return nil, newError(codeInvalidParams, "pageSize must be between 1 and 100 (got %d)", size)
		}
	}
	var after time.Time
	if p.StatusTimestampAfter != "" {
		t, err := time.Parse(time.RFC3339Nano, p.StatusTimestampAfter)
		if err != nil {
			return nil, newError(codeInvalidParams, "statusTimestampAfter %q is not an ISO-8601 time", p.StatusTimestampAfter)
		}
		after = t
	}
	if p.Status != "" && p.Status == stateUnspecified {
		return nil, newError(codeInvalidParams, "status is not a task state")
	}
	var cursor *listCursor
	if p.PageToken != "" {
		c, err := parseCursor(p.PageToken)
		if err != nil {
			return nil, newError(codeInvalidParams, "pageToken is not one this server gave")
		}
		cursor = c
	}
	if s.persist != nil {
		return s.listStored(ctx, subject, p, size, after, cursor)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var match []*serverTask
	for _, st := range s.tasks {
		switch {
		case st.subject != subject:
		case p.ContextID != "" && st.contextID != p.ContextID:
		case p.Status != "" && st.t.Status.State != p.Status:
		case !after.IsZero() && st.updated.Before(after):
		default:
			match = append(match, st)
		}
	}
	newestFirst := func(a, b *serverTask) bool {
		if !a.updated.Equal(b.updated) {
			return a.updated.After(b.updated)
		}
		return a.id > b.id
	}
	sort.Slice(match, func(i, j int) bool { return newestFirst(match[i], match[j]) })
	start := 0
	if cursor != nil {
		start = sort.Search(len(match), func(i int) bool {
			m := match[i]
			return m.updated.Before(cursor.updated) || (m.updated.Equal(cursor.updated) && m.id < cursor.id)
		})
	}
	end := min(start+size, len(match))
	res := &listResult{Tasks: []task{}, PageSize: size, TotalSize: len(match)}
	for _, st := range match[start:end] {
		res.Tasks = append(res.Tasks, copyTask(st.t, p.HistoryLength, p.IncludeArtifacts))
	}
	if end < len(match) {
		last := match[end-1]
		res.NextPageToken = listCursor{updated: last.updated, id: last.id}.String()
	}
	return res, nil
}

func (s *taskStore) listStored(ctx context.Context, subject string, p listParams, size int, after time.Time, cursor *listCursor) (*listResult, *rpcError) {
	q := TaskQuery{Subject: subject, ContextID: p.ContextID, State: string(p.Status), UpdatedAfter: after, Limit: size + 1}
	if cursor != nil {
		q.AfterUpdated, q.AfterID = cursor.updated, cursor.id
	}
	recs, total, err := s.persist.ListTasks(ctx, q)
	if err != nil {
		s.logger.Warn("a2a: listing tasks failed", "err", err)
		return nil, newError(codeInternal, "the tasks could not be read from the state database")
	}
	res := &listResult{Tasks: []task{}, PageSize: size, TotalSize: total}
	for i, rec := range recs {
		if i == size {
			last := recs[size-1]
			res.NextPageToken = listCursor{updated: last.Updated, id: last.ID}.String()
			break
		}
		st, perr := fromStored(rec)
		if perr != nil {
			return nil, perr
		}
		res.Tasks = append(res.Tasks, copyTask(st.t, p.HistoryLength, p.IncludeArtifacts))
	}
	return res, nil
}

// listCursor is where a page of ListTasks ended: the last task's status time and id.
type listCursor struct {
	updated time.Time
	id      string
}

func (c listCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.updated.UnixNano(), 10) + ":" + c.id))
}

func parseCursor(s string) (*listCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	ns, id, ok := strings.Cut(string(b), ":")
	if !ok {
		return nil, fmt.Errorf("bad cursor")
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return nil, err
	}
	return &listCursor{updated: time.Unix(0, n), id: id}, nil
}

// timestamp writes t as the protocol does: ISO-8601 UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
