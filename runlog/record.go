package runlog

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// maxResult is how much of a tool result's text an entry keeps.
const maxResult = 64 << 10

// maxPrompt is how much of the prompt a Summary shows, in characters.
const maxPrompt = 200

// chunk is how many entries a record allocates at once: entries are kept in chunks so that recording one never
// copies those before it.
const chunk = 256

// record is one root run, with the runs nested in it. Its entries are only ever appended: an entry recorded is never
// written again, so a reader that took the chunks and the count under the lock may read them without it.
type record struct {
	r       *Recorder
	content bool

	mu      sync.Mutex
	sum     Summary
	start   time.Time
	chunks  []*[chunk]Entry // entry seq n is chunks[(n-1)/chunk][(n-1)%chunk]
	n       int             // the entries recorded
	spans   int             // the spans numbered so far
	changed chan struct{}   // made by a follower that waits, closed (and dropped) by the next change
	ended   bool
	taken   bool // an expected record (see Expect) that a run has taken
}

// runSpan is a run within a record: the root run or a nested one.
type runSpan struct {
	rec    *record
	id     string
	parent string // "" for the root
	root   bool
	start  time.Time
	// Guarded by rec.mu:
	model string               // the span of the run's latest model call, which its text deltas belong to
	tools map[string]*toolSpan // by call id, from the call's first sighting to its tool_end
}

// toolSpan is a tool call of a run: its tool_start event and its StartToolCall (which may come in either order)
// find the same span by the call's id.
type toolSpan struct {
	span, parent string
	started      bool // its tool_start entry is recorded
}

// spanKey is the context key of a Recorder's spans; its value is a *spanRef.
type spanKey struct{ r *Recorder }

// spanRef is what a context carries: the run it belongs to and the span (the run's own, a model or a tool call's)
// it runs under.
type spanRef struct {
	run  *runSpan
	span string
}

// expectKey is the context key of an expected record (see Expect); its value is a *record.
type expectKey struct{ r *Recorder }

func (r *Recorder) ref(ctx context.Context) *spanRef {
	ref, _ := ctx.Value(spanKey{r}).(*spanRef)
	return ref
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand panics rather than return an error
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func modelName(m llm.Model) string {
	if d, ok := m.(llm.Describer); ok {
		return d.Describe().Name
	}
	return ""
}

// clip returns s cut to at most n bytes, on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func promptStart(s string) string {
	n := 0
	for i := range s {
		if n == maxPrompt {
			return s[:i]
		}
		n++
	}
	return s
}

// newSpan numbers a span of rec: "r1", "m2", "t3", ...
func (rec *record) newSpan(prefix byte) string {
	rec.spans++
	return fmt.Sprintf("%c%d", prefix, rec.spans)
}

// add appends e, numbered and timed, unless the record is full: then it is counted as dropped, unless always.
// rec.mu is held.
func (rec *record) add(now time.Time, e *Entry, always bool) {
	if rec.n >= rec.r.opts.MaxEntries && !always {
		rec.sum.Dropped++
		return
	}
	rec.n++
	e.Seq = rec.n
	e.AtMS = ms(now.Sub(rec.start))
	if rec.n%chunk == 1 {
		rec.chunks = append(rec.chunks, new([chunk]Entry))
	}
	rec.chunks[(rec.n-1)/chunk][(rec.n-1)%chunk] = *e
	rec.sum.Entries = rec.n
	rec.wake()
}

// wake tells the followers waiting that the record changed. rec.mu is held.
func (rec *record) wake() {
	if rec.changed != nil {
		close(rec.changed)
		rec.changed = nil
	}
}

// summary returns the record's summary and whether its run ended.
func (rec *record) summary() (Summary, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.sum, rec.ended
}

