package runlog

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// maxContent is how many bytes of each piece of content an entry keeps: the prompt, arguments, a result's text, a
// message's content. Past it the piece is clipped (see clipText and clipJSON).
const maxContent = 64 << 10

// maxPrompt is how much of the prompt a Summary shows, in characters.
const maxPrompt = 200

// Entries are kept in chunks so that recording one never copies those before it: the first chunk holds
// firstChunk entries, each next one twice as many as the one before, up to chunk; so a short run costs little.
const (
	firstChunk = 16
	chunk      = 256
)

// lateGrace is how long a follower waits, after the root run ended, for the runs nested in it that have not ended
// yet (a sub-agent call abandoned by a cancelled round): then the record is closed. Recorder.lateGrace is it but in
// tests.
const lateGrace = 30 * time.Second

// record is one root run, with the runs nested in it. Its entries are only ever appended: an entry recorded is never
// written again, so a reader that took the chunks and the count under the lock may read them without it.
type record struct {
	r       *Recorder
	content bool

	mu      sync.Mutex
	sum     Summary
	start   time.Time
	chunks  [][]Entry     // see locate
	n       int           // the entries recorded
	spans   int           // the spans numbered so far
	changed chan struct{} // made by a follower that waits, closed (and dropped) by the next change
	// ended says the root run ended (the summary is final but for the entries of late nested runs); complete that
	// every run nested in it that started has ended too, or that a follower gave up waiting for them (lateGrace):
	// nothing is recorded after. endedAt is when the root ended.
	ended, complete bool
	endedAt         time.Time
	nested          int                 // the nested runs started and not ended
	open            map[string]struct{} // the spans whose start entry is kept and whose end has not come
	taken           bool                // an expected record (see Expect) that a run has taken, or that was abandoned
	gone            bool                // dropped from the runs kept (trim): Watch reports it StatusGone
	stopExpect      func() bool         // stops the AfterFunc of an expected record
}

// runSpan is a run within a record: the root run or a nested one.
type runSpan struct {
	rec    *record
	id     string
	parent string // "" for the root
	root   bool
	start  time.Time
	// Guarded by rec.mu:
	model string               // the span of the run's model call going, which its text deltas belong to
	tools map[string]*toolSpan // by call id, from the call's first sighting to its tool_end
	// shown are the calls whose error a record without content shows: those that could not happen (a Go error,
	// no result), whose error is the host's, not the tool's text.
	shown map[callKey]struct{}
	// sent are the messages of the run's last model call as cloneSent knows them again, and sentClone the copies its
	// model_start entry keeps. Both are dropped when the run ends.
	sent      []sentMessage
	sentClone []llm.Message
}

// callKey is a tool call of a run: model call ids are only unique within an iteration.
type callKey struct {
	iteration int
	id        string
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

// clipText returns s, or when it is longer than maxContent its start followed by "…[clipped N bytes]", in a string
// of its own (so that the whole of s is not kept alive).
func clipText(s string) string {
	if len(s) <= maxContent {
		return s
	}
	c := clip(s, maxContent)
	return c + fmt.Sprintf("…[clipped %d bytes]", len(s)-len(c))
}

// clipJSON returns a copy of raw, or when it is longer than maxContent a JSON string of its start clipped as
// clipText does: JSON still, but no longer the value.
func clipJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) <= maxContent {
		return slices.Clone(raw)
	}
	b, _ := json.Marshal(clipText(string(raw))) // a string always marshals
	return b
}

// cloneSent returns a copy of the messages of a model call of rs for its model_start entry, each content and tool
// call's arguments clipped (the orchestrator reuses its slices). A message the run's previous model call sent at the
// same place is the copy kept then: each call sends the conversation so far again, and a clipped piece is a string
// of its own, so cloning every message of every call would keep memory growing with the square of the run's length.
// Only the slices of the entries grow with it. rec.mu must be held.
func (rs *runSpan) cloneSent(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	sent := make([]sentMessage, len(msgs))
	for i, m := range msgs {
		sent[i] = sentOf(&m)
		if i < len(rs.sent) && sent[i].equal(&rs.sent[i]) {
			out[i] = rs.sentClone[i]
			continue
		}
		m.Content = clipText(m.Content)
		m.ToolCalls = cloneToolCalls(m.ToolCalls)
		out[i] = m
	}
	rs.sent, rs.sentClone = sent, out
	return out
}

