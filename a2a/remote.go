package a2a

import (
	"context"
	"encoding/json"
	"reflect"
	"time"
)

// A task runs in the process that created it. The other processes sharing its TaskStore (replicas) read it from
// the store; to cancel it or answer its question they leave a signal in the store, which the running process takes
// (watchSignals); to stream it they follow its saved states (follow).

// The kinds of signals.
const (
	signalCancel = "cancel"
	signalAnswer = "answer"
)

// signalInterval is how often a process looks for signals to the tasks it runs, and a follower for a task's new
// state: what a cancel or an answer through another replica waits at most before it is seen.
const signalInterval = 200 * time.Millisecond

// remoteWait bounds how long a cancel through another replica waits for the task to be canceled.
const remoteWait = 30 * time.Second

// watchSignals takes the signals left for the tasks this process runs, until the server closes.
func (s *Server) watchSignals() {
	t := time.NewTicker(signalInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.takeSignals()
	}
}

func (s *Server) takeSignals() {
	s.store.mu.Lock()
	var ids []string
	for id, st := range s.store.tasks {
		if !st.stored && !st.t.Status.State.terminal() {
			ids = append(ids, id)
		}
	}
	s.store.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	sigs, err := s.store.persist.TakeSignals(s.ctx, ids)
	if err != nil {
		s.logger.Warn("a2a: reading the signals to the tasks failed", "err", err)
		return
	}
	for _, sig := range sigs {
		s.store.mu.Lock()
		st := s.store.tasks[sig.Target]
		s.store.mu.Unlock()
		if st == nil {
			continue
		}
		switch sig.Kind {
		case signalCancel:
			s.logger.Info("a2a: task canceled through another process", "task", st.id)
			st.cancel(errCanceledByCaller)
		case signalAnswer:
			var m message
			if err := json.Unmarshal(sig.Body, &m); err != nil {
				s.logger.Warn("a2a: an answer through another process is unreadable", "task", st.id, "err", err)
				continue
			}
			_, sub, rerr := s.answer(s.ctx, st, m, true)
			if rerr != nil {
				s.logger.Warn("a2a: an answer through another process was refused", "task", st.id, "err", rerr.Message)
				continue
			}
			s.store.unsubscribe(st, sub)
		}
	}
}

// signal leaves a request for the process that runs st.
func (s *Server) signal(ctx context.Context, st *serverTask, kind string, body any) *rpcError {
	b, err := json.Marshal(body)
	if err == nil {
		err = s.store.persist.Signal(ctx, st.id, kind, b)
	}
	if err != nil {
		s.logger.Warn("a2a: signalling a task's process failed", "task", st.id, "kind", kind, "err", err)
		return newError(codeInternal, "task %q runs in another agenthost process, which could not be reached through the state database", st.id)
	}
	return nil
}

// cancelRemote cancels a task another process runs, and waits until it is canceled.
func (s *Server) cancelRemote(ctx context.Context, st *serverTask) *rpcError {
	if err := s.signal(ctx, st, signalCancel, struct{}{}); err != nil {
		return err
	}
	sub := s.follow(ctx, st, true, nil)
	if waitDone(ctx, sub) != nil {
		return newError(codeInternal, "the caller went away before the task was canceled")
	}
	if state := s.store.snapshot(st, ptr(0)).Status.State; !state.terminal() {
		return newError(codeInternal, "task %q runs in another agenthost process, which did not cancel it within %s", st.id, remoteWait)
	}
	return nil
}

