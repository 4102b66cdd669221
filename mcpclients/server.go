package mcpclients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/telemetry/mcptrace"
)

const (
	defaultConnectTimeout = 30 * time.Second
	defaultReconnectWait  = 10 * time.Second
	defaultMinBackoff     = 500 * time.Millisecond
	defaultMaxBackoff     = 30 * time.Second
	maxListedResources    = 20 // resources named in the read_resource tool's description
)

// Server is one configured MCP server: a host.Toolset whose tools call it. While it is connected, a supervisor
// goroutine waits for its session to end; when it ends unexpectedly (the child exited, the HTTP session was lost),
// the supervisor reconnects at once, then with exponential backoff, and lists the tools again. A call made while it
// is down waits for it, up to ReconnectWait; a call in flight when it went away is made again once it is back when
// the tool says that is safe (readOnlyHint, idempotentHint, or RetryOnDisconnect), else the model is told the call
// may or may not have taken effect.
type Server struct {
	cfg        ServerConfig
	opts       *Options
	logger     *slog.Logger
	client     *mcp.Client
	minBackoff time.Duration
	maxBackoff time.Duration

	ctx    context.Context // ends at close; owns the supervisor
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu               sync.Mutex
	session          *mcp.ClientSession // nil while down
	stop             context.CancelFunc // ends the session's connection context
	cmd              *exec.Cmd          // the current child, for stdio
	stderr           *lineLogger        // the stderr of the last child started, for stdio
	state            State
	lastErr          error // stored redacted (redact.Error): it is shown as it is
	retrying         bool  // failed at start-up and tried again in the background (Options.RetryFailed)
	protocol         string
	instructions     string
	tools            []host.Tool             // a new slice whenever the list changes (see host.Toolset)
	changed          chan struct{}           // closed, and replaced, when the session comes or goes
	toolsChanged     host.Signal             // notified when tools is a new list
	prompts          []*mcp.Prompt           // as of the last listing
	logLevel         string                  // the log level asked of the server, "" for none
	resources        []*mcp.Resource         // as of the last listing
	templates        []*mcp.ResourceTemplate // as of the last listing
	resourcesChanged host.Signal             // notified when resources or templates are new lists
	onUpdated        func(uri string)        // receives notifications/resources/updated
	promptsChanged   host.Signal             // notified when prompts is a new list
	refresh          chan struct{}

	callsMu sync.Mutex
	calls   map[string]inFlight // by progress token
	order   []string            // progress tokens of calls in flight, oldest first
	nextID  uint64
}

// inFlight is a call in flight to the server.
type inFlight struct {
	call   *host.Call
	ctx    context.Context    // the context it is made under
	cancel context.CancelFunc // ends it when the server is closed
}

var (
	_ host.Toolset    = (*Server)(nil)
	_ host.Instructor = (*Server)(nil)
)

func newServer(cfg ServerConfig, opts *Options) *Server {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	s := &Server{
		cfg: cfg, opts: opts, logger: logger.With("server", cfg.Name),
		minBackoff: opts.MinBackoff, maxBackoff: opts.MaxBackoff,
		state: StateFailed, calls: map[string]inFlight{}, refresh: make(chan struct{}, 1), changed: make(chan struct{}),
	}
	if s.cfg.ReconnectWait == 0 {
		s.cfg.ReconnectWait = defaultReconnectWait
	}
	if s.minBackoff <= 0 {
		s.minBackoff = defaultMinBackoff
	}
	if s.maxBackoff <= 0 {
		s.maxBackoff = defaultMaxBackoff
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	name, version := opts.ClientName, opts.ClientVersion
	if name == "" {
		name = "agenthost"
	}
	if version == "" {
		version = "dev"
	}
	copts := &mcp.ClientOptions{
		Logger:             nil, // the SDK's own logging is too chatty for ours
		ElicitationHandler: s.handleElicitation,
		// Progress notifications never reach the SDK's handlers: progressFirst relays them as they are read.
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.requestRefresh() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.requestRefresh() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.requestRefresh() },
		ResourceUpdatedHandler:     s.resourceUpdated,
		Capabilities:               &mcp.ClientCapabilities{}, // no roots: agenthost has none to offer
	}
	if opts.Sampler != nil || cfg.SampleWithCaller {
		copts.CreateMessageHandler = s.handleSampling
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, copts)
	if opts.Telemetry != nil {
		transport := mcptrace.TransportTCP
		if cfg.Transport == TransportStdio {
			transport = mcptrace.TransportPipe
		}
		s.client.AddSendingMiddleware(mcptrace.Client(opts.Telemetry, transport))
		// A sampling or elicitation request names no call either: it is traced under the only call in flight.
		s.client.AddReceivingMiddleware(mcptrace.ClientHandlers(opts.Telemetry, transport, func() context.Context { return s.onlyCall().ctx }))
	}
	return s
}