// tool returns the span of the call id of rs, numbering it at its first sighting. rec.mu is held.
func (rs *runSpan) tool(id, parent string) *toolSpan {
	if t, ok := rs.tools[id]; ok && id != "" {
		return t
	}
	p := rs.id
	if parent != "" {
		if pt, ok := rs.tools[parent]; ok {
			p = pt.span
		}
	}
	t := &toolSpan{span: rs.rec.newSpan('t'), parent: p}
	if id != "" {
		if rs.tools == nil {
			rs.tools = map[string]*toolSpan{}
		}
		rs.tools[id] = t
	}
	return t
}

// StartRun implements host.Observer. A run started under a context that carries one of r's spans (a sub-agent's,
// called as a tool) is recorded inside the run it nests in; any other is a root run of its own.
func (r *Recorder) StartRun(ctx context.Context, run *host.RunStart) (context.Context, func(*host.Answer, error)) {
	now := r.opts.Now()
	if ref := r.ref(ctx); ref != nil {
		rec := ref.run.rec
		rec.mu.Lock()
		rs := &runSpan{rec: rec, id: rec.newSpan('r'), parent: ref.span, start: now}
		e := &Entry{Kind: KindRunStart, Span: rs.id, Parent: ref.span, Agent: run.Agent,
			ConversationID: run.ConversationID, Model: modelName(run.Model)}
		if rec.content {
			e.Prompt = run.Prompt
		} else {
			e.Bytes = len(run.Prompt)
		}
		rec.add(now, e, false)
		rec.mu.Unlock()
		r.changed(rec)
		return context.WithValue(ctx, spanKey{r}, &spanRef{run: rs, span: rs.id}), func(ans *host.Answer, err error) {
			r.endRun(rs, ans, err)
		}
	}

	rec, _ := ctx.Value(expectKey{r}).(*record)
	origin := run.Origin
	if rec != nil {
		rec.mu.Lock()
		if rec.taken {
			rec.mu.Unlock()
			rec = nil
		} else {
			rec.taken = true
			origin = rec.sum.Origin
		}
	}
	if rec == nil {
		rec = &record{r: r}
		rec.mu.Lock()
		rec.sum = Summary{ID: newID(), Origin: origin, Subject: host.Subject(ctx)}
		rec.content = r.opts.Content(origin)
	}
	rs := &runSpan{rec: rec, id: rec.newSpan('r'), root: true, start: now}
	rec.start = now
	s := &rec.sum
	s.Agent, s.ConversationID, s.Model, s.Started, s.Status, s.Content = run.Agent, run.ConversationID, modelName(run.Model), now, StatusRunning, rec.content
	e := &Entry{Kind: KindRunStart, Span: rs.id, Agent: run.Agent, ConversationID: run.ConversationID, Model: s.Model}
	if rec.content {
		s.Prompt = promptStart(run.Prompt)
		e.Prompt = run.Prompt
	} else {
		e.Bytes = len(run.Prompt)
	}
	rec.add(now, e, false)
	fresh := !rec.taken
	rec.mu.Unlock()
	if fresh {
		r.keep(rec)
	}
	r.changed(rec)
	return context.WithValue(ctx, spanKey{r}, &spanRef{run: rs, span: rs.id}), func(ans *host.Answer, err error) {
		r.endRun(rs, ans, err)
	}
}

// keep adds a new record to the runs kept.
func (r *Recorder) keep(rec *record) {
	r.mu.Lock()
	r.runs = append(r.runs, rec)
	r.byID[rec.sum.ID] = rec // the id is never written again
	r.mu.Unlock()
	r.trim()
}

// trim drops the oldest ended runs past MaxRuns. Running runs are never dropped.
func (r *Recorder) trim() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; len(r.runs) > r.opts.MaxRuns && i < len(r.runs); {
		rec := r.runs[i]
		rec.mu.Lock()
		ended, id := rec.ended, rec.sum.ID
		rec.mu.Unlock()
		if !ended {
			i++
			continue
		}
		r.runs = slices.Delete(r.runs, i, i+1)
		delete(r.byID, id)
	}
}

