package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// This file is gateway mode: besides the agent tool, the server offers every merged tool that the policy leaves
// enabled, under its final name, and forwards each call to the tool through the ToolManager, so that the admin's
// policy (require_approval, tool_timeout) applies to a gateway caller as it does to the model.

// defaultToolsPollInterval is how often gateway mode looks for changes in the merged tool list when some source
// does not say when its list changes.
const defaultToolsPollInterval = time.Second

// gateway keeps the tools the MCP server offers in step with the ToolManager's merged list: the agent tool, whose
// description and tool enums name the tools, always; and in gateway mode (expose) the tools themselves, whose calls
// it forwards.
type gateway struct {
	expose    bool
	search    bool                      // the search or code form: only the pinned tools are offered by name (gatewaysearch.go)
	code      host.CodeRunner           // the code form's runner (gatewaycode.go); nil in the other forms
	agent     func([]*host.ManagedTool) // refreshes the agent tool
	mcp       *mcp.Server
	tools     *host.ToolManager
	agentTool string // the agent tool's name: a merged tool of that name cannot be offered
	timeout   time.Duration
	logger    *slog.Logger
	calls     atomic.Uint64 // numbers the calls, for their ids
	rounds    *roundTrips   // calls that ask their callers through input requests

	mu       sync.Mutex
	last     []*host.ManagedTool      // the list synced last, to skip the work while it is the same slice
	exported map[string]host.ToolSpec // what is offered, by name
	codeDesc string                   // run_code's description as offered last, in the code form
	warned   map[string]bool          // tools whose problem was logged, by name and problem

	stop context.CancelFunc
	done chan struct{} // closed when the watcher has returned
}

// startGateway offers tools now, and watches the merged list until ctx ends or close is called (see watch).
func startGateway(ctx context.Context, s *Server, tools []*host.ManagedTool, interval time.Duration, expose, search bool, code host.CodeRunner) *gateway {
	g := &gateway{
		expose:    expose,
		search:    expose && search,
		agent:     s.setAgentTool,
		mcp:       s.mcp,
		tools:     s.orch.Tools(),
		agentTool: s.toolName,
		rounds:    s.rounds,
		timeout:   cmp.Or(s.opts.ToolTimeout, host.DefaultToolTimeout),
		logger:    s.logger,
		exported:  map[string]host.ToolSpec{},
		warned:    map[string]bool{},
		done:      make(chan struct{}),
	}
	if g.search {
		g.code = code
		g.offerSearch()
	}
	g.sync(tools)
	ctx, g.stop = context.WithCancel(ctx)
	go g.watch(ctx, cmp.Or(interval, defaultToolsPollInterval))
	return g
}

// close stops the watcher and waits for it. It is safe to call more than once.
func (g *gateway) close() {
	g.stop()
	<-g.done
}

// watch syncs the offered tools with the merged list until ctx ends: as soon as a source says its list changed, and,
// when some source cannot say so, every interval as well. The ToolManager returns the same slice while nothing
// changed, so a sync with no change costs a comparison.
func (g *gateway) watch(ctx context.Context, interval time.Duration) {
	defer close(g.done)
	poke := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		g.tools.Watch(ctx, func() {
			select {
			case poke <- struct{}{}:
			default: // a sync is pending already
			}
		})
	})
	var tick <-chan time.Time
	if !g.tools.Notifies() {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-poke:
		case <-tick:
		}
		tools, _ := g.tools.Tools(ctx) // problems are the orchestrator's to log; the list is still usable
		if ctx.Err() != nil {
			return
		}
		g.sync(tools)
	}
}

