package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Calls that ask their caller for input: approvals and forwarded elicitation (elicitation/create) and, with
// sampling, every model call (sampling/createMessage).
//
// On protocol versions before 2026-07-28 the server sends those requests to the client while it handles the call,
// and a call runs inside its handler. From 2026-07-28 on (multi round-trip requests, SEP-2322) it may not: the call
// must return a result carrying inputRequests, and the client calls again with the inputResponses and the result's
// requestState. The SDK offers that much and no more; a run of the agent is a long loop that cannot be replayed
// from the start on each retry, so for such callers the call runs in the background instead. Each request of the
// call (the first and every retry) serves one round: it hands the answers it carries to the waiting run, then waits
// for the run's next questions, which it returns as input requests, or for its end, which it returns as the
// result. The requestState is the run's random, unguessable id.
//
// A run that waits for a caller that does not come back is cancelled after the input timeout. Runs live in the
// process that started them; with a CallStore, a retry that reaches another process is served through the store
// (see shared.go), else it must reach the same one (session affinity behind a load balancer).

// roundTripsSince is the first protocol version that forbids requests to the client during a call.
const roundTripsSince = "2026-07-28"

const (
	defaultInputTimeout    = 10 * time.Minute
	defaultMaxWaitingCalls = 100
)

// caller is how a call asks its caller for input: the session's own requests (*mcp.ServerSession), or input
// requests returned from the call (*pausedRun).
type caller interface {
	Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
	CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	CreateMessageWithTools(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
}

var (
	_ caller = (*mcp.ServerSession)(nil)
	_ caller = (*pausedRun)(nil)
)

// progressSink sends a call's progress to the request being served. Between rounds nothing is attached, and what
// is reported meanwhile is dropped.
type progressSink interface {
	attach(ctx context.Context, req *mcp.CallToolRequest)
	detach()
}

// progressTarget is where a call's progress goes: the request being served and its progress token. It is the zero
// value between rounds and when the request sent no token. Its owner guards it.
type progressTarget struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any // nil: nothing (more) to send
}

func targetOf(ctx context.Context, req *mcp.CallToolRequest) progressTarget {
	return progressTarget{ctx: ctx, session: req.Session, token: req.Params.GetProgressToken()}
}

// active reports whether a notification may be sent now: not between rounds, nor once the request ended.
func (t *progressTarget) active() bool {
	return t.token != nil && t.session != nil && t.ctx.Err() == nil
}

// send sends params with the target's token. A client that refuses them gets no more.
func (t *progressTarget) send(params *mcp.ProgressNotificationParams) {
	params.ProgressToken = t.token
	if err := t.session.NotifyProgress(t.ctx, params); err != nil && t.ctx.Err() == nil {
		t.token = nil // the client is gone or refuses them: stop sending
	}
}

// needsRoundTrips reports whether session's client must be asked through input requests.
func needsRoundTrips(session *mcp.ServerSession) bool {
	if session == nil {
		return false
	}
	p := session.InitializeParams()
	return p != nil && p.ProtocolVersion >= roundTripsSince
}

// roundTrips holds the calls that run in the background for callers that are asked through input requests. It owns
// their goroutines: close cancels them and waits.
type roundTrips struct {
	timeout  time.Duration
	max      int
	shared   CallStore // nil: runs are seen by this process only
	instance string    // names this process in shared
	logger   *slog.Logger
	stop     context.CancelFunc // stops watchSignals

	mu     sync.Mutex
	runs   map[string]*pausedRun // by id (the requestState)
	closed bool
	wg     sync.WaitGroup
}

// newRoundTrips returns the calls of a server. With shared, they are seen by the other processes sharing it, and
// the signals they leave are taken until close.
func newRoundTrips(timeout time.Duration, max int, shared CallStore, instance string, logger *slog.Logger) *roundTrips {
	if timeout <= 0 {
		timeout = defaultInputTimeout
	}
	if max <= 0 {
		max = defaultMaxWaitingCalls
	}
	if instance == "" {
		instance = rand.Text()
	}
	rs := &roundTrips{timeout: timeout, max: max, shared: shared, instance: instance, logger: logger, runs: map[string]*pausedRun{}, stop: func() {}}
	if shared != nil {
		ctx, stop := context.WithCancel(context.Background())
		rs.stop = stop
		rs.wg.Go(func() { rs.watchSignals(ctx) })
	}
	return rs
}

