package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/telemetry"
)

// Skill is a skill the agent card lists.
type Skill struct {
	ID, Name, Description string
	Tags, Examples        []string
}

// OAuthScheme describes the OAuth 2.0 access tokens the agent accepts, for its card.
type OAuthScheme struct {
	// MetadataURL is the authorization server's metadata (RFC 8414); "" when unknown.
	MetadataURL string
	// AuthorizationURL and TokenURL are the authorization server's endpoints. With both, the card offers the
	// authorization code flow (with PKCE); with TokenURL and ClientCredentials, the client credentials flow.
	// Without TokenURL it declares a bearer JWT.
	AuthorizationURL, TokenURL string
	ClientCredentials          bool
	// Scopes are the scopes a token must carry.
	Scopes []string
}

// ServerOptions configures a Server. A nil *ServerOptions means all defaults.
type ServerOptions struct {
	// Name, Description and Version describe the agent on its card; "" means "agenthost", a generic description and
	// "dev".
	Name, Description, Version string
	// URL is the JSON-RPC endpoint's URL as the card advertises it, e.g. "http://127.0.0.1:8766/"; it must be
	// absolute. The endpoint itself is served at "/" whatever the URL's path (a proxy may map it).
	URL string
	// Skills are listed on the card; none means one skill derived from the agent.
	Skills []Skill
	// ListTools names the agent's tools in the skill derived when Skills is empty. The card is served to anyone,
	// without a token, so false (default) keeps it from telling them which tools the agent has.
	ListTools bool
	// Authenticated declares on the card that requests need a bearer token (the handler's Token checks it).
	Authenticated bool
	// OAuth, when set, declares on the card that requests need an OAuth 2.0 access token (the handler's Auth
	// checks it); it takes precedence over Authenticated.
	OAuth *OAuthScheme
	// InputTimeout is how long a task waits in INPUT_REQUIRED for its caller's answer before its run is cancelled;
	// 0 means 10 minutes.
	InputTimeout time.Duration
	// MaxTasks bounds the tasks kept in memory; 0 means 1000. The oldest finished tasks go first.
	MaxTasks int
	// Tasks, when set, keeps the tasks beyond the process: GetTask and ListTasks answer from it for tasks this
	// process does not run.
	Tasks TaskStore
	// Run runs the tasks; nil means the orchestrator's own Run. A durable engine's makes them survive a crash: it
	// tags each run "a2a:<task id>", and the server's Resume takes back a task whose run it resumes.
	Run host.RunFunc
	// Owner names this process among those sharing Tasks, and Durable says its tasks' runs survive it (Run is a
	// durable engine's): FailOrphans fails the tasks an earlier process of this Owner left unfinished otherwise.
	Owner   string
	Durable bool
	// Logger receives the server's log lines; nil discards them.
	Logger *slog.Logger
	// Telemetry traces each call, in the trace its caller sends, and the runs of its tasks; nil traces nothing.
	Telemetry *telemetry.Telemetry
	// Caller names who makes a request (the subject of its token); nil means callers are not told apart. A task is
	// its caller's: another caller can neither see, list, cancel, answer nor follow it, and the contexts of two
	// callers are two conversations even under one contextId.
	Caller func(*http.Request) string
	// Sessions, when set, counts the unfinished tasks (submitted, working or waiting for input) against its caps,
	// shared with the MCP listener's sessions: past them a new task is refused with HTTP 503, or 429 past
	// MaxTasksPerSubject, with Retry-After and a JSON-RPC error saying why. A task gives its place back when its
	// run ends. The tasks a durable engine resumes are not counted.
	Sessions *httpedge.Sessions
	// MaxTasksPerSubject bounds the unfinished tasks of one caller (Caller); 0 means no cap per caller.
	MaxTasksPerSubject int

	// now and newID replace the clock and the id source in tests.
	now   func() time.Time
	newID func() string
}