// relayToCaller puts an upstream server's request to the caller of the call it serves, unchanged: sampling, with
// the caller's model, when the caller can sample.
func relayToCaller(ctx context.Context, session *mcp.ServerSession, c caller, method string, params json.RawMessage) (json.RawMessage, error) {
	if method != "sampling/createMessage" {
		return nil, fmt.Errorf("%w: %s is not relayed", host.ErrNoRelay, method)
	}
	if p := session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Sampling == nil {
		return nil, fmt.Errorf("%w: the caller does not support sampling", host.ErrNoRelay)
	}
	var cp mcp.CreateMessageParams
	if err := json.Unmarshal(params, &cp); err != nil {
		return nil, err
	}
	res, err := c.CreateMessage(ctx, &cp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// sync makes the offered tools those of tools that are enabled (and, in the search and code forms, pinned), and in the
// code form describes run_code's tools anew. The SDK sends notifications/tools/list_changed to the connected clients
// when a tool is added, replaced or removed, so only tools whose spec changed are touched.
func (g *gateway) sync(tools []*host.ManagedTool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last != nil && len(tools) == len(g.last) && (len(tools) == 0 || &tools[0] == &g.last[0]) {
		return
	}
	g.last = tools
	if g.last == nil {
		g.last = []*host.ManagedTool{}
	}
	g.agent(tools)
	if !g.expose {
		return
	}
	if g.code != nil {
		g.offerCode(tools)
	}
	want := make(map[string]*mcp.Tool, len(tools))
	specs := make(map[string]host.ToolSpec, len(tools))
	for _, t := range tools {
		name := t.Spec.Name
		if t.Policy.Disabled || !g.offered(t) {
			continue
		}
		if name == g.agentTool {
			g.warnOnce(name, "tool not offered in gateway mode: its name is the agent tool's; rename one", "source", t.Source)
			continue
		}
		if g.reserved(name) {
			msg := "tool not offered by name in gateway mode: its name is that of a tool of the search form; call it through " + CallToolName
			if g.code != nil {
				msg = "tool not offered in gateway mode: its name is that of a tool of the code form; rename it"
			}
			g.warnOnce(name, msg, "source", t.Source)
			continue
		}
		mt, err := mcpTool(t.Spec)
		if err != nil {
			g.warnOnce(name, "tool not offered in gateway mode: "+err.Error(), "source", t.Source)
			continue
		}
		want[name], specs[name] = mt, t.Spec
	}
	var gone []string
	for name := range g.exported {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(g.exported, name)
		}
	}
	if len(gone) > 0 {
		g.mcp.RemoveTools(gone...)
	}
	for name, mt := range want {
		if old, ok := g.exported[name]; ok && reflect.DeepEqual(old, specs[name]) {
			continue
		}
		g.mcp.AddTool(mt, g.handler(name))
		g.exported[name] = specs[name]
	}
}

func (g *gateway) warnOnce(tool, msg string, args ...any) {
	key := tool + "\x00" + msg
	if g.warned[key] {
		return
	}
	g.warned[key] = true
	g.logger.Warn(msg, append([]any{"tool", tool}, args...)...)
}

// mcpTool converts a tool's spec into its MCP definition. Schemas pass through as they are; an input schema that is
// not an object schema cannot be offered (MCP requires "type": "object").
func mcpTool(spec host.ToolSpec) (*mcp.Tool, error) {
	in := spec.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(in, &top); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object: %w", err)
	}
	if top.Type != "object" {
		return nil, fmt.Errorf(`its input schema's type is %v, not "object"`, top.Type)
	}
	t := &mcp.Tool{Name: spec.Name, Title: spec.Title, Description: spec.Description, InputSchema: in}
	if len(spec.OutputSchema) > 0 {
		t.OutputSchema = spec.OutputSchema
	}
	if a := spec.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{
			ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
			IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return t, nil
}

func (g *gateway) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.call(ctx, name, req.Params.Arguments, req)
	}
}

