package console

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/runlog"
)

// consoleRun is a run the console started, going.
type consoleRun struct {
	cancel context.CancelFunc
	ia     *interactor
	// subject is the caller's who started it (caller.subject).
	subject string
}

type chatRequest struct {
	Message        string          `json:"message"`
	ConversationID string          `json:"conversation_id"`
	Tools          []string        `json:"tools"`
	Disable        []string        `json:"disable"`
	OutputSchema   json.RawMessage `json:"output_schema"`
}

// chat answers POST /api/chat: it starts a run, which outlives the request (the page may close) but not the
// console.
func (c *Console) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object: "+err.Error())
		return
	}
	if strings.TrimSpace(req.Message) == "" {
		writeError(w, http.StatusBadRequest, "message is empty")
		return
	}
	schema := req.OutputSchema
	if string(schema) == "null" {
		schema = nil
	}
	if len(schema) > 0 && c.opts.CompileSchema != nil {
		if _, err := c.opts.CompileSchema(schema); err != nil {
			writeError(w, http.StatusBadRequest, "output_schema: "+err.Error())
			return
		}
	}
	// A conversation belongs to the caller's subject, as over MCP: another subject's is unknown to this caller, and
	// a new one is created owned.
	subject := callerOf(r).subject
	convID, start := req.ConversationID, false
	switch {
	case convID != "" && !host.OwnsConversation(convID, subject):
		writeError(w, http.StatusNotFound, fmt.Sprintf("%v: %q", host.ErrUnknownConversation, convID))
		return
	case convID == "" && subject != "":
		convID, start = host.OwnedConversationID(host.NewConversationID(), subject), true
	}
	ia := &interactor{runs: c.opts.Runs, pending: map[string]chan answer{}, timeout: c.opts.InputTimeout}
	hreq := &host.Request{Prompt: req.Message, ConversationID: convID, StartConversation: start, OutputSchema: schema,
		Interactor: ia, Selection: host.Selection{ToolChoices: req.Tools, DisabledTools: req.Disable}}

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "the console is closing")
		return
	}
	if len(c.active) >= c.opts.MaxRuns {
		c.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%d runs of the console are going: wait for one to end", c.opts.MaxRuns))
		return
	}
	ctx, cancel := context.WithCancel(host.WithSubject(host.WithOrigin(c.ctx, "console"), subject))
	ctx, id := c.opts.Runs.Expect(ctx, "console")
	c.active[id] = &consoleRun{cancel: cancel, ia: ia, subject: subject}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.active, id)
			c.mu.Unlock()
			cancel()
		}()
		for _, err := range c.opts.Orchestrator.Run(ctx, hreq) {
			if err != nil {
				c.logger.Debug("console: a run ended with an error", "run", id, "err", err)
			}
		}
	}()
	writeJSON(w, http.StatusAccepted, map[string]string{"run_id": id})
}

// sees says whether who may see the run sum: the operator sees every run, a caller told apart only its own.
func (who caller) sees(sum runlog.Summary) bool {
	return who.subject == "" || sum.Subject == who.subject
}

// run returns the run id as who may see it; false when no such run is kept, or it is another caller's.
func (c *Console) run(who caller, id string, after int) (runlog.Summary, []runlog.Entry, bool) {
	sum, entries, ok := c.opts.Runs.Run(id, after)
	if !ok || !who.sees(sum) {
		return runlog.Summary{}, nil, false
	}
	return sum, entries, true
}