// Server serves the orchestrator as an A2A agent: each message starts (or continues) a task, which is one run.
type Server struct {
	orch   *host.Orchestrator
	opts   ServerOptions
	logger *slog.Logger
	store  *taskStore

	ctx    context.Context // ends at Close; every run is under it
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewServer returns a Server for orch. Close it to cancel the runs of its tasks.
func NewServer(orch *host.Orchestrator, opts *ServerOptions) *Server {
	s := &Server{orch: orch}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	o.Name = orDefault(o.Name, "agenthost")
	o.Version = orDefault(o.Version, "dev")
	o.Description = orDefault(strings.TrimSpace(o.Description), "An agent that answers a request using its tools.")
	if o.InputTimeout <= 0 {
		o.InputTimeout = 10 * time.Minute
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = 1000
	}
	if o.Run == nil {
		o.Run = orch.Run
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.newID == nil {
		o.newID = newID
	}
	s.logger = o.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.store = newTaskStore(o.MaxTasks, o.now, o.Tasks, s.logger)
	s.store.owner, s.store.durable = o.Owner, o.Durable
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if o.Tasks != nil {
		s.wg.Go(s.watchSignals)
	}
	return s
}

// Close cancels the runs of every task and waits for them to end. It is safe to call more than once.
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// Handler returns the HTTP handler: the agent card at /.well-known/agent-card.json (served without the token:
// callers read it to learn how to authenticate), the JSON-RPC endpoint at "/", and GET /healthz. Every request
// passes edge's checks first (Host, Origin, token, body size). health, when set, is reported by /healthz; it must
// hold no secrets.
func (s *Server) Handler(edge httpedge.Options, health func() any) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+cardPath, s.serveCard)
	mux.HandleFunc("GET /.well-known/agent.json", s.serveCard) // the path of older clients
	mux.HandleFunc("POST /{$}", s.serveRPC)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		status := map[string]any{"status": "ok", "agent": s.opts.Name}
		if health != nil {
			status["health"] = health()
		}
		_ = json.NewEncoder(w).Encode(status)
	})
	edge.Public = func(r *http.Request) bool {
		return r.Method == http.MethodGet && (r.URL.Path == cardPath || r.URL.Path == "/.well-known/agent.json")
	}
	return rpcRefusals(httpedge.Guard(mux, edge))
}

// codeRefused is the JSON-RPC error code of a request the HTTP edge refused (401 or 403: no token, a wrong one, a
// foreign Host or Origin): in the range JSON-RPC leaves to servers, as A2A defines none for it.
const codeRefused = -32000

// rpcRefusals answers the requests to the JSON-RPC endpoint that next refuses with 401 or 403 with a JSON-RPC error
// body, which A2A clients read to say why, in place of the edge's plain text; the status and the challenge
// (WWW-Authenticate) stay.
func rpcRefusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/" {
			next.ServeHTTP(w, r)
			return
		}
		rw := &refusalWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.refused == 0 {
			return
		}
		msg := strings.TrimSpace(rw.text.String())
		if msg == "" {
			msg = strings.ToLower(http.StatusText(rw.refused))
		}
		// A client that shows only the JSON-RPC error still tells its user the status.
		msg = fmt.Sprintf("%s (HTTP Status: %d %s)", msg, rw.refused, http.StatusText(rw.refused))
		w.Header().Del("Content-Length")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(rw.refused)
		_, _ = w.Write(mustJSON(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: codeRefused, Message: msg}}))
	})
}

// refusalWriter holds back a 401 or 403 and its text, for rpcRefusals to answer; any other response passes.
type refusalWriter struct {
	http.ResponseWriter
	refused int
	text    strings.Builder
	wrote   bool
}