// Name implements host.Toolset.
func (s *Server) Name() string { return "mcp:" + s.cfg.Name }

// Tools implements host.Toolset: the tools of the last listing, also while the server is reconnecting (their calls
// then fail at once, which tells the model more than tools that vanish).
func (s *Server) Tools(context.Context) ([]host.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, nil
}

// Changed implements host.Notifier.
func (s *Server) Changed() <-chan struct{} { return s.toolsChanged.Changed() }

// Instructions implements host.Instructor.
func (s *Server) Instructions() string {
	if !s.cfg.UseInstructions {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.instructions
}

// Status returns the server's state.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.cfg.Name, Transport: s.cfg.Transport, State: s.state, ProtocolVersion: s.protocol, Tools: len(s.tools)}
	if s.lastErr != nil && s.state != StateConnected {
		st.Error = s.lastErr.Error()
		if s.stderr != nil {
			st.Stderr = s.stderr.Tail()
		}
		st.Cause = Cause(s.cfg, s.lastErr, st.Stderr)
	}
	return st
}

func (s *Server) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retrying || (s.state != StateFailed && s.state != StateNeedsLogin)
}

// start makes the first connection, under ConnectTimeout, and starts the supervisor.
func (s *Server) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	if err := s.connect(ctx); err != nil {
		err = redact.Error(err) // it is logged, shown by check and healthz, and told to the model
		s.mu.Lock()
		s.lastErr = err
		if errors.Is(err, mcpauth.ErrNeedsLogin) {
			s.state = StateNeedsLogin
		}
		s.mu.Unlock()
		return err
	}
	s.wg.Go(s.supervise)
	return nil
}

// connect opens a session, lists the tools (and resources) and makes them current. ctx bounds the attempt; the
// connection itself lives until the server is closed or lost.
func (s *Server) connect(ctx context.Context) error {
	t, cmd, err := s.transport(ctx)
	if err != nil {
		return err
	}
	if s.cfg.Transport == TransportStdio {
		t = &progressFirst{Transport: t, relay: s.relayers()} // over HTTP, httpClient's streams relay it
	}
	session, stop, err := s.dial(ctx, t)
	if err != nil {
		killProcessGroup(cmd)
		return fmt.Errorf("connect: %w", err)
	}
	tools, err := s.list(ctx, session)
	if err != nil {
		_ = session.Close()
		stop()
		killProcessGroup(cmd)
		return err
	}
	prompts, err := s.listPrompts(ctx, session)
	if err != nil {
		s.logger.Warn("prompts could not be listed", "err", err) // the tools still work
	}
	resources, templates, err := s.listResources(ctx, session)
	if err != nil {
		s.logger.Warn("resources could not be listed", "err", err)
	}
	init := session.InitializeResult()
	s.mu.Lock()
	if s.ctx.Err() != nil {
		// close ran while this connection was being made: it saw no session to close, so this one is closed here,
		// or the supervisor would wait for it forever.
		s.mu.Unlock()
		_ = session.Close()
		stop()
		killProcessGroup(cmd)
		return s.ctx.Err()
	}
	s.session, s.stop, s.cmd, s.tools, s.prompts, s.state, s.lastErr = session, stop, cmd, tools, prompts, StateConnected, nil
	s.resources, s.templates = resources, templates
	if init != nil {
		s.protocol, s.instructions = init.ProtocolVersion, init.Instructions
	}
	s.signalLocked()
	s.mu.Unlock()
	s.toolsChanged.Notify()
	s.promptsChanged.Notify()
	s.resourcesChanged.Notify()
	s.logger.Info("MCP server connected", "transport", s.cfg.Transport, "protocol", s.protocol, "tools", len(tools))
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	if level != "" {
		if err := s.applyLogLevel(ctx, session, level); err != nil {
			s.logger.Warn("the log level could not be set again", "level", level, "err", err)
		}
	}
	return nil
}