// call forwards one call to the tool named name with args, as the merged list has it now; req is the request
// being served (the tool's own, or call_tool's). Its progress goes to the caller's
// progress token, and questions (approvals, a server's elicitation) to the caller through elicitation: for a caller
// that must be asked through input requests, the call then runs in the background (see roundTrips). Cancelling ctx
// (the caller sent notifications/cancelled, or went away) cancels the tool's call.
func (g *gateway) call(ctx context.Context, name string, args json.RawMessage, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return g.rounds.resume(ctx, req)
	}
	t := g.find(ctx, name)
	if t == nil {
		return toolError("the tool %s is no longer available", name), nil
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if !isObject(args) {
		return toolError("the arguments of %s must be a JSON object", name), nil
	}
	c, paused, interactor, relay := g.callerOf(req)
	invoke := func(ctx context.Context) (*mcp.CallToolResult, error) {
		res, _, err := g.invoke(ctx, t, args, req, c, interactor, relay)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err() // the caller cancelled: nobody reads the result
		case err != nil:
			return toolError("%v", err), nil
		}
		return callToolResult(res), nil
	}
	if paused != nil && interactor != nil {
		return paused.start(ctx, req, relay, invoke)
	}
	relay.attach(ctx, req)
	defer relay.detach()
	return invoke(ctx)
}

// invoke makes one call of t with args for the request req, whose caller c is asked the questions (through
// interactor) and whose progress token gets the progress (through relay): the tool's policy, approval and timeout
// apply, as Invoke has them.
func (g *gateway) invoke(ctx context.Context, t *host.ManagedTool, args json.RawMessage, req *mcp.CallToolRequest, c caller, interactor host.Interactor, relay *progressRelay) (*host.Result, string, error) {
	name := t.Spec.Name
	id := fmt.Sprintf("gateway-%d", g.calls.Add(1))
	call := host.NewCall(id, name, t.Source, relay.report, interactor).WithLog(func(m host.LogMessage) {
		// The caller's session filters by the level the caller set; a caller gone is no matter.
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.Level), Logger: m.Logger, Data: m.Data})
	}).WithRelay(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return relayToCaller(ctx, req.Session, c, method, params)
	})
	start := time.Now()
	res, approval, err := g.tools.Invoke(ctx, t, args, call, g.timeout)
	g.logger.Debug("gateway call", "tool", name, "source", t.Source, "approval", approval, "duration", time.Since(start), "err", err)
	return res, approval, err
}