func (w *refusalWriter) WriteHeader(code int) {
	if !w.wrote && (code == http.StatusUnauthorized || code == http.StatusForbidden) {
		w.refused = code
	}
	if w.refused == 0 {
		w.ResponseWriter.WriteHeader(code)
	}
	w.wrote = true
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.refused != 0 {
		if w.text.Len() < 1024 {
			w.text.Write(b)
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on, for the SSE streams the endpoint answers with.
func (w *refusalWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.refused == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveRPC reads one JSON-RPC request, picks the protocol version from A2A-Version (absent: 0.3), and answers.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	v, verr := parseVersion(r.Header.Get("A2A-Version"))
	if verr == nil && r.Header.Get("A2A-Version") == "" && r.URL.Query().Get("A2A-Version") != "" {
		v, verr = parseVersion(r.URL.Query().Get("A2A-Version"))
	}
	respondVersion := v
	if verr != nil || !(v.major == 1 || v == v03) {
		respondVersion = v10
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (mt != "application/json" && mt != "application/a2a+json") {
		writeError(w, nil, newError(codeContentTypeNotSupported, "Content-Type must be application/json").forVersion(respondVersion))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, nil, newError(codeInvalidRequest, "the request is larger than %d bytes", tooLarge.Limit).forVersion(respondVersion))
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) { // [serve] read_body_timeout: the caller may still be there to read why
			http.Error(w, "the request body did not arrive within the server's read timeout", http.StatusRequestTimeout)
		}
		return // else the caller went away
	}
	req, rerr := decodeRequest(body)
	if rerr != nil {
		var id json.RawMessage
		if req != nil {
			id = req.ID
		}
		writeError(w, id, rerr.forVersion(respondVersion))
		return
	}
	if verr != nil || !(v.major == 1 || v == v03) {
		supported := "1.0, 0.3"
		writeError(w, req.ID, newError(codeVersionNotSupported, "the requested A2A protocol version %q is not supported; supported versions: %s", r.Header.Get("A2A-Version"), supported))
		return
	}
	c := &rpcCall{s: s, w: w, r: r, req: req, v: v}
	if s.opts.Caller != nil {
		c.subject = s.opts.Caller(r)
	}
	if tel := s.opts.Telemetry; tel != nil {
		ctx, end := tel.StartA2AServer(r.Context(), r.Header, req.Method, v.String())
		c.r = r.WithContext(ctx)
		defer func() {
			if c.failed != nil {
				end(c.failed)
			} else {
				end(nil)
			}
		}()
	}
	c.serve()
}

// rpcCall is one JSON-RPC request being served.
type rpcCall struct {
	s   *Server
	w   http.ResponseWriter
	r   *http.Request
	req *rpcRequest
	v   version
	// failed is the error the call was answered with, for its span.
	failed *rpcError
	// subject is who makes the call (ServerOptions.Caller).
	subject string
}

func (c *rpcCall) serve() {
	var res any
	var err *rpcError
	switch m := c.req.Method; {
	case c.v.major == 1 && m == "SendMessage", c.v == v03 && m == "message/send":
		res, err = c.send()
	case c.v.major == 1 && m == "SendStreamingMessage", c.v == v03 && m == "message/stream":
		c.stream()
		return
	case c.v.major == 1 && m == "GetTask", c.v == v03 && m == "tasks/get":
		res, err = c.getTask()
	case c.v.major == 1 && m == "CancelTask", c.v == v03 && m == "tasks/cancel":
		res, err = c.cancelTask()
	case c.v.major == 1 && m == "ListTasks":
		res, err = c.listTasks()
	case c.v.major == 1 && m == "SubscribeToTask", c.v == v03 && m == "tasks/resubscribe":
		c.subscribe()
		return
	case c.v.major == 1 && strings.HasSuffix(m, "PushNotificationConfig"), c.v.major == 1 && m == "ListTaskPushNotificationConfigs",
		c.v == v03 && strings.HasPrefix(m, "tasks/pushNotificationConfig/"):
		err = newError(codePushNotSupported, "push notifications are not supported")
	case c.v.major == 1 && m == "GetExtendedAgentCard", c.v == v03 && m == "agent/getAuthenticatedExtendedCard":
		err = newError(codeExtendedCardNotAvailable, "this agent has no extended agent card")
	default:
		err = newError(codeMethodNotFound, "method %q not found in A2A %s", m, c.v)
	}
	if err != nil {
		c.failed = err
		writeError(c.w, c.req.ID, err.forVersion(c.v))
		return
	}
	writeResult(c.w, c.req.ID, res)
}

// sendRequest is a decoded send, whatever its version.
type sendRequest struct {
	msg           message
	historyLength *int
	blocking      bool
}

func (c *rpcCall) decodeSend() (*sendRequest, *rpcError) {
	out := &sendRequest{blocking: true}
	if c.v == v03 {
		var p sendParamsV03
		if err := decodeParams(c.req.Params, &p); err != nil {
			return nil, err
		}
		m, err := messageFromV03(p.Message)
		if err != nil {
			return nil, newError(codeInvalidParams, "message: %v", err)
		}
		out.msg = m
		if cfg := p.Configuration; cfg != nil {
			out.historyLength = cfg.HistoryLength
			if cfg.Blocking != nil {
				out.blocking = *cfg.Blocking
			}
			if len(cfg.PushConfig) > 0 && string(cfg.PushConfig) != "null" {
				return nil, newError(codePushNotSupported, "push notifications are not supported")
			}
		}
	} else {
		var p sendParams
		if err := decodeParams(c.req.Params, &p); err != nil {
			return nil, err
		}
		out.msg = p.Message
		if cfg := p.Configuration; cfg != nil {
			out.historyLength = cfg.HistoryLength
			out.blocking = !cfg.ReturnImmediately
			if len(cfg.PushConfig) > 0 && string(cfg.PushConfig) != "null" {
				return nil, newError(codePushNotSupported, "push notifications are not supported")
			}
		}
	}
	switch {
	case out.msg.MessageID == "":
		return nil, newError(codeInvalidParams, "message.messageId is required")
	case len(out.msg.Parts) == 0:
		return nil, newError(codeInvalidParams, "message.parts must not be empty")
	}
	return out, nil
}

// send serves SendMessage and message/send: the task, once it is done or waits for input (or at once with
// returnImmediately, or blocking false).
func (c *rpcCall) send() (any, *rpcError) {
	sr, err := c.decodeSend()
	if err != nil {
		return nil, err
	}
	st, sub, err := c.s.accept(c.r.Context(), c.subject, sr.msg, true)
	if err != nil {
		return nil, err
	}
	defer c.s.store.unsubscribe(st, sub)
	if sr.blocking {
		if err := waitDone(c.r.Context(), sub); err != nil {
			return nil, newError(codeInternal, "the caller went away before the task was done; it goes on: %v", err)
		}
	}
	t := c.s.store.snapshot(st, sr.historyLength)
	if c.v == v03 {
		return (&streamResponse{Task: &t}).toV03(), nil
	}
	return streamResponse{Task: &t}, nil
}

// stream serves SendStreamingMessage and message/stream: the task first, then its events, until it is done or
// waits for input.
func (c *rpcCall) stream() {
	sr, err := c.decodeSend()
	if err != nil {
		writeError(c.w, c.req.ID, err.forVersion(c.v))
		return
	}
	st, sub, err := c.s.accept(c.r.Context(), c.subject, sr.msg, false)
	if err != nil {
		writeError(c.w, c.req.ID, err.forVersion(c.v))
		return
	}
	c.relay(st, sub)
}

// subscribe serves SubscribeToTask and tasks/resubscribe.
func (c *rpcCall) subscribe() {
	st, p, err := c.task()
	if err != nil {
		writeError(c.w, c.req.ID, err.forVersion(c.v))
		return
	}
	if c.s.store.snapshot(st, ptr(0)).Status.State.terminal() {
		writeError(c.w, c.req.ID, newError(codeUnsupportedOperation, "task %q is in a terminal state", p.ID).forVersion(c.v))
		return
	}
	if st.stored { // another process runs it: its saved states are followed
		c.relay(st, c.s.follow(c.r.Context(), st, false, nil))
		return
	}
	c.relay(st, c.s.store.subscribe(st))
}

// relay writes a subscriber's events as a stream until the task is done, or the caller goes away.
func (c *rpcCall) relay(st *serverTask, sub *subscriber) {
	defer c.s.store.unsubscribe(st, sub)
	sse := newSSEWriter(c.w)
	sse.start()
	done := c.r.Context().Done()
	for {
		select {
		case ev, ok := <-sub.events:
			if !ok {
				return
			}
			if err := sse.event("", c.encodeEvent(ev)); err != nil {
				return
			}
		case <-done:
			return
		}
	}
}

// encodeEvent writes an event as the JSON-RPC response of the request, in the request's version.
func (c *rpcCall) encodeEvent(ev *streamResponse) []byte {
	var result any = ev
	if c.v == v03 {
		result = ev.toV03()
	}
	return responseJSON(c.req.ID, result)
}

// task finds the task that the request's params name.
func (c *rpcCall) task() (*serverTask, *taskIDParams, *rpcError) {
	var p taskIDParams
	if err := decodeParams(c.req.Params, &p); err != nil {
		return nil, nil, err
	}
	st, err := c.s.store.getFor(c.r.Context(), c.subject, p.ID)
	if err != nil {
		return nil, nil, err
	}
	return st, &p, nil
}

func (c *rpcCall) getTask() (any, *rpcError) {
	st, p, err := c.task()
	if err != nil {
		return nil, err
	}
	return c.taskResult(c.s.store.snapshot(st, p.HistoryLength)), nil
}

func (c *rpcCall) taskResult(t task) any {
	if c.v == v03 {
		return taskToV03(t)
	}
	return t
}

// cancelTask serves CancelTask: it cancels the run and everything under it, and answers once the task is
// CANCELED. A task already canceled is returned as it is; another finished task cannot be.
func (c *rpcCall) cancelTask() (any, *rpcError) {
	st, p, err := c.task()
	if err != nil {
		return nil, err
	}
	switch state := c.s.store.snapshot(st, ptr(0)).Status.State; {
	case state == stateCanceled:
		return c.taskResult(c.s.store.snapshot(st, p.HistoryLength)), nil
	case state.terminal():
		return nil, newError(codeTaskNotCancelable, "task %q is %s and cannot be canceled", p.ID, state.short())
	case st.stored:
		if err := c.s.cancelRemote(c.r.Context(), st); err != nil {
			return nil, err
		}
		return c.taskResult(c.s.store.snapshot(st, p.HistoryLength)), nil
	}
	st.cancel(errCanceledByCaller)
	select {
	case <-st.done:
	case <-c.r.Context().Done():
		return nil, newError(codeInternal, "the caller went away before the task was canceled")
	}
	return c.taskResult(c.s.store.snapshot(st, p.HistoryLength)), nil
}

var errCanceledByCaller = errors.New("the task was canceled by its caller")

// answerRemote passes an answer to the question of a task another process runs, and follows the task from there.
// The running process checks the answer as it checks its own callers'.
func (s *Server) answerRemote(ctx context.Context, st *serverTask, m message, endOnly bool) (*serverTask, *subscriber, *rpcError) {
	current := s.store.snapshot(st, ptr(0))
	switch {
	case m.ContextID != "" && m.ContextID != st.contextID:
		return nil, nil, newError(codeInvalidParams, "message.contextId %q does not match the task's context %q", m.ContextID, st.contextID)
	case !current.Status.State.interrupted():
		return nil, nil, newError(codeUnsupportedOperation, "task %q is working and waits for no input; wait for it or cancel it", st.id)
	}
	m.ContextID, m.Role = st.contextID, roleUser
	if err := s.signal(ctx, st, signalAnswer, m); err != nil {
		return nil, nil, err
	}
	asked := current.Status
	return st, s.follow(ctx, st, endOnly, func(t task) bool { return reflect.DeepEqual(t.Status, asked) }), nil
}

func (c *rpcCall) listTasks() (any, *rpcError) {
	var p listParams
	if len(bytes.TrimSpace(c.req.Params)) > 0 {
		if err := json.Unmarshal(c.req.Params, &p); err != nil {
			return nil, newError(codeInvalidParams, "invalid params: %v", err)
		}
	}
	return c.s.store.list(c.r.Context(), c.subject, p)
}

// accept takes a message: a new task (in the message's context, or a new one), or the answer to the question a
// task waits on. It returns the task and a subscription that sees what happens next, or with endOnly (a blocking
// send, which needs no event) only the end.
func (s *Server) accept(ctx context.Context, subject string, m message, endOnly bool) (*serverTask, *subscriber, *rpcError) {
	if m.TaskID != "" {
		st, err := s.store.getFor(ctx, subject, m.TaskID)
		if err != nil {
			return nil, nil, err
		}
		return s.answer(ctx, st, m, endOnly)
	}
	contextID := m.ContextID
	if contextID == "" {
		contextID = s.opts.newID()
	} else if st, err := s.waitingTask(ctx, subject, contextID); err != nil || st != nil {
		if err != nil {
			return nil, nil, err
		}
		// The message answers the task that waits: a new task would wait behind it (they share the conversation)
		// until the first one gives up, as a client that does not send taskId with its answer (ADK) would find.
		m.TaskID = st.id
		return s.answer(ctx, st, m, endOnly)
	}
	schema, parts, serr := outputSchemaOf(m)
	if serr != nil {
		return nil, nil, serr
	}
	prompt := promptOf(parts)
	if strings.TrimSpace(prompt) == "" {
		return nil, nil, newError(codeInvalidParams, "the message has no text to act on")
	}
	now := s.opts.now()
	m.ContextID, m.Role = contextID, roleUser
	m.TaskID = s.opts.newID()
	st := &serverTask{
		id: m.TaskID, contextID: contextID, subject: subject, done: make(chan struct{}),
		t: task{ID: m.TaskID, ContextID: contextID, Status: taskStatus{State: stateSubmitted, Timestamp: timestamp(now)}, History: []message{m}},
	}
	release, lerr := s.opts.Sessions.Open("task", subject, s.opts.MaxTasksPerSubject)
	if lerr != nil {
		var le *httpedge.LimitError
		if !errors.As(lerr, &le) {
			return nil, nil, newError(codeInternal, "the task could not be opened: %v", lerr)
		}
		return nil, nil, &rpcError{Code: codeServerBusy, Message: le.Message, limit: le}
	}
	if err := s.store.add(st); err != nil {
		release()
		return nil, nil, err
	}
	sub := s.listen(st, endOnly)
	// The run outlives the request, but stays in its trace.
	ctx, cancel := context.WithCancelCause(telemetry.Carry(ctx, s.ctx))
	st.cancel = cancel
	st.release = release // read by the run alone, which starts below
	s.wg.Go(func() {
		defer release() // finish gave it back already, unless the run panicked; a second call does nothing
		defer close(st.done)
		defer cancel(nil)
		s.run(ctx, st, prompt, schema)
	})
	return st, sub, nil
}

// waitingTask returns the one task of subject in contextID that waits in INPUT_REQUIRED, or nil when none does. With
// several waiting, which one a message without taskId answers cannot be told: it is refused, naming them.
func (s *Server) waitingTask(ctx context.Context, subject, contextID string) (*serverTask, *rpcError) {
	waiting, err := s.store.waitingIn(ctx, subject, contextID)
	switch {
	case err != nil:
		return nil, err
	case len(waiting) == 0:
		return nil, nil
	case len(waiting) == 1:
		return waiting[0], nil
	}
	ids := make([]string, len(waiting))
	for i, st := range waiting {
		ids[i] = fmt.Sprintf("%q", st.id)
	}
	return nil, newError(codeInvalidParams, "context %q has several tasks waiting for input (%s): set message.taskId to the one this message answers",
		contextID, strings.Join(ids, ", "))
}

// answer routes a message on st, the existing task it names: the answer to the question its run waits on. The task
// is WORKING again, and the caller subscribed, before the run gets the answer, so that the caller sees all that
// follows.
func (s *Server) answer(ctx context.Context, st *serverTask, m message, endOnly bool) (*serverTask, *subscriber, *rpcError) {
	s.store.mu.Lock()
	state, q := st.t.Status.State, st.waiting
	s.store.mu.Unlock()
	switch {
	case st.stored && !state.terminal():
		return s.answerRemote(ctx, st, m, endOnly)
	case m.ContextID != "" && m.ContextID != st.contextID:
		return nil, nil, newError(codeInvalidParams, "message.contextId %q does not match the task's context %q", m.ContextID, st.contextID)
	case state.terminal():
		return nil, nil, newError(codeUnsupportedOperation, "task %q is in a terminal state (%s); send a new message without taskId", m.TaskID, state.short())
	case q == nil:
		return nil, nil, newError(codeUnsupportedOperation, "task %q is working and waits for no input; wait for it or cancel it", m.TaskID)
	}
	a, perr := q.parse(m)
	if perr != nil {
		return nil, nil, perr
	}
	m.ContextID, m.Role = st.contextID, roleUser
	claimed := false
	s.store.update(st, func(t *serverTask) *streamResponse {
		if t.waiting != q {
			return nil // answered already, or given up on
		}
		claimed = true
		t.waiting = nil
		t.t.History = append(t.t.History, m)
		t.t.Status = taskStatus{State: stateWorking, Timestamp: timestamp(s.opts.now())}
		return &streamResponse{StatusUpdate: &statusUpdate{TaskID: t.id, ContextID: t.contextID, Status: t.t.Status}}
	})
	if !claimed {
		return nil, nil, newError(codeUnsupportedOperation, "task %q waits for no input any more", m.TaskID)
	}
	sub := s.listen(st, endOnly)
	q.answers <- a // buffered: the question takes one answer
	return st, sub, nil
}

// listen subscribes to st's events, or with endOnly to its end alone.
func (s *Server) listen(st *serverTask, endOnly bool) *subscriber {
	if endOnly {
		return s.store.await(st)
	}
	return s.store.subscribe(st)
}

// OutputSchemaKey names the output schema a message may carry, in its metadata or as the one field of a data part:
// the answer is then a JSON value that matches it.
const OutputSchemaKey = "output_schema"

// outputSchemaOf returns the output schema m asks for, from its metadata or a data part {"output_schema": {...}},
// and the parts that make the prompt: all but that data part.
func outputSchemaOf(m message) (json.RawMessage, []part, *rpcError) {
	var schema json.RawMessage
	if len(m.Metadata) > 0 {
		var md map[string]json.RawMessage
		if err := json.Unmarshal(m.Metadata, &md); err == nil {
			schema = md[OutputSchemaKey]
		}
	}
	parts := m.Parts
	for i, p := range m.Parts {
		if p.Kind != partData {
			continue
		}
		var d map[string]json.RawMessage
		if json.Unmarshal(p.Data, &d) != nil || len(d) != 1 || d[OutputSchemaKey] == nil {
			continue
		}
		schema = d[OutputSchemaKey]
		parts = append(m.Parts[:i:i], m.Parts[i+1:]...)
		break
	}
	if len(schema) > 0 && !bytes.HasPrefix(bytes.TrimSpace(schema), []byte("{")) {
		return nil, nil, newError(codeInvalidParams, "%s must be a JSON Schema object", OutputSchemaKey)
	}
	return schema, parts, nil
}

// promptOf reads a message as a prompt: its text parts, then each data part as JSON, each file as a line naming it.
func promptOf(parts []part) string {
	var lines []string
	for _, p := range parts {
		switch p.Kind {
		case partText:
			lines = append(lines, p.Text)
		case partData:
			lines = append(lines, string(p.Data))
		case partURL:
			lines = append(lines, host.LinkPlaceholder(p.Filename, p.URL))
		case partRaw:
			lines = append(lines, host.Placeholder("file", p.MediaType, len(p.Raw)))
		}
	}
	return strings.Join(lines, "\n")
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(responseJSON(id, result))
}

func writeError(w http.ResponseWriter, id json.RawMessage, e *rpcError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if e.limit != nil {
		e.limit.WriteHeaders(w)
	}
	writeJSON(w, rpcResponse{JSONRPC: "2.0", ID: id, Error: e})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(mustJSON(v))
}

// responseJSON encodes the JSON-RPC response of request id with result: the bytes json.Marshal makes of the
// rpcResponse, without encoding the result twice (json.Marshal would compact and check it again as a RawMessage:
// 7% of a served request's CPU).
func responseJSON(id json.RawMessage, result any) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), mustJSON(id)...)
	b = append(b, `,"result":`...)
	b = append(b, mustJSON(result)...)
	return append(b, '}')
}

// mustJSON encodes values made of the package's own types, which always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("a2a: encoding %T: %v", v, err))
	}
	return b
}

// waitDone waits until the subscription ends (the task is done or waits for input) or ctx ends.
func waitDone(ctx context.Context, sub *subscriber) error {
	for {
		select {
		case _, ok := <-sub.events:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