// endRun records the answer and the end of rs.
func (r *Recorder) endRun(rs *runSpan, ans *host.Answer, err error) {
	now := r.opts.Now()
	rec := rs.rec
	end := &Entry{Kind: KindRunEnd, Span: rs.id, Parent: rs.parent, DurationMS: ms(now.Sub(rs.start))}
	switch {
	case ans != nil:
		end.StoppedBy = ans.StoppedBy
		u := ans.Usage
		end.Usage = &u
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		end.StoppedBy = host.StopCancelled
	default:
		end.StoppedBy = host.StopError
	}
	if err != nil {
		end.Error = err.Error()
	}
	root := rs.root
	rec.mu.Lock()
	if ans != nil {
		a := *ans
		if !rec.content {
			a.Text, a.Output = "", nil
		}
		rec.add(now, &Entry{Kind: KindAnswer, Span: rs.id, Parent: rs.parent, Answer: &a, Bytes: contentBytes(rec.content, len(ans.Text)+len(ans.Output))}, false)
	}
	rec.add(now, end, root)
	if root {
		t := now
		rec.sum.Ended, rec.sum.Status, rec.sum.Error, rec.ended = &t, Status(end.StoppedBy), end.Error, true
		rec.wake() // a follower past the last entry must see the end even if run_end was the entry it waited for
	}
	rec.mu.Unlock()
	r.changed(rec)
	if root {
		r.trim()
	}
}

// contentBytes is the Bytes of an entry: n when the content is not kept, 0 when it is.
func contentBytes(content bool, n int) int {
	if content {
		return 0
	}
	return n
}

// StartModelCall implements host.Observer.
func (r *Recorder) StartModelCall(ctx context.Context, call *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	ref := r.ref(ctx)
	if ref == nil {
		return ctx, func(*llm.Response, error) {}
	}
	rs, rec := ref.run, ref.run.rec
	now := r.opts.Now()
	e := &Entry{Kind: KindModelStart, Parent: ref.span, Model: modelName(call.Model), Iteration: call.Iteration}
	if call.Request != nil {
		e.Tools = len(call.Request.Tools)
		if rec.content {
			e.Messages = slices.Clone(call.Request.Messages)
		} else {
			for _, m := range call.Request.Messages {
				e.Bytes += len(m.Content)
				for _, tc := range m.ToolCalls {
					e.Bytes += len(tc.Arguments)
				}
			}
		}
	}
	rec.mu.Lock()
	span := rec.newSpan('m')
	rs.model, e.Span = span, span
	rec.add(now, e, false)
	rec.mu.Unlock()
	r.changed(rec)
	return context.WithValue(ctx, spanKey{r}, &spanRef{run: rs, span: span}), func(resp *llm.Response, err error) {
		end := r.opts.Now()
		e := &Entry{Kind: KindModelEnd, Span: span, Parent: ref.span, DurationMS: ms(end.Sub(now))}
		if err != nil {
			e.Error = err.Error()
		}
		if resp != nil {
			u := resp.Usage
			e.Usage, e.FinishReason = &u, resp.FinishReason
			if rec.content {
				e.Text, e.ToolCalls = resp.Message.Content, slices.Clone(resp.Message.ToolCalls)
			} else {
				e.Bytes = len(resp.Message.Content)
				for _, tc := range resp.Message.ToolCalls {
					e.Bytes += len(tc.Arguments)
				}
			}
		}
		rec.mu.Lock()
		rec.sum.ModelCalls++
		if resp != nil {
			rec.sum.Usage.Add(resp.Usage)
		}
		rec.add(end, e, false)
		rec.mu.Unlock()
		r.changed(rec)
	}
}

