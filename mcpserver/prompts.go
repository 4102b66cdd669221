package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// This file is the prompts of gateway mode: the prompts of the upstream MCP servers, offered under the names their
// tools get ("<prefix>_<name>", or the bare name without a prefix), and got and completed by the server that has
// them.

// PromptSource is an upstream MCP server whose prompts gateway mode offers. mcpclients.Server is one.
type PromptSource interface {
	// Prefix goes before the names of its prompts, with "_"; "" keeps them bare.
	Prefix() string
	// Prompts returns its prompts as it names them. Nobody modifies the result.
	Prompts() []*mcp.Prompt
	// PromptsChanged returns a channel closed once Prompts returns a new list.
	PromptsChanged() <-chan struct{}
	// GetPrompt gets a prompt by the name the source gives it.
	GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error)
	// Complete completes an argument of a prompt named as the source names it.
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// promptRoute is an offered prompt: the source that has it and the prompt as the source lists it.
type promptRoute struct {
	src    PromptSource
	prompt *mcp.Prompt
}

// promptGateway keeps the prompts the server offers in step with its sources'.
type promptGateway struct {
	mcp     *mcp.Server
	sources []PromptSource
	logger  *slog.Logger

	mu       sync.Mutex
	exported map[string]promptRoute // by offered name
	warned   map[string]bool

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startPrompts offers the sources' prompts now, and follows their changes until ctx ends or close is called.
func startPrompts(ctx context.Context, server *mcp.Server, sources []PromptSource, logger *slog.Logger) *promptGateway {
	g := &promptGateway{mcp: server, sources: sources, logger: logger, exported: map[string]promptRoute{}, warned: map[string]bool{}}
	g.sync() // before a client can connect
	ctx, g.stop = context.WithCancel(ctx)
	for _, src := range sources {
		g.wg.Go(func() { host.Follow(ctx, src.PromptsChanged, g.sync) })
	}
	return g
}

// close stops following the sources and waits until nothing of it runs.
func (g *promptGateway) close() {
	g.stop()
	g.wg.Wait()
}

// sync makes the offered prompts the sources' current ones. The SDK tells the clients when the list changes.
func (g *promptGateway) sync() {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := map[string]promptRoute{}
	for _, src := range g.sources {
		for _, p := range src.Prompts() {
			name := p.Name
			if prefix := src.Prefix(); prefix != "" {
				name = prefix + "_" + name
			}
			if prev, ok := want[name]; ok {
				if !g.warned[name] {
					g.warned[name] = true
					g.logger.Warn("prompt not offered in gateway mode: another server's prompt has its name; give the servers prefixes",
						"prompt", name, "kept", prev.prompt.Name)
				}
				continue
			}
			want[name] = promptRoute{src: src, prompt: p}
		}
	}
	reconcile(g.exported, want, func(a, b promptRoute) bool { return a.prompt == b.prompt && a.src == b.src }, g.mcp.RemovePrompts,
		func(name string, r promptRoute) {
			offered := *r.prompt
			offered.Name = name
			g.mcp.AddPrompt(&offered, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				params := *req.Params
				params.Name = r.prompt.Name
				return r.src.GetPrompt(ctx, &params)
			})
		})
}

// reconcile makes have hold what want holds: the entries that want lacks or holds otherwise (same says whether two
// are the same) are removed, with remove, and those that have lacks are added, with add.
func reconcile[R any](have, want map[string]R, same func(a, b R) bool, remove func(...string), add func(string, R)) {
	var gone []string
	for key, r := range have {
		if w, ok := want[key]; !ok || !same(w, r) {
			gone = append(gone, key)
			delete(have, key)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	for key, r := range want {
		if _, ok := have[key]; !ok {
			add(key, r)
			have[key] = r
		}
	}
}

// complete answers completion/complete for a prompt's argument by asking the server that has the prompt.
func (g *promptGateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	g.mu.Lock()
	r, ok := g.exported[ref.Name]
	g.mu.Unlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
	}
	params := *req.Params
	upstream := *ref
	upstream.Name = r.prompt.Name
	params.Ref = &upstream
	return r.src.Complete(ctx, &params)
}