// prepare returns a run for the call req, to be started with start. Until then it is only a caller to hand to the
// work.
func (rs *roundTrips) prepare(req *mcp.CallToolRequest) *pausedRun {
	return &pausedRun{
		rs:      rs,
		id:      rand.Text(),
		tool:    req.Params.Name,
		args:    req.Params.Arguments,
		pending: map[string]*question{},
		asked:   make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

// resume serves a retry of a call: req carries the requestState of an earlier round and the answers.
func (rs *roundTrips) resume(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	rs.mu.Lock()
	r := rs.runs[req.Params.RequestState]
	rs.mu.Unlock()
	if r == nil && rs.shared != nil {
		return rs.resumeElsewhere(ctx, req)
	}
	if r == nil || r.tool != req.Params.Name || !sameJSON(r.args, req.Params.Arguments) {
		return rs.notWaiting(), nil
	}
	if err := r.attach(ctx, req); err != nil {
		return toolError("%v", err), nil
	}
	r.deliver(req.Params.InputResponses)
	return r.wait(ctx, false)
}

// notWaiting is the result of a retry that finds no call to continue.
func (rs *roundTrips) notWaiting() *mcp.CallToolResult {
	where := "was started on another instance of this server"
	if rs.shared != nil {
		where = "was started by an agenthost process that has stopped since"
	}
	return toolError("this call is no longer waiting for input: it ended, was cancelled, waited more than %v for the answers, or %s; call the tool again", rs.timeout, where)
}

// close cancels every run and waits for them to end; their retries then find nothing. It is safe to call more than
// once.
func (rs *roundTrips) close() {
	rs.mu.Lock()
	rs.closed = true
	var idle []*pausedRun // waiting for their callers: nothing else forgets them
	for id, r := range rs.runs {
		r.stopTimer()
		r.cancel()
		delete(rs.runs, id)
		r.mu.Lock()
		if !r.attached {
			idle = append(idle, r)
		}
		r.mu.Unlock()
	}
	rs.mu.Unlock()
	rs.stop()
	rs.wg.Wait()
	for _, r := range idle {
		r.forget()
	}
}

func (rs *roundTrips) remove(r *pausedRun) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.runs[r.id] == r {
		delete(rs.runs, r.id)
	}
}

// waiting returns how many runs are held.
func (rs *roundTrips) waiting() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.runs)
}

// pausedRun is a call that runs in the background while its caller answers its questions between requests.
type pausedRun struct {
	rs       *roundTrips
	id       string
	tool     string
	args     json.RawMessage // a retry must carry the same
	progress progressSink
	cancel   context.CancelFunc // set by start

	asked chan struct{} // a question was added (buffered: a wake-up is never lost)
	done  chan struct{} // closed when the work has returned; res and err are then set
	res   *mcp.CallToolResult
	err   error

	mu       sync.Mutex
	pending  map[string]*question // asked and not answered, by input request key
	next     int                  // numbers the questions
	attached bool                 // a request is serving a round
	round    int                  // counts the detaches, so that an old timer cannot expire a later round
	expired  bool
	timer    *time.Timer
	saved    bool // the call is in the shared CallStore
}

// question is one input request waiting for its answer.
type question struct {
	request mcp.InputRequest
	answer  chan mcp.InputResponse // buffered: delivering never blocks
}

// start runs work in the background and serves the call's first round. work gets a context that outlives ctx: it
// ends when the caller cancels a round, when the caller does not come back in time, or when the server closes.
func (r *pausedRun) start(ctx context.Context, req *mcp.CallToolRequest, progress progressSink, work func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	r.progress = progress
	rs := r.rs
	rs.mu.Lock()
	switch {
	case rs.closed:
		rs.mu.Unlock()
		return toolError("the server is shutting down"), nil
	case len(rs.runs) >= rs.max:
		rs.mu.Unlock()
		return toolError("too many calls are waiting for their callers' answers; try again later"), nil
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.attached = true
	progress.attach(ctx, req)
	rs.runs[r.id] = r
	rs.wg.Go(func() {
		defer close(r.done)
		defer cancel()
		r.res, r.err = work(runCtx)
	})
	rs.mu.Unlock()
	return r.wait(ctx, false)
}

// wait serves a round: it returns the run's result when it ends, or its questions as input requests, which it
// shares with the other processes. If the caller cancels the request, the run is cancelled. A round served for
// another process (remote) leaves the call in the store when it ends: the result goes there.
func (r *pausedRun) wait(ctx context.Context, remote bool) (*mcp.CallToolResult, error) {
	for {
		select {
		case <-r.done:
			r.finish()
			if !remote {
				r.forget()
			}
			return r.res, r.err
		case <-ctx.Done():
			r.cancel()
			<-r.done
			r.finish()
			r.forget()
			return nil, ctx.Err()
		case <-r.asked:
			if requests := r.questions(); len(requests) > 0 {
				res := &mcp.CallToolResult{InputRequests: requests, RequestState: r.id}
				r.detach()
				r.publish(callWaiting, res)
				return res, nil
			}
		}
	}
}

// questions returns every question without an answer: those asked since the last round, and those whose answers
// the last retry did not carry.
func (r *pausedRun) questions() mcp.InputRequestMap {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	requests := make(mcp.InputRequestMap, len(r.pending))
	for key, q := range r.pending {
		requests[key] = q.request
	}
	return requests
}

func (r *pausedRun) attach(ctx context.Context, req *mcp.CallToolRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.expired:
		return fmt.Errorf("this call waited more than %v for the answers and was cancelled; call the tool again", r.rs.timeout)
	case r.attached:
		return errors.New("this call is being continued by another request")
	}
	r.stopTimerLocked()
	r.attached = true
	r.progress.attach(ctx, req)
	return nil
}