// dial connects t. The SDK ties a transport's long-lived streams (the SSE stream of the legacy transport) to the
// context given to Connect, so that context is derived from the server's own, and ctx only bounds the wait: when it
// ends first, the attempt is cancelled and waited for. On success, stop ends the connection's context; it is called
// when the session is lost or closed.
func (s *Server) dial(ctx context.Context, t mcp.Transport) (session *mcp.ClientSession, stop context.CancelFunc, err error) {
	type dialed struct {
		session *mcp.ClientSession
		err     error
	}
	attempt, cancel := context.WithCancel(s.ctx)
	done := make(chan dialed, 1)
	go func() {
		session, err := s.client.Connect(attempt, t, &mcp.ClientSessionOptions{ProtocolVersion: s.cfg.ProtocolVersion})
		done <- dialed{session, err}
	}()
	select {
	case d := <-done:
		if d.err != nil {
			cancel()
			return nil, nil, d.err
		}
		return d.session, cancel, nil
	case <-ctx.Done():
		cancel()
		if d := <-done; d.err == nil {
			_ = d.session.Close()
		}
		return nil, nil, ctx.Err()
	}
}

// list returns the server's tools as host tools, filtered and named, plus read_resource when it has resources.
func (s *Server) list(ctx context.Context, session *mcp.ClientSession) ([]host.Tool, error) {
	var tools []host.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if !s.keep(t.Name) {
			continue
		}
		spec, err := toolSpec(host.ToolName(s.cfg.Prefix, t.Name), t)
		if err != nil {
			s.logger.Warn("tool skipped: its definition cannot be used", "tool", t.Name, "err", err)
			continue
		}
		tools = append(tools, &tool{server: s, name: t.Name, spec: spec, retry: s.retryable(t)})
	}
	if init := session.InitializeResult(); init != nil && init.Capabilities != nil && init.Capabilities.Resources != nil {
		rt, err := s.resourceTool(ctx, session)
		if err != nil {
			// A server may declare resources and fail to list them: its tools still work.
			s.logger.Warn("resources could not be listed", "err", err)
		} else {
			tools = append(tools, rt)
		}
	}
	return tools, nil
}

// retryable reports whether a call of t in flight when the server went away may be made again: t says it is
// read-only or idempotent, or the configuration says so.
func (s *Server) retryable(t *mcp.Tool) bool {
	if a := t.Annotations; a != nil && (a.ReadOnlyHint || a.IdempotentHint) {
		return true
	}
	return slices.Contains(s.cfg.RetryOnDisconnect, t.Name)
}

// keep applies the include and exclude patterns to a tool's own name.
func (s *Server) keep(name string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	return (len(s.cfg.Include) == 0 || match(s.cfg.Include)) && !match(s.cfg.Exclude)
}

// supervise waits for the session to end and reconnects, and lists the tools again when the server says they
// changed. It runs until close. A call may find the session lost before the supervisor first looks at it: then it
// reconnects at once.
func (s *Server) supervise() {
	for {
		s.mu.Lock()
		session := s.session
		s.mu.Unlock()
		if session != nil {
			s.watch(session)
		}
		if s.ctx.Err() != nil || !s.reconnect() {
			return
		}
	}
}