// sentMessage is what cloneSent keeps of a message sent, to know it when the next call sends it again: every field
// of llm.Message and llm.ToolCall, each text as a fingerprint, so that no string the orchestrator made for one
// request outlives it here.
type sentMessage struct {
	role             llm.Role
	content          fingerprint
	toolCallID, name string
	calls            []sentCall
}

type sentCall struct {
	id, name string
	args     fingerprint
}

// fingerprint stands for a text: the text itself when it is short enough to be kept whole in an entry (the entry's
// copy is then that very string, so keeping it costs nothing), else its length and a hash.
type fingerprint struct {
	short string
	n     int
	hash  uint64
}

// seed seeds the fingerprints' hashes, made when first needed (a package-level initializer would run at every
// start-up, console or not).
var seed struct {
	once sync.Once
	s    maphash.Seed
}

func sentSeed() maphash.Seed {
	seed.once.Do(func() { seed.s = maphash.MakeSeed() })
	return seed.s
}

func fingerprintOf(s string) fingerprint {
	if len(s) <= maxContent {
		return fingerprint{short: s, n: len(s)}
	}
	return fingerprint{n: len(s), hash: maphash.String(sentSeed(), s)}
}

func sentOf(m *llm.Message) sentMessage {
	sm := sentMessage{role: m.Role, content: fingerprintOf(m.Content), toolCallID: m.ToolCallID, name: m.Name}
	for _, c := range m.ToolCalls {
		sm.calls = append(sm.calls, sentCall{id: c.ID, name: c.Name, args: fingerprintOf(c.Arguments)})
	}
	return sm
}

func (a *sentMessage) equal(b *sentMessage) bool {
	return a.role == b.role && a.content == b.content && a.toolCallID == b.toolCallID && a.name == b.name &&
		slices.Equal(a.calls, b.calls)
}

func cloneToolCalls(calls []llm.ToolCall) []llm.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		c.Arguments = clipText(c.Arguments)
		out[i] = c
	}
	return out
}