func (r *pausedRun) stopTimer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopTimerLocked()
}

func (r *pausedRun) stopTimerLocked() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// detach ends a round that returned input requests, and gives the caller the input timeout to come back.
func (r *pausedRun) detach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress.detach()
	r.attached = false
	r.round++
	round := r.round
	r.timer = time.AfterFunc(r.rs.timeout, func() { r.expire(round) })
}

// expire cancels the run when the caller has not come back for round.
func (r *pausedRun) expire(round int) {
	r.mu.Lock()
	if r.attached || r.expired || r.round != round {
		r.mu.Unlock()
		return
	}
	r.expired = true
	r.mu.Unlock()
	r.rs.remove(r)
	r.cancel()
	r.forget()
}

// finish ends the last round: the run is over and no retry can reach it.
func (r *pausedRun) finish() {
	r.rs.remove(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress.detach()
	r.attached = false
}

// deliver hands the answers to the questions waiting for them. Answers to questions that are gone (their asker gave
// up) or were never asked are dropped.
func (r *pausedRun) deliver(answers mcp.InputResponseMap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, answer := range answers {
		if q := r.pending[key]; q != nil && answer != nil {
			delete(r.pending, key)
			q.answer <- answer
		}
	}
}

// ask adds a question for the next round and waits for its answer.
func (r *pausedRun) ask(ctx context.Context, request mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{request: request, answer: make(chan mcp.InputResponse, 1)}
	r.mu.Lock()
	r.next++
	key := fmt.Sprintf("q%d", r.next)
	r.pending[key] = q
	r.mu.Unlock()
	select {
	case r.asked <- struct{}{}:
	default: // a wake-up is pending already
	}
	select {
	case answer := <-q.answer:
		return answer, nil
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.pending, key)
		r.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (r *pausedRun) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	answer, err := r.ask(ctx, params)
	if err != nil {
		return nil, err
	}
	res, ok := answer.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("the caller answered an elicitation with %T", answer)
	}
	return res, nil
}

func (r *pausedRun) CreateMessageWithTools(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	answer, err := r.ask(ctx, params)
	if err != nil {
		return nil, err
	}
	res, ok := answer.(*mcp.CreateMessageWithToolsResult)
	if !ok {
		return nil, fmt.Errorf("the caller answered a sampling request with %T", answer)
	}
	return res, nil
}

// CreateMessage asks for a message without tools. The SDK decodes every sampling answer as one with tools; it must
// hold a single content block here.
func (r *pausedRun) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	answer, err := r.ask(ctx, params)
	if err != nil {
		return nil, err
	}
	switch res := answer.(type) {
	case *mcp.CreateMessageResult:
		return res, nil
	case *mcp.CreateMessageWithToolsResult:
		if len(res.Content) != 1 {
			return nil, fmt.Errorf("the caller answered a sampling request with %d content blocks, want 1", len(res.Content))
		}
		return &mcp.CreateMessageResult{Meta: res.Meta, Content: res.Content[0], Model: res.Model, Role: res.Role, StopReason: res.StopReason}, nil
	}
	return nil, fmt.Errorf("the caller answered a sampling request with %T", answer)
}

// sameJSON reports whether a and b hold the same JSON value. The client re-encodes the arguments on each retry.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
