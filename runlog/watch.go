package runlog

import (
	"context"
	"slices"
	"sync"
	"time"
)

// watchEvery is how often Watch reports a running run that keeps changing.
const watchEvery = 100 * time.Millisecond

// watcher is one Watch: the runs changed since it last looked, and a wake-up.
type watcher struct {
	mu    sync.Mutex
	dirty map[*record]struct{}
	wake  chan struct{} // buffered 1: a wake-up pending is enough
}

func (w *watcher) mark(rec *record) {
	w.mu.Lock()
	w.dirty[rec] = struct{}{}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// changed tells the watchers that rec changed. Without watchers it costs one atomic load.
func (r *Recorder) changed(rec *record) {
	if ws := r.watchers.Load(); ws != nil {
		for _, w := range *ws {
			w.mark(rec)
		}
	}
}

func (r *Recorder) setWatchers(edit func([]*watcher) []*watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ws []*watcher
	if p := r.watchers.Load(); p != nil {
		ws = slices.Clone(*p)
	}
	ws = edit(ws)
	r.watchers.Store(&ws)
}

// Watch calls fn with each run's summary as it starts, changes (at most every 100ms per run) and ends, until ctx
// ends; it blocks. fn must not block for long.
func (r *Recorder) Watch(ctx context.Context, fn func(Summary)) {
	w := &watcher{dirty: map[*record]struct{}{}, wake: make(chan struct{}, 1)}
	r.setWatchers(func(ws []*watcher) []*watcher { return append(ws, w) })
	defer r.setWatchers(func(ws []*watcher) []*watcher {
		return slices.DeleteFunc(ws, func(x *watcher) bool { return x == w })
	})

	// The runs reported and still running: when each was last reported, and whether it changed since.
	type state struct {
		sent    time.Time
		pending bool
	}
	states := map[*record]*state{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
		w.mu.Lock()
		dirty := w.dirty
		w.dirty = map[*record]struct{}{}
		w.mu.Unlock()
		for rec := range dirty {
			st := states[rec]
			if st == nil {
				st = &state{}
				states[rec] = st
			}
			st.pending = true
		}
		now := time.Now()
		next := time.Duration(-1)
		for rec, st := range states {
			if !st.pending {
				continue
			}
			sum, ended := rec.summary()
			if wait := watchEvery - now.Sub(st.sent); !st.sent.IsZero() && !ended && wait > 0 {
				if next < 0 || wait < next {
					next = wait
				}
				continue
			}
			if ctx.Err() != nil {
				return
			}
			fn(sum)
			st.sent, st.pending = now, false
			if ended {
				delete(states, rec)
			}
		}
		if next >= 0 {
			timer.Reset(next)
		}
	}
}