// find returns the enabled tool named name in the current merged list, or nil.
func (g *gateway) find(ctx context.Context, name string) *host.ManagedTool {
	tools, _ := g.tools.Tools(ctx)
	for _, t := range tools {
		if t.Spec.Name == name && !t.Policy.Disabled && name != g.agentTool {
			return t
		}
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// progressRelay sends a tool's progress reports to the request being served, when it sent a progress token. The
// spec wants progress to increase with every notification: a report that does not is sent one above the last value,
// without its total, so that a tool that restarts its count still reaches the caller.
type progressRelay struct {
	mu   sync.Mutex
	to   progressTarget
	last float64
	sent bool
}

var _ progressSink = (*progressRelay)(nil)

func (r *progressRelay) attach(ctx context.Context, req *mcp.CallToolRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.to = targetOf(ctx, req)
}

// detach drops the reports that come after the request was answered: its token is no longer valid then.
func (r *progressRelay) detach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.to = progressTarget{}
}

func (r *progressRelay) report(p host.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock() // notifications go out in the order of their progress values
	if !r.to.active() {
		return
	}
	params := &mcp.ProgressNotificationParams{Progress: p.Progress, Total: p.Total, Message: p.Message}
	if r.sent && params.Progress <= r.last {
		params.Progress = r.last + 1
		if params.Total < params.Progress {
			params.Total = 0
		}
	}
	r.last, r.sent = params.Progress, true
	r.to.send(params)
}

// callToolResult converts a tool's Result into an MCP result. An MCP server's result (res.Original) goes back as it
// came. Any other is made as close to what an MCP server would have sent as a Result can say: the text, then each
// medium as image or audio content, then each reference as a resource link or, when it carries content, an embedded
// text resource; structured content and the error flag as they are.
//
// A Result made from MCP content has a placeholder line in Text for each medium and resource link (see
// host.Placeholder), such as "[image: image/png, 68 bytes]": the model reads those instead of the data. They are
// taken out again, since the caller gets the content itself.
func callToolResult(res *host.Result) *mcp.CallToolResult {
	if res == nil {
		res = &host.Result{}
	}
	if orig, ok := res.Original.(*mcp.CallToolResult); ok && orig != nil && orig.IsError == res.IsError {
		// An MCP server's result goes back as it came: every item, its MIME type, its whole text or blob.
		out := *orig
		out.Meta = nil // the upstream request's _meta is not the caller's
		return &out
	}
	lines := strings.Split(res.Text, "\n")
	take := func(match func(string) bool) (string, bool) {
		for i, l := range lines {
			if match(l) {
				lines = append(lines[:i:i], lines[i+1:]...)
				return l, true
			}
		}
		return "", false
	}

	var media []mcp.Content
	for _, m := range res.Media {
		take(func(l string) bool { return l == m.Placeholder() })
		switch m.Type {
		case "image":
			media = append(media, &mcp.ImageContent{MIMEType: m.MIMEType, Data: m.Data})
		case "audio":
			media = append(media, &mcp.AudioContent{MIMEType: m.MIMEType, Data: m.Data})
		default:
			lines = append(lines, m.Placeholder())
		}
	}
	var refs []mcp.Content
	for _, ref := range res.References {
		if ref.URI == "" {
			if s := strings.TrimSpace(ref.Title + "\n" + ref.Content); s != "" {
				lines = append(lines, s)
			}
			continue
		}
		if l, ok := take(func(l string) bool { _, ok := host.ParseLinkPlaceholder(l, ref.URI); return ok }); ok {
			name, _ := host.ParseLinkPlaceholder(l, ref.URI)
			link := &mcp.ResourceLink{URI: ref.URI, Name: cmp.Or(name, ref.URI), Description: ref.Content}
			if ref.Title != name {
				link.Title = ref.Title
			}
			refs = append(refs, link)
			continue
		}
		if ref.Content == "" || host.IsBlobPlaceholder(ref.Content) {
			refs = append(refs, &mcp.ResourceLink{URI: ref.URI, Name: cmp.Or(ref.Title, ref.URI), Description: ref.Content})
			continue
		}
		refs = append(refs, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: ref.URI, MIMEType: "text/plain", Text: ref.Content}})
	}

	out := &mcp.CallToolResult{Content: []mcp.Content{}, IsError: res.IsError}
	text := strings.Join(lines, "\n")
	if strings.TrimSpace(text) == "" && len(res.Structured) > 0 {
		text = string(res.Structured) // the spec asks for the structured content as text too
	}
	if strings.TrimSpace(text) != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: text})
	}
	out.Content = append(append(out.Content, media...), refs...)
	if len(res.Structured) > 0 {
		out.StructuredContent = res.Structured
	}
	return out
}

// Close stops what the server runs in the background: the watch of the tool list, of the prompts and of the
// resources, and the calls that wait for their callers' answers between requests (they are cancelled). It does not
// end the sessions of connected clients. It is safe to call more than once.
func (s *Server) Close() error {
	s.gateway.close()
	if s.prompts != nil {
		s.prompts.close()
	}
	if s.resources != nil {
		s.resources.close()
	}
	s.rounds.close()
	return nil
}

// callerOf returns how a gateway call of req reaches its caller: c, the paused run itself when the caller's
// protocol version asks through input requests (paused is nil otherwise), the Interactor for approvals and
// elicitation built on c, and a relay for the call's progress.
func (g *gateway) callerOf(req *mcp.CallToolRequest) (c caller, paused *pausedRun, interactor host.Interactor, relay *progressRelay) {
	c = req.Session
	if needsRoundTrips(req.Session) {
		paused = g.rounds.prepare(req)
		c = paused
	}
	return c, paused, interactorFor(req.Session, c), &progressRelay{}
}
