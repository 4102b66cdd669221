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

// Watch calls fn with the summary of each run kept, newest first (as Runs gives them), then with each run's summary
// as it starts, changes (at most every 100ms per run) and ends, until ctx ends; it blocks. A run that changes while
// the first summaries are handed over is reported again after them, so nothing between a call of Runs and the start
// of Watch is missed. A run no longer kept (dropped past Options.MaxRuns) is reported once more, its last summary
// with Status StatusGone, and not after. fn must not block for long.
func (r *Recorder) Watch(ctx context.Context, fn func(Summary)) {
	wt := r.StartWatch()
	defer wt.Stop()
	wt.Run(ctx, fn)
}

// Watching is a Watch whose changes count from StartWatch on, before its Run: a front end that tells its client the
// watch is open before it runs the watch (by sending a stream's headers) misses no run dropped in between.
type Watching struct {
	r    *Recorder
	w    *watcher
	stop sync.Once
}

// StartWatch starts noting the runs that change. Run reports them; Stop, or the end of Run, ends the watch.
func (r *Recorder) StartWatch() *Watching {
	w := &watcher{dirty: map[*record]struct{}{}, wake: make(chan struct{}, 1)}
	r.setWatchers(func(ws []*watcher) []*watcher { return append(ws, w) })
	return &Watching{r: r, w: w}
}

// Stop ends the watch. It is idempotent.
func (wt *Watching) Stop() {
	wt.stop.Do(func() {
		wt.r.setWatchers(func(ws []*watcher) []*watcher {
			return slices.DeleteFunc(ws, func(x *watcher) bool { return x == wt.w })
		})
	})
}

// Run is Watch's body: it reports as Watch does, the runs that changed since StartWatch included, until ctx ends,
// and then stops the watch.
func (wt *Watching) Run(ctx context.Context, fn func(Summary)) {
	defer wt.Stop()
	r, w := wt.r, wt.w

	// The runs reported and still running: when each was last reported, and whether it changed since.
	type state struct {
		sent    time.Time
		pending bool
	}
	states := map[*record]*state{}

	// The runs kept, registered as watched first: a change from now on marks them dirty.
	r.mu.Lock()
	kept := slices.Clone(r.runs)
	r.mu.Unlock()
	sent := time.Now()
	for _, rec := range slices.Backward(kept) {
		if ctx.Err() != nil {
			return
		}
		sum, ended := rec.summary()
		fn(sum)
		if !ended {
			states[rec] = &state{sent: sent}
		}
	}
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
			sum, ended, gone := rec.watched()
			if gone {
				if ctx.Err() != nil {
					return
				}
				sum.Status = StatusGone
				fn(sum)
				delete(states, rec)
				continue
			}
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

// watched is the summary of rec, whether it ended, and whether it is no longer kept.
func (rec *record) watched() (Summary, bool, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.sum, rec.ended, rec.gone
}
