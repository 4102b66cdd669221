package mcpclients

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's prompts and log level, for a gateway that offers them to its own callers: listed at each connection and again on
// notifications/prompts/list_changed, got and completed through the current session. The model never sees them.

// listPrompts returns the server's prompts, or none when it does not declare the capability or no gateway asked.
func (s *Server) listPrompts(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Prompt, error) {
	init := session.InitializeResult()
	if !s.opts.Gateway || init == nil || init.Capabilities == nil || init.Capabilities.Prompts == nil {
		return nil, nil
	}
	var prompts []*mcp.Prompt
	for p, err := range session.Prompts(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list prompts: %w", err)
		}
		prompts = append(prompts, p)
	}
	return prompts, nil
}

// refreshPrompts lists the prompts of session again and makes them current if session still is.
func (s *Server) refreshPrompts(session *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
	defer cancel()
	prompts, err := s.listPrompts(ctx, session)
	if err != nil {
		s.logger.Warn("prompts could not be listed", "err", err)
		return
	}
	s.mu.Lock()
	current := s.session == session
	if current {
		s.prompts = prompts
	}
	s.mu.Unlock()
	if current {
		s.promptsChanged.Notify()
	}
}

// Prefix is what goes before the names of the server's tools (and, in a gateway, of its prompts), with "_"; "" for
// none.
func (s *Server) Prefix() string { return s.cfg.Prefix }

// Prompts returns the server's prompts as it names them, as of the last listing. Nobody modifies the result.
func (s *Server) Prompts() []*mcp.Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompts
}

// PromptsChanged returns a channel closed once Prompts returns a new list.
func (s *Server) PromptsChanged() <-chan struct{} { return s.promptsChanged.Changed() }

// GetPrompt gets one of the server's prompts, by the name the server gives it.
func (s *Server) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	session, err := s.await(ctx)
	if err != nil {
		return nil, err
	}
	return session.GetPrompt(ctx, params)
}

// Complete completes an argument of one of the server's prompts (or resource templates). A server without the
// completions capability has no completions to offer: the answer is then an empty list.
func (s *Server) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	session, err := s.await(ctx)
	if err != nil {
		return nil, err
	}
	if init := session.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	return session.Complete(ctx, params)
}

// logLevels are MCP's log levels, the most verbose first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// SetLogLevel asks the server for its log messages of level and above, unless it was asked for more already (the
// callers of a gateway share the server): the most verbose level asked for stays, and is asked for again at each
// reconnection. A server without the logging capability is not asked.
func (s *Server) SetLogLevel(ctx context.Context, level string) error {
	rank := slices.Index(logLevels, level)
	if rank < 0 {
		return fmt.Errorf("unknown log level %q", level)
	}
	s.mu.Lock()
	if cur := slices.Index(logLevels, s.logLevel); cur >= 0 && cur <= rank {
		s.mu.Unlock()
		return nil
	}
	s.logLevel = level
	session := s.session
	s.mu.Unlock()
	if session == nil {
		return nil // asked for at the next connection
	}
	return s.applyLogLevel(ctx, session, level)
}

// applyLogLevel asks session's server for level, if it logs at all.
func (s *Server) applyLogLevel(ctx context.Context, session *mcp.ClientSession, level string) error {
	if init := session.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return nil
	}
	return session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
}