// retryStart waits the least backoff after a failed start, then supervises the server, which begins by connecting
// again (with no session yet) and goes on as for a server that was lost.
func (s *Server) retryStart() {
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(s.minBackoff):
	}
	s.supervise()
}

// watch returns when session has ended (and is marked lost) or the server is closed; meanwhile it lists the tools
// again when asked to.
func (s *Server) watch(session *mcp.ClientSession) {
	ended := make(chan error, 1)
	s.wg.Go(func() { ended <- session.Wait() }) // returns once the session is closed, at the latest by close
	for {
		select {
		case <-s.ctx.Done():
			return
		case err := <-ended:
			s.lost(session, err)
			return
		case <-s.refresh:
			s.refreshTools(session)
			s.refreshPrompts(session)
			s.refreshResources(session)
		}
	}
}

// lost marks session as gone, if it is still the current one, and stops what is left of its child. It is called by
// the supervisor when the session ends, and by a call that saw the connection fail.
func (s *Server) lost(session *mcp.ClientSession, err error) {
	s.mu.Lock()
	if s.session != session || s.session == nil {
		s.mu.Unlock()
		return
	}
	cmd, stop := s.cmd, s.stop
	s.session, s.stop, s.cmd, s.state = nil, nil, nil, StateReconnecting
	if err == nil {
		err = errors.New("the connection closed")
	}
	err = redact.Error(err)
	s.lastErr = err
	s.signalLocked()
	s.mu.Unlock()
	if s.ctx.Err() == nil { // at shutdown, close finds no session left: it is closed here all the same
		s.logger.Warn("MCP server went away; reconnecting", "err", err)
	}
	_ = session.Close()
	stop()
	killProcessGroup(cmd)
}

// reconnect tries to connect until it succeeds or the server is closed: at once, then waiting longer after each
// failure (doubling from MinBackoff up to MaxBackoff, with jitter). Calls wait for it (see await), so the first
// attempt costs them nothing when the server comes back at once, as a crashed child does. It reports whether it
// reconnected.
func (s *Server) reconnect() bool {
	delay := s.minBackoff
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			jittered := delay/2 + rand.N(delay/2+1) // between half and all of the delay
			select {
			case <-s.ctx.Done():
				return false
			case <-time.After(jittered):
			}
			delay = min(delay*2, s.maxBackoff)
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
		err := redact.Error(s.connect(ctx))
		cancel()
		if err == nil {
			s.logger.Info("MCP server reconnected", "attempt", attempt)
			return true
		}
		if s.ctx.Err() != nil {
			return false
		}
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		s.logger.Warn("MCP server reconnection failed", "attempt", attempt, "retry_in", delay, "err", err)
	}
}

// requestRefresh asks the supervisor to list the tools again. Notification handlers must not block on a request to
// the same server, so the listing happens on the supervisor's goroutine.
func (s *Server) requestRefresh() {
	select {
	case s.refresh <- struct{}{}:
	default: // a refresh is already pending
	}
}

func (s *Server) refreshTools(session *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
	defer cancel()
	tools, err := s.list(ctx, session)
	if err != nil {
		s.logger.Warn("tools could not be listed again after list_changed", "err", err)
		return
	}
	s.mu.Lock()
	current := s.session == session
	if current {
		s.tools = tools
	}
	s.mu.Unlock()
	if current {
		s.toolsChanged.Notify()
	}
	s.logger.Info("MCP server's tools changed", "tools", len(tools))
}

// signalLocked wakes the calls waiting for the session to come or go.
func (s *Server) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// errWaitEnded is returned by await when ctx ended first.
var errWaitEnded = errors.New("the call ended while waiting for the server")

