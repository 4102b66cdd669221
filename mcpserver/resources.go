package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// This file is the resources of gateway mode: the resources and resource templates of the upstream MCP servers,
// offered under their own URIs, read from the server that has them, with subscriptions passed on. A URI that an
// earlier server (in configuration order) offers already is rewritten as
// "agenthost://<server>/<the URI, path-escaped>"; a template whose URI template another server has is not offered.

// ResourceSource is an upstream MCP server whose resources gateway mode offers. mcpclients.Server is one.
type ResourceSource interface {
	// Name names the server: "mcp:<name>".
	Name() string
	// Resources returns its resources and resource templates. Nobody modifies the results.
	Resources() ([]*mcp.Resource, []*mcp.ResourceTemplate)
	// ResourcesChanged returns a channel closed once Resources returns new lists.
	ResourcesChanged() <-chan struct{}
	ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(ctx context.Context, uri string) error
	// OnResourceUpdated makes f receive the URI of each resource the server says was updated.
	OnResourceUpdated(f func(uri string))
	// Complete completes an argument of a resource template, named by its URI template as the source has it.
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// rewrittenScheme is the scheme of the URIs the gateway makes for resources whose URIs collide.
const rewrittenScheme = "agenthost"

// rewrittenURI is the URI the gateway offers a resource of server at uri under when uri is taken.
func rewrittenURI(server, uri string) string {
	return rewrittenScheme + "://" + strings.TrimPrefix(server, "mcp:") + "/" + url.PathEscape(uri)
}

// resourceRoute is an offered resource or template: the source that has it, and its URI (or URI template) there.
type resourceRoute struct {
	src      ResourceSource
	uri      string // the source's URI; "" for a template
	resource *mcp.Resource
	template *mcp.ResourceTemplate
}

// resourceGateway keeps the resources the server offers in step with its sources', and routes reads and
// subscriptions to them.
type resourceGateway struct {
	mcp     *mcp.Server
	sources []ResourceSource
	logger  *slog.Logger

	mu        sync.Mutex
	exported  map[string]resourceRoute             // by offered URI
	templates map[string]resourceRoute             // by URI template
	byOrigin  map[ResourceSource]map[string]string // a source's URI → the offered one
	subs      map[string]int                       // subscriptions by offered URI, over every caller
	warned    map[string]bool

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startResources offers the sources' resources now, and follows their changes until ctx ends or close is called.
func startResources(ctx context.Context, server *mcp.Server, sources []ResourceSource, logger *slog.Logger) *resourceGateway {
	g := &resourceGateway{mcp: server, sources: sources, logger: logger, exported: map[string]resourceRoute{},
		templates: map[string]resourceRoute{}, byOrigin: map[ResourceSource]map[string]string{}, subs: map[string]int{},
		warned: map[string]bool{}}
	g.sync() // before a client can connect
	ctx, g.stop = context.WithCancel(ctx)
	for _, src := range sources {
		src.OnResourceUpdated(func(uri string) { g.updated(ctx, src, uri) })
		g.wg.Go(func() { host.Follow(ctx, src.ResourcesChanged, g.sync) })
	}
	return g
}

// close stops following the sources and waits until nothing of it runs.
func (g *resourceGateway) close() {
	g.stop()
	g.wg.Wait()
}

// sync makes the offered resources and templates the sources' current ones.
func (g *resourceGateway) sync() {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := map[string]resourceRoute{}
	wantTemplates := map[string]resourceRoute{}
	byOrigin := map[ResourceSource]map[string]string{}
	for _, src := range g.sources {
		resources, templates := src.Resources()
		byOrigin[src] = map[string]string{}
		for _, r := range resources {
			offered := r.URI
			if _, taken := want[offered]; taken {
				offered = rewrittenURI(src.Name(), r.URI)
			}
			want[offered] = resourceRoute{src: src, uri: r.URI, resource: r}
			byOrigin[src][r.URI] = offered
		}
		for _, t := range templates {
			if prev, taken := wantTemplates[t.URITemplate]; taken {
				if key := "template " + t.URITemplate; !g.warned[key] {
					g.warned[key] = true
					g.logger.Warn("resource template not offered in gateway mode: another server has its URI template",
						"template", t.URITemplate, "server", src.Name(), "kept", prev.src.Name())
				}
				continue
			}
			wantTemplates[t.URITemplate] = resourceRoute{src: src, template: t}
		}
	}
	g.byOrigin = byOrigin

	same := func(a, b resourceRoute) bool {
		return a.resource == b.resource && a.template == b.template && a.src == b.src
	}
	reconcile(g.exported, want, same, g.mcp.RemoveResources, func(uri string, r resourceRoute) {
		offered := *r.resource
		offered.URI = uri
		g.mcp.AddResource(&offered, g.read(r))
	})
	reconcile(g.templates, wantTemplates, same, g.mcp.RemoveResourceTemplates, func(_ string, r resourceRoute) {
		g.mcp.AddResourceTemplate(r.template, g.read(r))
	})
}

// read returns the handler that reads an offered resource, or a resource of an offered template, from its source.
// The contents come back under the URI the caller asked for.
func (g *resourceGateway) read(r resourceRoute) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		params := *req.Params
		if r.uri != "" {
			params.URI = r.uri
		}
		res, err := r.src.ReadResource(ctx, &params)
		if err != nil || params.URI == req.Params.URI {
			return res, err
		}
		out := *res
		out.Contents = make([]*mcp.ResourceContents, len(res.Contents))
		for i, c := range res.Contents {
			cc := *c
			if cc.URI == params.URI {
				cc.URI = req.Params.URI
			}
			out.Contents[i] = &cc
		}
		return &out, nil
	}
}

// route returns the source of an offered URI and the URI there.
func (g *resourceGateway) route(uri string) (ResourceSource, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r, ok := g.exported[uri]; ok {
		return r.src, r.uri, nil
	}
	return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource %q", uri)}
}

// complete answers completion/complete for an argument of a resource template by asking the server that has it.
func (g *resourceGateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	g.mu.Lock()
	r, ok := g.templates[req.Params.Ref.URI]
	g.mu.Unlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", req.Params.Ref.URI)}
	}
	return r.src.Complete(ctx, req.Params)
}

// subscribe passes a caller's subscription on to the source, once for all callers of a URI.
func (g *resourceGateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	src, uri, err := g.route(req.Params.URI)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.subs[req.Params.URI]++
	first := g.subs[req.Params.URI] == 1
	g.mu.Unlock()
	if !first {
		return nil
	}
	if err := src.Subscribe(ctx, uri); err != nil {
		g.mu.Lock()
		g.subs[req.Params.URI]--
		g.mu.Unlock()
		return err
	}
	return nil
}

// unsubscribe ends a caller's subscription, and the source's once no caller has one.
func (g *resourceGateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	src, uri, err := g.route(req.Params.URI)
	if err != nil {
		return err
	}
	g.mu.Lock()
	last := g.subs[req.Params.URI] == 1
	if g.subs[req.Params.URI] > 0 {
		g.subs[req.Params.URI]--
	}
	g.mu.Unlock()
	if !last {
		return nil
	}
	return src.Unsubscribe(ctx, uri)
}

// updated tells the callers subscribed to a source's resource that it was updated.
func (g *resourceGateway) updated(ctx context.Context, src ResourceSource, uri string) {
	g.mu.Lock()
	offered, ok := g.byOrigin[src][uri]
	g.mu.Unlock()
	if !ok {
		return
	}
	if err := g.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: offered}); err != nil {
		g.logger.Debug("resources/updated not passed on", "uri", offered, "err", err)
	}
}
