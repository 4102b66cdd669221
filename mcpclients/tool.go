package mcpclients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
)

// tool is one tool of an MCP server.
type tool struct {
	server *Server
	name   string // the server's own name for it
	spec   host.ToolSpec
	// retry makes a call that was in flight when the server went away be made again once it is back: the tool is
	// read-only or idempotent, by its annotations or by the configuration.
	retry bool
}

var _ host.Tool = (*tool)(nil)

func (t *tool) Spec() host.ToolSpec { return t.spec }

// Call calls the tool with the arguments as the model wrote them. Its progress reaches the run; cancelling ctx makes
// the SDK send notifications/cancelled to the server.
func (t *tool) Call(ctx context.Context, args json.RawMessage, call *host.Call) (*host.Result, error) {
	params := &mcp.CallToolParams{Name: t.name, Arguments: args}
	return t.server.do(ctx, call, params, t.retry, func(ctx context.Context, session *mcp.ClientSession) (*host.Result, error) {
		res, err := session.CallTool(ctx, params)
		if err != nil {
			return nil, err
		}
		return toolResult(res), nil
	})
}

// progressParams is a request's params that can carry a progress token (and other _meta).
type progressParams interface {
	SetProgressToken(any)
	GetMeta() map[string]any
	SetMeta(map[string]any)
}

// do runs one request to the server for a call: it waits for the server while it reconnects, registers the call for
// its progress and the server's questions, and turns failures into results the model can read. A failure of the
// connection itself (not an error the server answered with) marks the server as lost, so it reconnects; the request
// is then made once more on the new connection when retry says that is safe.
func (s *Server) do(ctx context.Context, call *host.Call, params progressParams, retry bool, f func(context.Context, *mcp.ClientSession) (*host.Result, error)) (*host.Result, error) {
	for attempt := 0; ; attempt++ {
		session, err := s.await(ctx)
		if err != nil {
			if errors.Is(err, errWaitEnded) {
				return nil, ctx.Err()
			}
			return &host.Result{Text: err.Error(), IsError: true}, nil
		}
		res, err := s.once(ctx, call, params, session, f)
		err = redact.Error(err) // the model reads it
		switch {
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case s.ctx.Err() != nil:
			return &host.Result{Text: fmt.Sprintf("MCP server %q was shut down during the call", s.cfg.Name), IsError: true}, nil
		case isServerError(err):
			return &host.Result{Text: fmt.Sprintf("MCP server %q returned an error: %v", s.cfg.Name, err), IsError: true}, nil
		}
		s.lost(session, err)
		if !retry || attempt > 0 {
			return &host.Result{Text: fmt.Sprintf("MCP server %q went away during the call (%v): the call may or may not have taken effect. "+
				"The server is reconnecting; check before calling again if the call must not happen twice.", s.cfg.Name, err), IsError: true}, nil
		}
		s.logger.Info("MCP server went away during a call; calling again once it is back")
	}
}

// once makes the request once on session, registered for its progress and the server's questions.
func (s *Server) once(ctx context.Context, call *host.Call, params progressParams, session *mcp.ClientSession, f func(context.Context, *mcp.ClientSession) (*host.Result, error)) (*host.Result, error) {
	token, callCtx, done := s.track(ctx, call)
	defer done()
	params.SetProgressToken(token)
	if call.TakesLogs() {
		// From protocol 2026-07-28 a server logs to a request at the level the request names, and sends nothing
		// without one; older servers ignore the key and use the level of logging/setLevel.
		s.mu.Lock()
		level := s.logLevel
		s.mu.Unlock()
		if level != "" {
			meta := params.GetMeta()
			if meta == nil {
				meta = map[string]any{}
			}
			meta[mcp.MetaKeyLogLevel] = level
			params.SetMeta(meta)
		}
	}
	return f(context.WithValue(callCtx, callKey{}, call), session)
}

// isServerError reports whether err is an error the server answered with, as opposed to a failed connection.
func isServerError(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code != codeRejectedByTransport
}

// codeRejectedByTransport is the code of the SDK's error for a request its transport could not deliver (an HTTP
// error status, a session the server no longer knows): a connection failure, though it is a JSON-RPC error.
const codeRejectedByTransport = -32005

// resourceTool returns the tool that reads one of the server's resources. Its description names up to
// maxListedResources of them, so the model knows what there is.
func (s *Server) resourceTool(ctx context.Context, session *mcp.ClientSession) (*resourceReader, error) {
	names := map[string]string{}
	var listed []string
	total := 0
	for r, err := range session.Resources(ctx, nil) {
		if err != nil {
			return nil, err
		}
		total++
		names[r.URI] = r.Name
		if len(listed) < maxListedResources {
			line := "- " + r.URI
			if r.Name != "" && r.Name != r.URI {
				line += " — " + r.Name
			}
			if r.Description != "" {
				line += ": " + firstLine(r.Description)
			}
			listed = append(listed, line)
		}
	}
	desc := fmt.Sprintf("Reads a resource of the MCP server %q by its URI and returns its content.", s.cfg.Name)
	if len(listed) > 0 {
		desc += " Resources:\n" + strings.Join(listed, "\n")
		if total > len(listed) {
			desc += fmt.Sprintf("\n(and %d more)", total-len(listed))
		}
	}
	return &resourceReader{server: s, names: names, spec: host.ToolSpec{
		Name:        host.ToolName(s.cfg.Prefix, "read_resource"),
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","description":"the URI of the resource to read"}},"required":["uri"]}`),
		Annotations: &host.ToolAnnotations{ReadOnlyHint: ptr(true)},
	}}, nil
}

// resourceReader is the read_resource tool of a server.
type resourceReader struct {
	server *Server
	names  map[string]string // resource names by URI, for references' titles
	spec   host.ToolSpec
}

var _ host.Tool = (*resourceReader)(nil)

func (r *resourceReader) Spec() host.ToolSpec { return r.spec }

func (r *resourceReader) Call(ctx context.Context, args json.RawMessage, call *host.Call) (*host.Result, error) {
	var in struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.URI == "" {
		return &host.Result{Text: `read_resource needs {"uri": "<the resource's URI>"}`, IsError: true}, nil
	}
	params := &mcp.ReadResourceParams{URI: in.URI}
	return r.server.do(ctx, call, params, true, func(ctx context.Context, session *mcp.ClientSession) (*host.Result, error) { // reading is safe to repeat
		res, err := session.ReadResource(ctx, params)
		if err != nil {
			return nil, err
		}
		return readResourceResult(in.URI, r.names[in.URI], res), nil
	})
}

func ptr[T any](v T) *T { return &v }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