// promptStart returns the start of s a Summary shows, in a string of its own.
func promptStart(s string) string {
	n := 0
	for i := range s {
		if n == maxPrompt {
			return strings.Clone(s[:i])
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

// locate returns where entry i (seq i+1) is: its chunk and its index in it.
func locate(i int) (int, int) {
	k, size := 0, firstChunk
	for size < chunk {
		if i < size {
			return k, i
		}
		i -= size
		k++
		size *= 2
	}
	return k + i/chunk, i % chunk
}

// add appends e, numbered and timed, unless the record is full: then it is counted as dropped, unless always, or
// unless it ends a span whose start was kept (so that no span kept stays open), or is the answer of a run whose
// start was kept. Once the record is complete every entry is dropped. rec.mu is held.
func (rec *record) add(now time.Time, e *Entry, always bool) {
	if rec.complete {
		rec.sum.Dropped++
		return
	}
	switch e.Kind {
	case KindRunEnd, KindModelEnd, KindToolEnd:
		if _, ok := rec.open[e.Span]; ok {
			always = true
			delete(rec.open, e.Span)
		}
	case KindAnswer:
		if _, ok := rec.open[e.Span]; ok {
			always = true
		}
	}
	if rec.n >= rec.r.opts.MaxEntries && !always {
		rec.sum.Dropped++
		return
	}
	switch e.Kind {
	case KindRunStart, KindModelStart, KindToolStart:
		if rec.open == nil {
			rec.open = map[string]struct{}{}
		}
		rec.open[e.Span] = struct{}{}
	}
	k, i := locate(rec.n)
	if k == len(rec.chunks) {
		rec.chunks = append(rec.chunks, make([]Entry, min(firstChunk<<min(k, 8), chunk)))
	}
	rec.n++
	e.Seq = rec.n
	e.AtMS = ms(now.Sub(rec.start))
	rec.chunks[k][i] = *e
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
		e := &Entry{Kind: KindRunStart, Parent: ref.span, Agent: run.Agent,
			ConversationID: run.ConversationID, Model: modelName(run.Model)}
		if rec.content {
			e.Prompt = clipText(run.Prompt)
		} else {
			e.Bytes = len(run.Prompt)
		}
		rec.mu.Lock()
		rs := &runSpan{rec: rec, id: rec.newSpan('r'), parent: ref.span, start: now}
		e.Span = rs.id
		rec.nested++
		rec.add(now, e, false)
		rec.mu.Unlock()
		r.changed(rec)
		return context.WithValue(ctx, spanKey{r}, &spanRef{run: rs, span: rs.id}), func(ans *host.Answer, err error) {
			r.endRun(rs, ans, err)
		}
	}

	rec, _ := ctx.Value(expectKey{r}).(*record)
	origin := run.Origin
	var stop func() bool
	if rec != nil {
		rec.mu.Lock()
		if rec.taken {
			rec.mu.Unlock()
			rec = nil
		} else {
			rec.taken = true
			origin = rec.sum.Origin
			stop, rec.stopExpect = rec.stopExpect, nil
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
		e.Prompt = clipText(run.Prompt)
	} else {
		e.Bytes = len(run.Prompt)
	}
	rec.add(now, e, false)
	fresh := !rec.taken
	rec.mu.Unlock()
	if stop != nil {
		stop()
	}
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
// The watchers are told of the runs dropped.
func (r *Recorder) trim() {
	var dropped []*record
	r.mu.Lock()
	for i := 0; len(r.runs) > r.opts.MaxRuns && i < len(r.runs); {
		rec := r.runs[i]
		rec.mu.Lock()
		ended, id := rec.ended, rec.sum.ID
		if ended {
			rec.gone = true
		}
		rec.mu.Unlock()
		if !ended {
			i++
			continue
		}
		r.runs = slices.Delete(r.runs, i, i+1)
		delete(r.byID, id)
		dropped = append(dropped, rec)
	}
	r.mu.Unlock()
	for _, rec := range dropped {
		r.changed(rec)
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
		rec.add(now, &Entry{Kind: KindAnswer, Span: rs.id, Parent: rs.parent, Answer: rs.answer(ans), Bytes: contentBytes(rec.content, len(ans.Text)+len(ans.Output))}, false)
	}
	rec.add(now, end, root)
	rs.sent, rs.sentClone = nil, nil
	if root {
		t := now
		rec.sum.Ended, rec.sum.Status, rec.sum.Error, rec.ended, rec.endedAt = &t, Status(end.StoppedBy), end.Error, true, now
	} else {
		rec.nested--
	}
	if rec.ended && rec.nested == 0 {
		rec.complete = true
	}
	rec.wake() // a follower past the last entry must see the end even if run_end was the entry it waited for
	rec.mu.Unlock()
	r.changed(rec)
	if root {
		r.trim()
	}
}

// answer returns the copy of ans an entry keeps, field by field: without content no text, output, reference titles
// or URIs (their numbers stay), tool call errors of the tools' own text, debug details or check details; never the
// result of the tool that took control. rs.rec.mu is held.
func (rs *runSpan) answer(ans *host.Answer) *host.Answer {
	content := rs.rec.content
	a := &host.Answer{ConversationID: ans.ConversationID, StoppedBy: ans.StoppedBy, Usage: ans.Usage}
	if content {
		a.Text, a.Output = clipText(ans.Text), clipJSON(ans.Output)
	}
	if ans.References != nil {
		a.References = make([]host.NumberedReference, len(ans.References))
		for i, ref := range ans.References {
			if !content {
				ref.Title, ref.URI = "", ""
			}
			a.References[i] = ref
		}
	}
	if ans.Iterations != nil {
		a.Iterations = make([]host.IterationInfo, len(ans.Iterations))
		for i, it := range ans.Iterations {
			it.ToolsLoaded = slices.Clone(it.ToolsLoaded)
			a.Iterations[i] = it
		}
	}
	if ans.ToolCalls != nil {
		a.ToolCalls = make([]host.ToolCallInfo, len(ans.ToolCalls))
		for i := range ans.ToolCalls {
			a.ToolCalls[i] = rs.callInfo(&ans.ToolCalls[i], false)
		}
	}
	a.Checks = checks(content, ans.Checks)
	return a
}

// callInfo returns the copy of info an entry keeps: without content no debug details, and no error unless the call
// could not happen (ended with no result: the error is the host's then, not the tool's text), which failed says for
// a tool_end (and rs then remembers for the answer). rs.rec.mu is held.
func (rs *runSpan) callInfo(info *host.ToolCallInfo, failed bool) host.ToolCallInfo {
	c := *info
	c.Flags = slices.Clone(info.Flags)
	if rs.rec.content {
		c.Debug = maps.Clone(info.Debug)
		return c
	}
	c.Debug = nil
	key := callKey{info.Iteration, info.ID}
	if failed {
		if rs.shown == nil {
			rs.shown = map[callKey]struct{}{}
		}
		rs.shown[key] = struct{}{}
	}
	if _, ok := rs.shown[key]; !ok {
		c.Error = ""
	}
	return c
}

// checks returns a copy of cs, without their details when content is not kept.
func checks(content bool, cs []host.CheckResult) []host.CheckResult {
	cs = slices.Clone(cs)
	if !content {
		for i := range cs {
			cs[i].Detail = ""
		}
	}
	return cs
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
			rec.mu.Lock()
			e.Messages = rs.cloneSent(call.Request.Messages)
			rec.mu.Unlock()
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
	retries := 0 // the model reports its retries on the goroutine of the call, before the call ends
	ctx = llm.WithRetryReporter(ctx, func(rt llm.Retry) {
		retries++
		e := &Entry{Kind: KindModelRetry, Span: span, Parent: ref.span, Attempt: rt.Attempt, DelayMS: ms(rt.Delay)}
		if rt.Err != nil {
			e.Error = rt.Err.Error()
		}
		rec.mu.Lock()
		rec.add(r.opts.Now(), e, false)
		rec.mu.Unlock()
		r.changed(rec)
	})
	return context.WithValue(ctx, spanKey{r}, &spanRef{run: rs, span: span}), func(resp *llm.Response, err error) {
		end := r.opts.Now()
		e := &Entry{Kind: KindModelEnd, Span: span, Parent: ref.span, DurationMS: ms(end.Sub(now)), Retries: retries}
		if err != nil {
			e.Error = err.Error()
		}
		if resp != nil {
			u := resp.Usage
			e.Usage, e.FinishReason = &u, resp.FinishReason
			if rec.content {
				e.Text, e.ToolCalls = clipText(resp.Message.Content), cloneToolCalls(resp.Message.ToolCalls)
			} else {
				e.Bytes = len(resp.Message.Content)
				for _, tc := range resp.Message.ToolCalls {
					e.Bytes += len(tc.Arguments)
				}
			}
		}
		rec.mu.Lock()
		if rs.model == span {
			rs.model = "" // text past the call's end (citations rendered, structured output) is the run's
		}
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
			e.Text = clipText(ev.Text) // a model server may stream the whole answer as one delta
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
			if !rec.content {
				p.Message = ""
			}
			rec.add(now, &Entry{Kind: KindToolProgress, Span: t.span, Parent: t.parent, Iteration: ev.Iteration, CallID: te.ID, Progress: &p}, false)
		}
	case host.EventToolEnd:
		if te := ev.ToolCall; te != nil {
			t := r.toolStart(now, rs, te, ev.Iteration)
			e := &Entry{Kind: KindToolEnd, Span: t.span, Parent: t.parent, Iteration: ev.Iteration, Name: te.Name, Source: te.Source, CallID: te.ID}
			if te.Info != nil {
				info := rs.callInfo(te.Info, te.Result == nil)
				e.Info, e.OK, e.Error, e.DurationMS = &info, &info.OK, info.Error, ms(info.Duration)
			}
			if res := te.Result; res != nil {
				if rec.content {
					e.Result = clipText(res.Text)
				} else {
					e.Bytes = len(res.Text) + len(res.Structured)
				}
				e.Peer, e.PeerCalls = peerCalls(res, rec.content)
			}
			if te.ID != "" {
				delete(rs.tools, te.ID)
			}
			rec.sum.ToolCalls++
			rec.add(now, e, false)
		}
	case host.EventCheck:
		if ev.Check != nil {
			c := checks(rec.content, []host.CheckResult{*ev.Check})[0]
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
		e.Arguments = clipJSON(te.Arguments)
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
		if rec.content {
			c.Arguments, c.Message, c.Schema = clipJSON(c.Arguments), clipText(c.Message), clipJSON(c.Schema)
		} else {
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
// for, even one that cannot start, so the expected run ends once it is run; if ctx ends before a run took the id,
// the run is ended then, cancelled, with the error "the run did not start".
func (r *Recorder) Expect(ctx context.Context, origin string) (context.Context, string) {
	now := r.opts.Now()
	content := r.opts.Content(origin)
	rec := &record{r: r, content: content, start: now,
		sum: Summary{ID: newID(), Origin: origin, Subject: host.Subject(ctx), Started: now, Status: StatusRunning, Content: content}}
	r.keep(rec)
	r.changed(rec)
	stop := context.AfterFunc(ctx, func() { r.abandon(rec) })
	rec.mu.Lock()
	if rec.taken {
		rec.mu.Unlock()
		stop()
	} else {
		rec.stopExpect = stop
		rec.mu.Unlock()
	}
	return context.WithValue(ctx, expectKey{r}, rec), rec.sum.ID
}

// abandon ends an expected record that no run took.
func (r *Recorder) abandon(rec *record) {
	rec.mu.Lock()
	if rec.taken {
		rec.mu.Unlock()
		return
	}
	now := r.opts.Now()
	rec.taken, rec.stopExpect = true, nil
	rec.sum.Ended, rec.sum.Status, rec.sum.Error = &now, Status(host.StopCancelled), "the run did not start"
	rec.ended, rec.complete, rec.endedAt = true, true, now
	rec.wake()
	rec.mu.Unlock()
	r.changed(rec)
	r.trim()
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

// Run returns a run's summary and its entries from after (0 for all), or false when no such run is kept. The
// entries' slices and maps are shared with the recorder, which never writes them after they are recorded: they
// must not be modified.
func (r *Recorder) Run(id string, after int) (Summary, []Entry, bool) {
	rec := r.lookup(id)
	if rec == nil {
		return Summary{}, nil, false
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []Entry
	if n := rec.n - max(after, 0); n > 0 {
		out = make([]Entry, 0, n)
	}
	entries(rec.chunks, after, rec.n, func(e *Entry) { out = append(out, *e) })
	return rec.sum, out, true
}

// entries calls fn with the entries of chunks after seq after up to seq n.
func entries(chunks [][]Entry, after, n int, fn func(*Entry)) {
	for i := max(after, 0); i < n; {
		k, j := locate(i)
		for c := chunks[k]; j < len(c) && i < n; j++ {
			fn(&c[j])
			i++
		}
	}
}

// Follow calls fn with the run's entries after seq after, those kept first, then each new one as it is recorded,
// until the run is complete and every entry was handed over (it returns nil) or ctx ends (it returns ctx's error). A
// run is complete when it and every run nested in it have ended, or lateGrace (30s) after it ended while a nested
// one has not (an abandoned sub-agent call): entries after are dropped (counted in Summary.Dropped), so that Follow
// hands over what Run returns. It returns an error at once when no such run is kept. The entries are shared, as
// Run's are.
func (r *Recorder) Follow(ctx context.Context, id string, after int, fn func(Entry)) error {
	rec := r.lookup(id)
	if rec == nil {
		return fmt.Errorf("runlog: no run %q", id)
	}
	after = max(0, after)
	var late *time.Timer
	defer func() {
		if late != nil {
			late.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec.mu.Lock()
		chunks, n := rec.chunks, rec.n // the entries up to n are never written again: read without the lock
		complete := rec.complete
		var changed chan struct{}
		var lateC <-chan time.Time
		if !complete {
			if rec.changed == nil {
				rec.changed = make(chan struct{})
			}
			changed = rec.changed
			if rec.ended && late == nil {
				late = time.NewTimer(max(0, r.lateGrace-r.opts.Now().Sub(rec.endedAt)))
			}
		}
		rec.mu.Unlock()
		if late != nil {
			lateC = late.C
		}
		entries(chunks, after, n, func(e *Entry) { fn(*e) })
		after = max(after, n)
		if complete {
			return nil
		}
		select {
		case <-changed:
		case <-lateC:
			rec.mu.Lock()
			rec.complete = true
			rec.mu.Unlock()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// peerCalls returns the A2A peer a result came from (its Debug's "peer") and the tool calls the peer reported in
// its answer's details, which the a2a peer tool keeps as the result's structured content (one summary, or a list
// of them). Without content, the calls' errors are left out.
func peerCalls(res *host.Result, content bool) (string, []host.ToolCallSummary) {
	peer, _ := res.Debug["peer"].(string)
	if peer == "" || len(res.Structured) == 0 {
		return peer, nil
	}
	var one host.AnswerSummary
	var many []host.AnswerSummary
	if json.Unmarshal(res.Structured, &one) != nil {
		if json.Unmarshal(res.Structured, &many) != nil {
			return peer, nil
		}
	} else {
		many = []host.AnswerSummary{one}
	}
	var calls []host.ToolCallSummary
	for _, s := range many {
		for _, c := range s.ToolCalls {
			if !content {
				c.Error = ""
			}
			if len(calls) == maxPeerCalls {
				return peer, calls
			}
			calls = append(calls, c)
		}
	}
	return peer, calls
}

// maxPeerCalls bounds the peer calls an entry keeps.
const maxPeerCalls = 200