// StartToolCall implements host.Observer. It records nothing itself (the run's tool_start and tool_end events do,
// for calls that run and calls that do not alike): it returns ctx under the call's span, the one its entries have.
func (r *Recorder) StartToolCall(ctx context.Context, call *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	ref := r.ref(ctx)
	if ref == nil {
		return ctx, func(*host.Result, error) {}
	}
	rs := ref.run
	rs.rec.mu.Lock()
	t := rs.tool(call.CallID, call.ParentCallID)
	if !t.started {
		t.parent = ref.span // the span the call runs under is the one it nests in: a run_code call's for its script's
	}
	span := t.span
	rs.rec.mu.Unlock()
	return context.WithValue(ctx, spanKey{r}, &spanRef{run: rs, span: span}), func(*host.Result, error) {}
}

// ObserveEvent implements host.EventObserver.
func (r *Recorder) ObserveEvent(ctx context.Context, ev *host.Event) {
	ref := r.ref(ctx)
	if ref == nil {
		return
	}
	rs, rec := ref.run, ref.run.rec
	now := r.opts.Now()
	rec.mu.Lock()
	switch ev.Kind {
	case host.EventIteration:
		rec.add(now, &Entry{Kind: KindIteration, Span: rs.id, Parent: rs.parent, Iteration: ev.Iteration}, false)
	case host.EventTextDelta:
		e := &Entry{Kind: KindText, Span: rs.model, Parent: rs.id, Iteration: ev.Iteration}
		if e.Span == "" {
			e.Span, e.Parent = rs.id, rs.parent
		}
		if rec.content {
			e.Text = ev.Text
		} else {
			e.Bytes = len(ev.Text)
		}
		rec.add(now, e, false)
	case host.EventToolStart:
		if te := ev.ToolCall; te != nil {
			r.toolStart(now, rs, te, ev.Iteration)
		}
	case host.EventToolProgress:
		if te := ev.ToolCall; te != nil && te.Progress != nil {
			t := rs.tool(te.ID, te.Parent)
			p := *te.Progress
			rec.add(now, &Entry{Kind: KindToolProgress, Span: t.span, Parent: t.parent, Iteration: ev.Iteration, CallID: te.ID, Progress: &p}, false)
		}
	case host.EventToolEnd:
		if te := ev.ToolCall; te != nil {
			t := r.toolStart(now, rs, te, ev.Iteration)
			e := &Entry{Kind: KindToolEnd, Span: t.span, Parent: t.parent, Iteration: ev.Iteration, Name: te.Name, Source: te.Source, CallID: te.ID}
			if te.Info != nil {
				info := *te.Info
				e.Info, e.OK, e.Error, e.DurationMS = &info, &info.OK, info.Error, ms(info.Duration)
			}
			if res := te.Result; res != nil {
				if rec.content {
					e.Result = clip(res.Text, maxResult)
				} else {
					e.Bytes = len(res.Text) + len(res.Structured)
				}
			}
			if te.ID != "" {
				delete(rs.tools, te.ID)
			}
			rec.sum.ToolCalls++
			rec.add(now, e, false)
		}
	case host.EventCheck:
		if ev.Check != nil {
			c := *ev.Check
			rec.add(now, &Entry{Kind: KindCheck, Span: rs.id, Parent: rs.parent, Iteration: ev.Iteration, Check: &c}, false)
		}
	default: // the answer: StartRun's end function records it
		rec.mu.Unlock()
		return
	}
	rec.mu.Unlock()
	r.changed(rec)
}

// toolStart records the tool_start entry of te's call, unless it has one, and returns its span. A call that never
// ran (a duplicate, one not run, one denied approval) has no tool_start event: its tool_end gives it the entry.
// rec.mu is held.
func (r *Recorder) toolStart(now time.Time, rs *runSpan, te *host.ToolEvent, iteration int) *toolSpan {
	t := rs.tool(te.ID, te.Parent)
	if t.started {
		return t
	}
	t.started = true
	e := &Entry{Kind: KindToolStart, Span: t.span, Parent: t.parent, Iteration: iteration, Name: te.Name, Source: te.Source, CallID: te.ID}
	if rs.rec.content {
		e.Arguments = slices.Clone(te.Arguments)
	} else {
		e.Bytes = len(te.Arguments)
	}
	rs.rec.add(now, e, false)
	return t
}