// listRuns answers GET /api/runs.
func (c *Console) listRuns(w http.ResponseWriter, r *http.Request) {
	who := callerOf(r)
	runs := []runlog.Summary{}
	for _, sum := range c.opts.Runs.Runs() {
		if who.sees(sum) {
			runs = append(runs, sum)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}

// getRun answers GET /api/runs/{id}.
func (c *Console) getRun(w http.ResponseWriter, r *http.Request) {
	sum, entries, ok := c.run(callerOf(r), r.PathValue("id"), 0)
	if !ok {
		writeError(w, http.StatusNotFound, "no such run")
		return
	}
	if entries == nil {
		entries = []runlog.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": sum, "entries": entries})
}

// cancelRun answers POST /api/runs/{id}/cancel.
func (c *Console) cancelRun(w http.ResponseWriter, r *http.Request) {
	run, status, msg := c.ownRun(callerOf(r), r.PathValue("id"))
	if run == nil {
		writeError(w, status, msg)
		return
	}
	run.cancel()
	w.WriteHeader(http.StatusNoContent)
}

// ownRun returns the console's run id while it is going, or the status and message that say why not. Another
// caller's run is not found.
func (c *Console) ownRun(who caller, id string) (*consoleRun, int, string) {
	sum, _, ok := c.run(who, id, math.MaxInt)
	c.mu.Lock()
	run := c.active[id]
	c.mu.Unlock()
	if run != nil && (who.subject == "" || run.subject == who.subject) {
		return run, 0, ""
	}
	switch {
	case !ok:
		return nil, http.StatusNotFound, "no such run"
	case sum.Origin != "console":
		return nil, http.StatusConflict, "the run was not started by this console"
	}
	return nil, http.StatusConflict, "the run has ended"
}

// answerRequest is the body of POST /api/runs/{id}/answer.
type answerRequest struct {
	ID       string         `json:"id"`
	Approved bool           `json:"approved"`
	Action   string         `json:"action"`
	Content  map[string]any `json:"content"`
}

// answer answers POST /api/runs/{id}/answer.
func (c *Console) answer(w http.ResponseWriter, r *http.Request) {
	run, status, msg := c.ownRun(callerOf(r), r.PathValue("id"))
	if run == nil {
		writeError(w, status, msg)
		return
	}
	var a answerRequest
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil || a.ID == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"id", "approved" or "action"}`)
		return
	}
	switch host.ElicitAction(a.Action) {
	case "", host.ElicitAccept, host.ElicitDecline, host.ElicitCancel:
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %q: want accept, decline or cancel", a.Action))
		return
	}
	if !run.ia.answer(a.ID, answer(a)) {
		writeError(w, http.StatusNotFound, "the run waits on no such question")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type answer answerRequest

// interactor asks the person at the console: it records the question in the run and waits for its answer through
// the API.
type interactor struct {
	runs *runlog.Recorder
	// timeout is how long a question waits for its answer before the run is told that nobody answered.
	timeout time.Duration
	mu      sync.Mutex
	pending map[string]chan answer
}

var _ host.Interactor = (*interactor)(nil)

func (ia *interactor) Approve(ctx context.Context, req *host.ApprovalRequest) (bool, error) {
	a, err := ia.ask(ctx, &runlog.Waiting{Type: "approval", Tool: req.Tool, Source: req.Source, Arguments: req.Arguments})
	if errors.Is(err, errNobodyAnswered) {
		ia.runs.Answered(ctx, &runlog.ApprovalAnswer{ID: a.ID})
		return false, nil // denied
	}
	if err != nil {
		// Stopped while it waited: the question is closed, in the record and on the page.
		ia.runs.Answered(ctx, &runlog.ApprovalAnswer{ID: a.ID, Action: string(host.ElicitCancel)})
		return false, err
	}
	ia.runs.Answered(ctx, &runlog.ApprovalAnswer{ID: a.ID, Approved: a.Approved})
	return a.Approved, nil
}

func (ia *interactor) Elicit(ctx context.Context, req *host.ElicitRequest) (*host.ElicitResult, error) {
	a, err := ia.ask(ctx, &runlog.Waiting{Type: "elicitation", Source: req.Source, Message: req.Message, Schema: req.Schema})
	if errors.Is(err, errNobodyAnswered) {
		ia.runs.Answered(ctx, &runlog.ApprovalAnswer{ID: a.ID, Action: string(host.ElicitCancel)})
		return &host.ElicitResult{Action: host.ElicitCancel}, nil
	}
	if err != nil {
		ia.runs.Answered(ctx, &runlog.ApprovalAnswer{ID: a.ID, Action: string(host.ElicitCancel)})
		return nil, err
	}
	action := host.ElicitAction(a.Action)
	if action == "" {
		action = host.ElicitDecline
		if a.Approved {
			action = host.ElicitAccept
		}
	}
	ia.runs.Answered(ctx, &runlog.ApprovalAnswer{ID: a.ID, Action: string(action)})
	res := &host.ElicitResult{Action: action}
	if action == host.ElicitAccept {
		res.Content = a.Content
	}
	return res, nil
}

// errNobodyAnswered is what ask returns when a question waited its timeout: the run is told no (an approval denied,
// an elicitation cancelled), as A2A's input wait does.
var errNobodyAnswered = errors.New("console: nobody answered")

// ask records w in the run and waits for its answer, or for the timeout: then it returns errNobodyAnswered, and an
// answer that holds only w's id; or for ctx to end: then it returns ctx's cause, and an answer that holds only w's
// id.
func (ia *interactor) ask(ctx context.Context, w *runlog.Waiting) (answer, error) {
	w.ID = "q" + rand.Text()[:12]
	ch := make(chan answer, 1)
	ia.mu.Lock()
	ia.pending[w.ID] = ch
	ia.mu.Unlock()
	defer func() {
		ia.mu.Lock()
		delete(ia.pending, w.ID)
		ia.mu.Unlock()
	}()
	ia.runs.Waiting(ctx, w)
	timer := time.NewTimer(ia.timeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-timer.C:
		return answer{ID: w.ID}, errNobodyAnswered
	case <-ctx.Done():
		return answer{ID: w.ID}, fmt.Errorf("console: waiting for an answer: %w", context.Cause(ctx))
	}
}

// answer hands a to the question id; false when no such question waits.
func (ia *interactor) answer(id string, a answer) bool {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	ch, ok := ia.pending[id]
	if !ok {
		return false
	}
	delete(ia.pending, id)
	ch <- a
	return true
}

// stream opens an event stream of who on w, or says 429 and returns false when who has too many open, or the
// console has: an SSE response under a context that the request's end or the console's Close ends, with
// heartbeats. cancel ends that context early; done, which the caller defers, ends it, waits for the heartbeats and
// closes the stream's count.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, who caller) (ctx context.Context, cancel context.CancelFunc, s *sse, done func(), ok bool) {
	release, ok := c.openStream(w, who)
	if !ok {
		return nil, nil, nil, nil, false
	}
	ctx, cancel = c.streamContext(r)
	s = startSSE(w)
	var beats sync.WaitGroup
	beats.Go(func() { c.heartbeats(ctx, s) })
	return ctx, cancel, s, func() {
		cancel()
		beats.Wait()
		release()
	}, true
}

// openStream counts an event stream of who, or says 429 and returns false when who has too many open, or the
// console has. The returned function closes it.
func (c *Console) openStream(w http.ResponseWriter, who caller) (func(), bool) {
	key := "subject:" + who.subject // a bearer token's streams count under its subject
	if who.session != nil {
		key = "session:" + who.session.id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nStreams >= c.maxStreams || c.streams[key] >= c.maxSessionStreams {
		writeError(w, http.StatusTooManyRequests, "too many event streams are open: close some")
		return nil, false
	}
	c.nStreams++
	c.streams[key]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.nStreams--
		if c.streams[key]--; c.streams[key] == 0 {
			delete(c.streams, key)
		}
	}, true
}

// streamContext is the request's context, ended also by the console's Close.
func (c *Console) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// sse writes a text/event-stream; its methods are safe for concurrent use.
type sse struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// event writes an event named name, with id when not "", data v as JSON, and flushes it.
func (s *sse) event(name, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return s.write(b.String())
}

func (s *sse) write(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write([]byte(text)); err != nil {
		return err
	}
	return s.rc.Flush()
}

// heartbeat writes a comment every c.heartbeat until ctx ends.
func (c *Console) heartbeats(ctx context.Context, s *sse) {
	t := time.NewTicker(c.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.write(": keep-alive\n\n") != nil {
				return
			}
		}
	}
}

// runEvents answers GET /api/runs/{id}/events: the run's entries after ?after (or Last-Event-ID), then each as it
// comes, then "end".
func (c *Console) runEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	who := callerOf(r)
	if _, _, ok := c.run(who, id, math.MaxInt); !ok {
		writeError(w, http.StatusNotFound, "no such run")
		return
	}
	after := 0
	for _, v := range []string{r.URL.Query().Get("after"), r.Header.Get("Last-Event-ID")} {
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "after must be a whole number")
			return
		}
		after = max(after, n)
	}
	ctx, cancel, s, done, ok := c.stream(w, r, who)
	if !ok {
		return
	}
	defer done()
	err := c.opts.Runs.Follow(ctx, id, after, func(e runlog.Entry) {
		if s.event("entry", strconv.Itoa(e.Seq), e) != nil {
			cancel()
		}
	})
	if err != nil || ctx.Err() != nil {
		return
	}
	if sum, _, ok := c.opts.Runs.Run(id, math.MaxInt); ok {
		_ = s.event("end", "", sum)
	}
}

// liveRuns answers GET /api/runs/live: each run's summary as it starts, changes and ends, and "gone" when it is no
// longer kept. A client slower than the runs gets each run's latest summary.
func (c *Console) liveRuns(w http.ResponseWriter, r *http.Request) {
	who := callerOf(r)
	// The watch starts before the stream's headers go: the page reads the runs kept (GET /api/runs) before it
	// opens this stream, and a run dropped between the two is then still reported gone.
	wt := c.opts.Runs.StartWatch()
	defer wt.Stop()
	ctx, cancel, s, done, ok := c.stream(w, r, who)
	if !ok {
		return
	}
	defer done()
	var mu sync.Mutex
	pending := map[string]runlog.Summary{}
	var order []string
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		wt.Run(ctx, func(sum runlog.Summary) {
			if !who.sees(sum) {
				return
			}
			mu.Lock()
			if _, ok := pending[sum.ID]; !ok {
				order = append(order, sum.ID)
			}
			pending[sum.ID] = sum
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		})
	})
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		mu.Lock()
		sums := make([]runlog.Summary, 0, len(order))
		for _, id := range order {
			sums = append(sums, pending[id])
		}
		clear(pending)
		order = order[:0]
		mu.Unlock()
		for _, sum := range sums {
			name, data := "run", any(sum)
			if sum.Status == runlog.StatusGone {
				name, data = "gone", map[string]string{"id": sum.ID}
			}
			if s.event(name, "", data) != nil {
				return
			}
		}
	}
}

// errorStatus is the status of a failed call to Conversations or Tasks.
func errorStatus(err error) int {
	if errors.Is(err, ErrNotFound) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}