// await returns the session to call: the current one, or, while the server reconnects, the next one, waited for
// up to ReconnectWait or until ctx ends. Otherwise it returns an error saying why there is none.
func (s *Server) await(ctx context.Context) (*mcp.ClientSession, error) {
	var deadline <-chan time.Time
	start := time.Now()
	for {
		s.mu.Lock()
		session, state, changed, lastErr := s.session, s.state, s.changed, s.lastErr
		s.mu.Unlock()
		switch {
		case session != nil:
			return session, nil
		case state == StateClosed:
			return nil, fmt.Errorf("MCP server %q is shut down", s.cfg.Name)
		case state == StateFailed || state == StateNeedsLogin:
			return nil, fmt.Errorf("MCP server %q is not connected: %v", s.cfg.Name, lastErr)
		}
		if deadline == nil {
			t := time.NewTimer(max(s.cfg.ReconnectWait, 0))
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errWaitEnded
		case <-deadline:
			return nil, fmt.Errorf("MCP server %q is down (it went away: %v) and did not come back within %s; it is still reconnecting, try again later",
				s.cfg.Name, lastErr, time.Since(start).Round(100*time.Millisecond))
		}
	}
}

// close ends the calls in flight and the session, stops the child and the supervisor. It is safe to call more than
// once.
func (s *Server) close() {
	s.cancel()
	s.endCalls()
	s.mu.Lock()
	session, cmd := s.session, s.cmd
	s.session, s.stop, s.cmd = nil, nil, nil // s.cancel above ended every connection's context
	if s.state != StateFailed && s.state != StateNeedsLogin {
		s.state = StateClosed
	}
	s.signalLocked()
	s.mu.Unlock()
	if session != nil {
		_ = session.Close() // closes stdin, waits for the child, signals it if it lingers
	}
	killProcessGroup(cmd)
	s.wg.Wait()
}

// track registers a call in flight and returns its progress token, the context to make it under, and a function
// that ends the registration. The context ends with ctx or when the server is closed: the SDK's Close waits for the
// requests in flight, so close ends them first.
func (s *Server) track(ctx context.Context, call *host.Call) (token string, callCtx context.Context, done func()) {
	callCtx, cancel := context.WithCancel(ctx)
	s.callsMu.Lock()
	s.nextID++
	token = s.cfg.Name + "-" + strconv.FormatUint(s.nextID, 10)
	s.calls[token] = inFlight{call: call, ctx: callCtx, cancel: cancel}
	s.order = append(s.order, token)
	s.callsMu.Unlock()
	if s.ctx.Err() != nil { // close may have ended the calls in flight before this one was registered
		cancel()
	}
	return token, callCtx, func() {
		cancel()
		s.callsMu.Lock()
		delete(s.calls, token)
		for i, t := range s.order {
			if t == token {
				s.order = append(s.order[:i], s.order[i+1:]...)
				break
			}
		}
		s.callsMu.Unlock()
	}
}

// endCalls cancels every call in flight. close calls it after ending s.ctx, so a call registered later sees that.
func (s *Server) endCalls() {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	for _, c := range s.calls {
		c.cancel()
	}
}

// relayers are the server's receivers of the notifications relayed in order.
func (s *Server) relayers() relayers { return relayers{progress: s.relayProgress, log: s.relayLog} }

// relayLog relays a log message to the call in flight, when there is exactly one: a server's log messages name no
// call, and one caller's must not reach another. Otherwise, and when that call's caller takes no log messages, the
// message goes to agenthost's log at debug level.
func (s *Server) relayLog(p *mcp.LoggingMessageParams) {
	data, err := json.Marshal(p.Data)
	if err != nil {
		return
	}
	if !s.onlyCall().call.ReportLog(host.LogMessage{Level: string(p.Level), Logger: p.Logger, Data: data}) {
		s.logger.Debug("server log message", "level", p.Level, "logger", p.Logger, "data", string(data))
	}
}

// onlyCall returns the call in flight when there is exactly one, else the zero inFlight: what a server sends without
// naming a call (a log message, a sampling request) may be its.
func (s *Server) onlyCall() inFlight {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	if len(s.calls) != 1 {
		return inFlight{}
	}
	for _, c := range s.calls {
		return c
	}
	return inFlight{}
}