// approval records a Waiting or its answer in the run of ctx.
func (r *Recorder) approval(ctx context.Context, e *Entry) {
	ref := r.ref(ctx)
	if ref == nil {
		return
	}
	rs, rec := ref.run, ref.run.rec
	e.Span, e.Parent = ref.span, rs.id
	if ref.span == rs.id {
		e.Parent = rs.parent
	}
	if w := e.Approval; w != nil {
		c := *w
		if !rec.content {
			e.Bytes = len(c.Arguments) + len(c.Message) + len(c.Schema)
			c.Arguments, c.Message, c.Schema = nil, "", nil
		}
		e.Approval, e.Name, e.Source = &c, c.Tool, c.Source
	}
	if a := e.Answered; a != nil {
		c := *a
		e.Answered = &c
	}
	now := r.opts.Now()
	rec.mu.Lock()
	rec.add(now, e, false)
	rec.mu.Unlock()
	r.changed(rec)
}

// Expect returns ctx marked so that the next root run started under it is recorded under the returned id, and
// makes that id known at once (a run with StatusRunning and no entries yet), so that a console can hand the id to
// its page, which follows it, before the run has started. The orchestrator calls StartRun for every run it is asked
// for, even one that cannot start, so the expected run always ends.
func (r *Recorder) Expect(ctx context.Context, origin string) (context.Context, string) {
	now := r.opts.Now()
	content := r.opts.Content(origin)
	rec := &record{r: r, content: content, start: now,
		sum: Summary{ID: newID(), Origin: origin, Subject: host.Subject(ctx), Started: now, Status: StatusRunning, Content: content}}
	r.keep(rec)
	r.changed(rec)
	return context.WithValue(ctx, expectKey{r}, rec), rec.sum.ID
}

// Runs returns the runs kept, newest first.
func (r *Recorder) Runs() []Summary {
	r.mu.Lock()
	recs := slices.Clone(r.runs)
	r.mu.Unlock()
	out := make([]Summary, 0, len(recs))
	for _, rec := range slices.Backward(recs) {
		s, _ := rec.summary()
		out = append(out, s)
	}
	return out
}

func (r *Recorder) lookup(id string) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// Run returns a run's summary and its entries from after (0 for all), or false when no such run is kept.
func (r *Recorder) Run(id string, after int) (Summary, []Entry, bool) {
	rec := r.lookup(id)
	if rec == nil {
		return Summary{}, nil, false
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []Entry
	entries(rec.chunks, after, rec.n, func(e *Entry) { out = append(out, *e) })
	return rec.sum, out, true
}

// entries calls fn with the entries of chunks after seq after up to seq n.
func entries(chunks []*[chunk]Entry, after, n int, fn func(*Entry)) {
	for i := max(after, 0); i < n; i++ {
		fn(&chunks[i/chunk][i%chunk])
	}
}

// Follow calls fn with the run's entries after seq after, those kept first, then each new one as it is recorded,
// until the run has ended and every entry was handed over (it returns nil) or ctx ends (it returns ctx's error). It
// returns an error at once when no such run is kept.
func (r *Recorder) Follow(ctx context.Context, id string, after int, fn func(Entry)) error {
	rec := r.lookup(id)
	if rec == nil {
		return fmt.Errorf("runlog: no run %q", id)
	}
	after = max(0, after)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec.mu.Lock()
		chunks, n := rec.chunks, rec.n // the entries up to n are never written again: read without the lock
		ended := rec.ended
		var changed chan struct{}
		if !ended {
			if rec.changed == nil {
				rec.changed = make(chan struct{})
			}
			changed = rec.changed
		}
		rec.mu.Unlock()
		entries(chunks, after, n, func(e *Entry) { fn(*e) })
		after = max(after, n)
		if ended {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
