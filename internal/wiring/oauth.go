package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/statedir"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/store"
)

// UsesOAuth reports whether agenthost may have to authorize itself to the server s with OAuth: an http or sse server
// whose auth is "oauth" or "client_credentials", or "" without a static Authorization header.
func UsesOAuth(s config.MCPServer) bool {
	if t := s.EffectiveTransport(); t != config.TransportHTTP && t != config.TransportSSE {
		return false
	}
	switch s.Auth {
	case config.AuthOAuth, config.AuthClientCredentials:
		return true
	case config.AuthNone:
		return false
	}
	for name := range s.Headers {
		if strings.EqualFold(name, "Authorization") {
			return false
		}
	}
	return true
}

// OAuthConfig returns how agenthost authorizes itself to the configured server name, the client secret read with
// getenv, the grants kept in grants.
func OAuthConfig(cfg *config.Config, name string, grants mcpauth.Store, getenv func(string) string, logger *slog.Logger) (*mcpauth.Config, error) {
	s := cfg.MCP.Servers[name]
	oc := &mcpauth.Config{
		Server: name, URL: s.URL, Mode: s.Auth,
		ClientID: s.ClientID, ClientMetadataURL: s.ClientMetadataURL, Scopes: s.Scopes,
		Store: grants, Logger: logger,
	}
	if s.ClientSecretEnv != "" {
		if oc.ClientSecret = getenv(s.ClientSecretEnv); oc.ClientSecret == "" {
			return nil, fmt.Errorf("mcp.servers.%s.client_secret_env: %s is not set", name, s.ClientSecretEnv)
		}
	}
	return oc, nil
}

// GrantStore returns where the OAuth grants to MCP servers are kept: in db, the state database, when there is one;
// else (state in memory) in "<agent>-grants.json", mode 0600, in agenthost's state directory. logger receives the
// warning that the file was readable by others.
func GrantStore(cfg *config.Config, db *store.DB, logger *slog.Logger) (mcpauth.Store, error) {
	if db != nil {
		return grantStore{db}, nil
	}
	dir, err := statedir.Dir()
	if err != nil {
		return nil, err
	}
	return &mcpauth.FileStore{Path: filepath.Join(dir, cfg.Agent.Name+"-grants.json"), Logger: logger}, nil
}

// OpenGrantStore returns the grant store of cfg for a command that has no state database open, and what to close
// after it.
func OpenGrantStore(ctx context.Context, cfg *config.Config, getenv func(string) string, logger *slog.Logger) (mcpauth.Store, io.Closer, error) {
	if cfg.State.Backend == config.StateMemory {
		s, err := GrantStore(cfg, nil, logger)
		return s, io.NopCloser(nil), err
	}
	opts, err := StateOptions(cfg, getenv, logger)
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return grantStore{db}, db, nil
}

// grantStore adapts store.DB to mcpauth.Store, so that neither package knows the other.
type grantStore struct{ db *store.DB }

func (s grantStore) LoadGrant(ctx context.Context, server string) (*mcpauth.Grant, error) {
	b, err := s.db.Grant(ctx, server)
	if b == nil || err != nil {
		return nil, err
	}
	var g mcpauth.Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("the stored OAuth grant of %s is unreadable: %w", server, err)
	}
	return &g, nil
}

func (s grantStore) SaveGrant(ctx context.Context, g *mcpauth.Grant) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return s.db.PutGrant(ctx, g.Server, b)
}

func (s grantStore) DeleteGrant(ctx context.Context, server string) error {
	return s.db.DeleteGrant(ctx, server)
}

func (s grantStore) Grants(ctx context.Context) ([]*mcpauth.Grant, error) {
	all, err := s.db.Grants(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*mcpauth.Grant, 0, len(all))
	for _, b := range all {
		var g mcpauth.Grant
		if err := json.Unmarshal(b, &g); err != nil {
			return nil, fmt.Errorf("a stored OAuth grant is unreadable: %w", err)
		}
		out = append(out, &g)
	}
	return out, nil
}
