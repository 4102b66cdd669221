package mcpclients

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's resources and resource templates, for a gateway that offers them to its own callers: listed at each
// connection and again on notifications/resources/list_changed; read, subscribed to and unsubscribed from through
// the current session. The model reaches them through the read_resource tool instead.

// listResources returns the server's resources and templates, or none when it does not declare the capability or
// no gateway asked.
func (s *Server) listResources(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Resource, []*mcp.ResourceTemplate, error) {
	init := session.InitializeResult()
	if !s.opts.Gateway || init == nil || init.Capabilities == nil || init.Capabilities.Resources == nil {
		return nil, nil, nil
	}
	var resources []*mcp.Resource
	for r, err := range session.Resources(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("list resources: %w", err)
		}
		resources = append(resources, r)
	}
	var templates []*mcp.ResourceTemplate
	for t, err := range session.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("list resource templates: %w", err)
		}
		templates = append(templates, t)
	}
	return resources, templates, nil
}

// refreshResources lists the resources of session again and makes them current if session still is.
func (s *Server) refreshResources(session *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
	defer cancel()
	resources, templates, err := s.listResources(ctx, session)
	if err != nil {
		s.logger.Warn("resources could not be listed", "err", err)
		return
	}
	s.mu.Lock()
	current := s.session == session
	if current {
		s.resources, s.templates = resources, templates
	}
	s.mu.Unlock()
	if current {
		s.resourcesChanged.Notify()
	}
}

// Resources returns the server's resources and resource templates as of the last listing. Nobody modifies them.
func (s *Server) Resources() ([]*mcp.Resource, []*mcp.ResourceTemplate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resources, s.templates
}

// ResourcesChanged returns a channel closed once Resources returns new lists.
func (s *Server) ResourcesChanged() <-chan struct{} { return s.resourcesChanged.Changed() }

// ReadResource reads one of the server's resources.
func (s *Server) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	session, err := s.await(ctx)
	if err != nil {
		return nil, err
	}
	return session.ReadResource(ctx, params)
}

// Subscribe asks the server for notifications/resources/updated about uri; they go to OnResourceUpdated's function.
func (s *Server) Subscribe(ctx context.Context, uri string) error {
	session, err := s.await(ctx)
	if err != nil {
		return err
	}
	return session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

// Unsubscribe ends a subscription of Subscribe. From protocol 2026-07-28 the subscription is a subscriptions/listen
// stream of its own, and a go-sdk v1.8 server that sees any such stream of a session end forgets the session's
// list_changed subscriptions too: the stream is then left open (its updates still reach OnResourceUpdated's function,
// whose caller ignores those nobody subscribed to), until the session ends.
func (s *Server) Unsubscribe(ctx context.Context, uri string) error {
	session, err := s.await(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	protocol := s.protocol
	s.mu.Unlock()
	if protocol >= newProtocol {
		return nil
	}
	return session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
}

// newProtocol is the first protocol version where subscriptions are subscriptions/listen streams (SEP-2575).
const newProtocol = "2026-07-28"

// OnResourceUpdated makes f receive the URI of each notifications/resources/updated the server sends.
func (s *Server) OnResourceUpdated(f func(uri string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onUpdated = f
}

// resourceUpdated passes a notifications/resources/updated on to OnResourceUpdated's function.
func (s *Server) resourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	s.mu.Lock()
	f := s.onUpdated
	s.mu.Unlock()
	if f != nil && req.Params != nil {
		f(req.Params.URI)
	}
}
