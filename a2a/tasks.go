package a2a

import (
	"container/list"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A served task is one run of the orchestrator. The store keeps the tasks in memory, bounded: when it is full, the
// oldest finished tasks go first, and a new task is refused when every kept task is still running.

// serverTask is one task of the server: its state as callers see it, the run behind it, and its listeners.
// Everything but the immutable fields is guarded by the store's lock.
type serverTask struct {
	id        string
	contextID string

	t       task // as callers see it; artifacts and history included
	updated time.Time
	cancel  context.CancelCauseFunc // ends the run
	done    chan struct{}           // closed when the run has ended
	subs    map[*subscriber]struct{}
	waiting *question // the question the run waits on, in INPUT_REQUIRED

	// The answer artifact as it streams: its text so far, and whether the next chunk starts it again (a new
	// iteration after text that turned out to come with tool calls).
	answerText  strings.Builder
	answerReset bool
	answerSent  bool

	finished *list.Element // its place in the store's finished list, while it is finished and kept
}

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
	max int
	now func() time.Time

	mu       sync.Mutex
	tasks    map[string]*serverTask
	finished *list.List // the kept tasks in a terminal state, least recently updated first
}

func newTaskStore(max int, now func() time.Time) *taskStore {
	return &taskStore{max: max, now: now, tasks: map[string]*serverTask{}, finished: list.New()}
}

// add keeps a new task, making room by dropping the least recently updated finished tasks.
func (s *taskStore) add(st *serverTask) *rpcError {
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

func (s *taskStore) get(id string) (*serverTask, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.tasks[id]
	if !ok {
		return nil, newError(codeTaskNotFound, "task %q not found", id)
	}
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
func (s *taskStore) update(st *serverTask, f func(t *serverTask) *streamResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := f(st)
	st.updated = s.now()
	s.touch(st)
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

// list returns the tasks that pass the filters, newest status first, a page at a time.
func (s *taskStore) list(p listParams) (*listResult, *rpcError) {
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

	s.mu.Lock()
	defer s.mu.Unlock()
	var match []*serverTask
	for _, st := range s.tasks {
		switch {
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