// follow follows a task another process runs, from its saved states, until it is in a terminal or interrupted state
// (past the states skip says to go past), ctx ends, or, for a cancel, remoteWait has passed. It keeps st as it
// finds it. A follower for a stream gets the task first, then an artifact update for each artifact that changed and
// a status update for each change of state; one with endOnly gets no event.
func (s *Server) follow(ctx context.Context, st *serverTask, endOnly bool, skip func(task) bool) *subscriber {
	sub := &subscriber{events: make(chan *streamResponse, subscriberBuffer), endOnly: endOnly}
	last := s.store.snapshot(st, nil)
	if !endOnly {
		sub.events <- &streamResponse{Task: &last}
	}
	go func() {
		defer close(sub.events)
		t := time.NewTicker(signalInterval)
		defer t.Stop()
		limit := time.After(remoteWait)
		if !endOnly || skip != nil {
			limit = nil // a stream, or an answer, lasts as long as the task
		}
		version := st.version
		for {
			if state := last.Status.State; (state.terminal() || state.interrupted()) && (skip == nil || !skip(last)) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-limit:
				return
			case <-t.C:
			}
			rec, err := s.store.persist.LoadTask(ctx, st.id)
			if err != nil || rec == nil || rec.Version <= version {
				continue
			}
			next, rerr := fromStored(rec)
			if rerr != nil {
				continue
			}
			version = rec.Version
			s.store.mu.Lock()
			st.t, st.updated, st.version = next.t, next.updated, next.version
			s.store.mu.Unlock()
			if !endOnly {
				for _, ev := range changes(last, next.t) {
					sub.events <- ev
				}
			}
			last = next.t
		}
	}()
	return sub
}

// changes returns the events that take a follower from task a to task b: the artifacts that changed, whole, then
// the status when it changed.
func changes(a, b task) []*streamResponse {
	var out []*streamResponse
	old := map[string]artifact{}
	for _, art := range a.Artifacts {
		old[art.ArtifactID] = art
	}
	for _, art := range b.Artifacts {
		if prev, ok := old[art.ArtifactID]; ok && reflect.DeepEqual(prev, art) {
			continue
		}
		out = append(out, &streamResponse{ArtifactUpdate: &artifactUpdate{TaskID: b.ID, ContextID: b.ContextID, Artifact: art, LastChunk: true}})
	}
	if !reflect.DeepEqual(a.Status, b.Status) {
		state := b.Status.State
		out = append(out, &streamResponse{StatusUpdate: &statusUpdate{TaskID: b.ID, ContextID: b.ContextID, Status: b.Status,
			Final: state.terminal() || state.interrupted()}})
	}
	return out
}

// orphanMessage is the status message of a task whose process stopped before it finished and whose run was not
// durable.
const orphanMessage = "The task was interrupted: the agenthost process running it stopped before it finished. Send the message again."

// FailOrphans fails the unfinished tasks that an earlier process of this Owner left in the TaskStore and that
// nothing will resume (their runs were not durable), so that their callers learn they are over. It returns how many
// it failed.
func (s *Server) FailOrphans(ctx context.Context) (int, error) {
	if s.store.persist == nil {
		return 0, nil
	}
	orphans, err := s.store.persist.Orphans(ctx, s.opts.Owner)
	if err != nil {
		return 0, err
	}
	for _, rec := range orphans {
		st, rerr := fromStored(rec)
		if rerr != nil {
			s.logger.Warn("a2a: an orphaned task is unreadable", "task", rec.ID, "err", rerr.Message)
			continue
		}
		msg := agentText(st, orphanMessage)
		st.t.Status = taskStatus{State: stateFailed, Message: msg, Timestamp: timestamp(s.opts.now())}
		st.t.History = append(st.t.History, *msg)
		body, err := json.Marshal(st.t)
		if err != nil {
			return 0, err
		}
		if err := s.store.persist.SaveTask(ctx, &StoredTask{ID: rec.ID, ContextID: rec.ContextID, State: string(stateFailed), Terminal: true,
			Updated: s.opts.now(), Version: rec.Version + 1, Task: body, Owner: rec.Owner}); err != nil {
			return 0, err
		}
	}
	if len(orphans) > 0 {
		s.logger.Warn("a2a: tasks left unfinished by an earlier process failed", "tasks", len(orphans))
	}
	return len(orphans), nil
}