// relayProgress relays a progress notification to the call it belongs to.
func (s *Server) relayProgress(p *mcp.ProgressNotificationParams) {
	token := fmt.Sprint(p.ProgressToken)
	s.callsMu.Lock()
	call := s.calls[token].call
	s.callsMu.Unlock()
	call.ReportProgress(host.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// callKey carries the host.Call of a tool call in the context of its request, for SDK callbacks that run with it.
type callKey struct{}

// interactor finds who to ask for a server's request: the call whose context the request runs in, else the most
// recent call in flight to this server (a server asks while handling a call), else nobody.
func (s *Server) interactor(ctx context.Context) host.Interactor {
	if call, ok := ctx.Value(callKey{}).(*host.Call); ok && call.Interactor() != nil {
		return call.Interactor()
	}
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	for i := len(s.order) - 1; i >= 0; i-- {
		if ia := s.calls[s.order[i]].call.Interactor(); ia != nil {
			return ia
		}
	}
	return nil
}

// sampleWithCaller puts a sampling request to the caller of the call in flight, unchanged. As with log messages
// (see relayLog), the request names no call: it goes to the caller of the call whose context it runs in, else of the
// only call in flight; with several in flight, it fails rather than reach the wrong caller.
func (s *Server) sampleWithCaller(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	call, _ := ctx.Value(callKey{}).(*host.Call)
	if call == nil {
		call = s.onlyCall().call
	}
	if call == nil {
		return nil, fmt.Errorf("sampling = \"caller\" for MCP server %q, but no single call of it is in flight whose caller could answer", s.cfg.Name)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	out, err := call.Relay(ctx, "sampling/createMessage", raw)
	if err != nil {
		return nil, fmt.Errorf("sampling with the caller's model: %w", err)
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("sampling with the caller's model: its answer: %w", err)
	}
	s.logger.Info("sampling request answered by the caller's model", "model", res.Model)
	return &res, nil
}

// sample asks the host's model, observed as a model call of its own.
func (s *Server) sample(ctx context.Context, req *llm.Request) (resp *llm.Response, err error) {
	if s.opts.Telemetry != nil {
		var end func(*llm.Response, error)
		ctx, end = s.opts.Telemetry.StartModelCall(ctx, &host.ModelCallStart{Model: s.opts.Sampler, Request: req})
		defer func() { end(resp, err) }()
	}
	return s.opts.Sampler.Generate(ctx, req, nil)
}

// bound returns a context that ends with ctx or when the server is closed, whichever comes first. The SDK's Close
// waits for the server's requests in flight, so a handler that waits on the server's behalf (for the user, for the
// model) runs under it.
func (s *Server) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// handleElicitation forwards a server's elicitation to whoever called the orchestrator; with nobody to ask, it is
// declined.
func (s *Server) handleElicitation(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ia := s.interactor(ctx)
	if ia == nil {
		s.logger.Info("elicitation declined: nobody to ask", "message", req.Params.Message)
		return &mcp.ElicitResult{Action: string(host.ElicitDecline)}, nil
	}
	res, err := ia.Elicit(ctx, elicitRequest(req.Params, s.Name()))
	if err != nil {
		return nil, fmt.Errorf("asking the user: %w", err)
	}
	return elicitResult(res), nil
}

// handleSampling answers a server's sampling request with the host's model.
func (s *Server) handleSampling(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if !s.cfg.AllowSampling {
		return nil, fmt.Errorf("sampling is not allowed for MCP server %q (allow_sampling = false in agent.toml)", s.cfg.Name)
	}
	if s.cfg.SampleWithCaller {
		return s.sampleWithCaller(ctx, req.Params)
	}
	lreq, err := samplingRequest(req.Params, s.cfg.SamplingMaxTokens)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	resp, err := s.sample(ctx, lreq)
	if err != nil {
		return nil, fmt.Errorf("the host's model failed: %w", err)
	}
	model := resp.Model
	if model == "" {
		model = "agenthost"
	}
	s.logger.Info("sampling request answered", "tokens", resp.Usage.TotalTokens)
	return samplingResult(resp, model), nil
}
