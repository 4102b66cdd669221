// Package wiring is the composition root: it turns a loaded configuration into the running product: the model,
// the tool sources (built-ins, MCP servers, A2A peers, sub-agents), the tool manager and the orchestrator, the
// state stores, the durable run engine and telemetry (Build), and the MCP server, over stdio or HTTP, and the A2A
// server (App.Serve). cmd/agenthost keeps only its flags, the terminal and the exit codes, and the load tools in
// internal/bench build the product they measure through it, so that what they measure is what ships.
//
// Beside Build and Serve it holds the mapping of each configuration table onto the options of the package it
// configures, and the adapters of the state database to the stores the packages define. It imports every product
// package and must not be imported by them: it is the one place, with the load tools, that links the OpenTelemetry
// SDK and its exporters.
package wiring

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/builtin"
	"github.com/agenthost/agenthost/codemode"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/durable"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/schemacheck"
	"github.com/agenthost/agenthost/jwtauth"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/mcpserver"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/telemetry/otlp"
)

// StateOptions returns the options of the store [state] names, the Postgres connection string read with getenv.
// It fails for the memory backend, which has no store to open, and when the connection string is missing.
func StateOptions(cfg *config.Config, getenv func(string) string, logger *slog.Logger) (store.Options, error) {
	opts := store.Options{
		Backend:          cfg.State.Backend,
		MaxConversations: cfg.Agent.MaxConversations,
		IdleTTL:          cfg.Agent.ConversationTTL.Duration,
		Logger:           logger,
	}
	switch cfg.State.Backend {
	case config.StateSQLite:
		opts.Path = cfg.State.Path
		if opts.Path == "" {
			var err error
			if opts.Path, err = store.DefaultPath(cfg.Agent.Name); err != nil {
				return opts, err
			}
		}
	case config.StatePostgres:
		if opts.DSN = getenv(cfg.State.DSNEnv); opts.DSN == "" {
			return opts, fmt.Errorf("state.dsn_env: %s is not set: backend %q needs the connection string in it", cfg.State.DSNEnv, config.StatePostgres)
		}
	default:
		return opts, fmt.Errorf("state.backend: %q keeps nothing to open", cfg.State.Backend)
	}
	return opts, nil
}

// OpenState returns the conversation store [state] names: a new memory store for "memory" (db nil), else the
// opened database, which the caller must close.
func OpenState(ctx context.Context, cfg *config.Config, getenv func(string) string, logger *slog.Logger) (host.ConversationStore, *store.DB, error) {
	if cfg.State.Backend == config.StateMemory {
		return HostOptions(cfg, logger).Conversations, nil, nil
	}
	opts, err := StateOptions(cfg, getenv, logger)
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return db, db, nil
}

// ErrNoState is OpenExisting's error when the SQLite file of the state does not exist yet.
var ErrNoState = errors.New("no state yet")

// OpenExisting opens the state database of opts (see StateOptions) for a command that reads or edits it: it creates
// no SQLite file, and fails with ErrNoState when there is none yet.
func OpenExisting(ctx context.Context, opts store.Options) (*store.DB, error) {
	if opts.Backend == store.SQLite {
		if _, err := os.Stat(opts.Path); errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoState
		}
	}
	return store.Open(ctx, opts)
}

// OpenAIOptions returns the options of an OpenAI-compatible model for m, with the API key read by the caller.
func OpenAIOptions(m config.Model, apiKey string, logger *slog.Logger) *openai.Options {
	retries := m.MaxRetries // the configuration's 0 means none; the adapter's 0 means its default
	if retries == 0 {
		retries = -1
	}
	return &openai.Options{
		BaseURL:        m.BaseURL,
		APIKey:         apiKey,
		Model:          m.Model,
		RequestTimeout: m.RequestTimeout.Duration,
		MaxRetries:     retries,
		IdleTimeout:    m.IdleTimeout.Duration,
		Logger:         logger,
	}
}

// HostOptions returns the orchestrator's options for cfg, with a memory conversation store of the configured
// bounds; OpenState opens the configured one.
func HostOptions(cfg *config.Config, logger *slog.Logger) *host.Options {
	return &host.Options{
		Instructions:   cfg.Agent.Instructions,
		MaxIterations:  cfg.Agent.MaxIterations,
		MaxToolCalls:   cfg.Agent.MaxToolCalls,
		ToolTimeout:    cfg.Agent.ToolTimeout.Duration,
		Temperature:    cfg.Agent.Temperature,
		MaxTokens:      cfg.Model.MaxTokens,
		CitationStyle:  host.CitationStyle(cfg.Agent.CitationStyle),
		Limits:         host.Limits{Requests: cfg.Limits.Requests, TotalTokens: cfg.Limits.TotalTokens, ToolCalls: cfg.Limits.ToolCalls},
		ContextTokens:  cfg.Model.ContextTokens,
		ToolSearch:     host.ToolSearchOptions{Mode: host.ToolSearchMode(cfg.Agent.ToolSearch.Mode), Threshold: cfg.Agent.ToolSearch.Threshold},
		CodeMode:       CodeMode(cfg),
		Conversations:  host.NewMemoryStore(&host.MemoryStoreOptions{MaxConversations: cfg.Agent.MaxConversations, IdleTTL: cfg.Agent.ConversationTTL.Duration}),
		Logger:         logger,
		Name:           cfg.Agent.Name,
		Description:    cfg.Agent.Description,
		CompileSchema:  schemacheck.Compile,
		OutputMode:     OutputMode(cfg.Model),
		OutputRetries:  outputRetries(cfg.Agent.OutputRetries),
		Checks:         cfg.Eval.Checks,
		OnCheckFailure: host.CheckPolicy(cfg.Eval.OnFailure),
	}
}

// CodeMode returns run_code's options for cfg: off unless [code_mode] enabled, else a sandbox with its bounds.
func CodeMode(cfg *config.Config) host.CodeModeOptions {
	if !cfg.CodeMode.Enabled {
		return host.CodeModeOptions{}
	}
	return host.CodeModeOptions{Runner: codeRunner(cfg), Tools: cfg.CodeMode.Tools}
}

// codeRunner returns a sandbox with the bounds of [code_mode], for the loop's run_code and the gateway's.
func codeRunner(cfg *config.Config) *codemode.Runner {
	c := cfg.CodeMode
	return codemode.New(&codemode.Options{Timeout: c.Timeout.Duration, MemoryLimit: c.MemoryLimit,
		MaxToolCalls: c.MaxToolCalls, MaxOutputBytes: c.MaxOutputBytes})
}

// outputRetries maps [agent] output_retries, where 0 means none, onto host.Options.OutputRetries, where it means
// the default.
func outputRetries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// OutputMode is how structured answers are asked of m: response_format json_schema where [model]
// structured_output says so, by default on OpenAI's own API; a final_answer tool elsewhere.
func OutputMode(m config.Model) host.OutputMode {
	native := m.BaseURL == "" || strings.HasPrefix(m.BaseURL, openai.DefaultBaseURL)
	if m.StructuredOutput != nil {
		native = *m.StructuredOutput
	}
	if native {
		return host.OutputNative
	}
	return host.OutputTool
}

// OutputSchema returns the output schema of [agent.output], read from its file when it is in one, and checked:
// nil when there is none.
func OutputSchema(cfg *config.Config) (json.RawMessage, error) {
	o := cfg.Agent.Output
	if o == nil {
		return nil, nil
	}
	schema, key := o.Schema, "agent.output.schema"
	if o.SchemaFile != "" {
		b, err := os.ReadFile(o.SchemaFile)
		if err != nil {
			return nil, fmt.Errorf("agent.output.schema_file: %w", err)
		}
		schema, key = b, "agent.output.schema_file"
	}
	if _, err := schemacheck.Compile(schema); err != nil {
		return nil, fmt.Errorf("%s: not a usable JSON Schema: %w", key, err)
	}
	return schema, nil
}

// Telemetry returns the telemetry settings of cfg, with what it leaves empty read by getenv.
func Telemetry(cfg *config.Config, version string, getenv func(string) string) otlp.Config {
	t := cfg.Telemetry
	return otlp.Config{Exporter: t.Exporter, Protocol: t.Protocol, Endpoint: t.Endpoint, Headers: t.Headers,
		ServiceName: t.ServiceName, ServiceVersion: version, CaptureContent: t.CaptureContent, Getenv: getenv}
}

// SubAgentOptions returns the orchestrator's options of the sub-agent a: the agent's settings (tool search among
// them, over the tools the sub-agent may use), with the sub-agent's instructions, iterations and limits, and a
// conversation store of its own (each call is a new conversation).
func SubAgentOptions(cfg *config.Config, a config.SubAgent, logger *slog.Logger) *host.Options {
	opts := HostOptions(cfg, logger)
	opts.Instructions = a.Instructions
	opts.MaxIterations = a.MaxIterations
	opts.Limits = host.Limits{Requests: a.Limits.Requests, TotalTokens: a.Limits.TotalTokens, ToolCalls: a.Limits.ToolCalls}
	opts.Conversations = host.NewMemoryStore(&host.MemoryStoreOptions{MaxConversations: subAgentConversations, IdleTTL: cfg.Agent.ConversationTTL.Duration})
	return opts
}

// subAgentConversations bounds a sub-agent's conversation store: its runs are never continued, so a few recent
// ones are kept only for inspection.
const subAgentConversations = 16

// BuiltinOptions returns the options of the built-in tools for cfg. The web search key is read from the variable
// the configuration names, or the backend's usual one.
func BuiltinOptions(cfg *config.Config, version string, getenv func(string) string, logger *slog.Logger) *builtin.Options {
	b := cfg.Builtin
	keyEnv := b.WebSearch.APIKeyEnv
	if keyEnv == "" {
		keyEnv = map[string]string{"brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY"}[b.WebSearch.Backend]
	}
	var key string
	if keyEnv != "" {
		key = getenv(keyEnv)
	}
	return &builtin.Options{
		Logger:  logger,
		Version: version,
		Agent:   cfg.Agent.Name,
		FetchURL: builtin.FetchURLOptions{
			Timeout:      b.FetchURL.Timeout.Duration,
			MaxBytes:     b.FetchURL.MaxBytes,
			MaxChars:     b.FetchURL.MaxChars,
			AllowPrivate: b.FetchURL.AllowPrivate,
			AllowHosts:   b.FetchURL.AllowHosts,
			UserAgent:    b.FetchURL.UserAgent,
		},
		WebSearch: builtin.WebSearchOptions{
			Backend:    b.WebSearch.Backend,
			URL:        b.WebSearch.URL,
			APIKey:     key,
			MaxResults: b.WebSearch.MaxResults,
			Timeout:    b.WebSearch.Timeout.Duration,
		},
		Files: builtin.FilesOptions{Roots: b.Files.Roots, MaxFileBytes: b.Files.MaxFileBytes, MaxResults: b.Files.MaxResults},
		DocSearch: builtin.DocSearchOptions{
			Roots:           b.DocSearch.Roots,
			Extensions:      b.DocSearch.Extensions,
			Index:           b.DocSearch.Index,
			RefreshInterval: refreshInterval(b.DocSearch.RefreshInterval.Duration),
			MaxFileBytes:    b.DocSearch.MaxFileBytes,
			MaxResults:      b.DocSearch.MaxResults,
		},
		Calculate: builtin.CalculateOptions{Precision: b.Calculate.Precision},
	}
}

// refreshInterval maps the configuration's "0s" (start-up only) onto the option's negative value.
func refreshInterval(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// Policies converts the configuration's tool tables into host policies.
func Policies(tools map[string]config.ToolPolicy) map[string]host.ToolPolicy {
	out := make(map[string]host.ToolPolicy, len(tools))
	for name, p := range tools {
		out[name] = host.ToolPolicy{
			Disabled:         !p.IsEnabled(),
			Exclusive:        p.Exclusive,
			Forced:           p.Forced,
			TakesControl:     p.TakesControl,
			RequireApproval:  p.RequireApproval,
			Prompt:           p.Prompt,
			FormatPrompt:     p.FormatPrompt,
			EvaluationChecks: p.EvaluationChecks,
			Pinned:           p.Pinned,
		}
	}
	return out
}

// ServerOptions returns the MCP server's options for cfg. version is the version the server reports; sampling is
// how the caller's model is used, when the provider is "sampling".
func ServerOptions(cfg *config.Config, version string, sampling mcpserver.Sampling, logger *slog.Logger) *mcpserver.Options {
	sc := cfg.Serve
	var code host.CodeRunner
	if sc.ExposeTools && sc.GatewayTools == mcpserver.GatewayToolsCode {
		code = codeRunner(cfg)
	}
	return &mcpserver.Options{
		CodeRunner:       code,
		Name:             cfg.Agent.Name,
		Version:          version,
		ToolName:         sc.ToolName,
		Description:      cfg.Agent.Description,
		ProgressInterval: sc.ProgressInterval.Duration,
		Logger:           logger,
		Sampling:         sampling,
		ExposeTools:      sc.ExposeTools,
		GatewayTools:     sc.GatewayTools,
		ToolTimeout:      cfg.Agent.ToolTimeout.Duration,
		InputTimeout:     sc.InputTimeout.Duration,
		MaxWaitingCalls:  sc.MaxWaitingCalls,
	}
}

// Access is how the HTTP listeners of `agenthost serve` authenticate requests: with Token, the static bearer token
// read from [serve] auth_token_env, with Tokens, the callers' own static tokens of [serve] auth_tokens_env, or with
// JWT, the verifier of [serve.oauth]'s tokens; the zero value lets every request in.
type Access struct {
	Token string
	// Tokens maps each caller's token to its subject, the name of the variable that holds it.
	Tokens map[string]string
	JWT    *jwtauth.Verifier
}

// Protected reports whether requests need credentials.
func (a Access) Protected() bool { return a.Token != "" || len(a.Tokens) > 0 || a.JWT != nil }

// callerTokens lets a request in only with one of tokens, and hands its subject on where the MCP and A2A handlers
// read a token's subject (auth.TokenInfoFromContext), so that callers are kept apart as under [serve.oauth].
func callerTokens(tokens map[string]string) func(http.Handler) http.Handler {
	// The SDK's middleware is the only way into auth.TokenInfoFromContext; its verifier takes the subject found
	// below from the request's context rather than comparing every token a second time.
	handOver := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		if sub, ok := r.Context().Value(callerSubjectKey{}).(string); ok {
			return &auth.TokenInfo{UserID: sub}, nil // a static token does not expire
		}
		return nil, auth.ErrInvalidToken
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return func(next http.Handler) http.Handler {
		authed := handOver(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var sub string
			var ok bool
			for token, s := range tokens { // every token compared, in constant time: the time says nothing of a match
				if httpedge.TokenMatches(r, token) {
					sub, ok = s, true
				}
			}
			if !ok {
				httpedge.RefuseToken(w, r, "agenthost")
				return
			}
			authed.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerSubjectKey{}, sub)))
		})
	}
}

// callerSubjectKey is the context key under which callerTokens passes the subject of a request's token from its
// check to the SDK's middleware.
type callerSubjectKey struct{}

// Verifier returns the verifier of the tokens [serve.oauth] names, or nil when there is no such table. Close it when
// done serving.
func Verifier(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*jwtauth.Verifier, error) {
	o := cfg.Serve.OAuth
	if o == nil {
		return nil, nil
	}
	return jwtauth.New(ctx, jwtauth.Config{Issuer: o.Issuer, Audience: o.Audience, JWKSURL: o.JWKSURL,
		RequiredScopes: o.RequiredScopes, ResourceName: cfg.Agent.Name, Logger: logger})
}

// HTTPOptions returns the options of the MCP server's HTTP handler for sc, listening at listenAddr, with access and
// health reporting the MCP servers' states. The caller sets Sessions, which the A2A listener shares.
func HTTPOptions(sc config.Serve, access Access, listenAddr string, health func() any) *mcpserver.HTTPOptions {
	edge := Edge(sc, access, listenAddr)
	o := &mcpserver.HTTPOptions{
		Path:           sc.Path,
		Stateless:      sc.Stateless,
		Token:          edge.Token,
		Auth:           edge.Auth,
		Documents:      edge.Documents,
		ListenAddr:     edge.ListenAddr,
		AllowedHosts:   edge.AllowedHosts,
		AllowedOrigins: edge.AllowedOrigins,
		MaxBodyBytes:   edge.MaxBodyBytes,
		Health:         health,
	}
	o.SessionIdleTimeout = sc.SessionIdleTimeout.Duration
	// Only callers told apart ([serve.oauth] or auth_tokens_env) have a subject; the others are not counted per
	// subject, so the cap can be set whatever the access.
	o.MaxSessionsPerSubject = sc.MaxSessionsPerSubject
	return o
}

// Edge returns the checks of an HTTP listener of `agenthost serve` at listenAddr, with access: the same for the MCP
// and the A2A listener.
func Edge(sc config.Serve, access Access, listenAddr string) httpedge.Options {
	o := httpedge.Options{
		Token:          access.Token,
		ListenAddr:     listenAddr,
		AllowedHosts:   sc.AllowedHosts,
		AllowedOrigins: sc.AllowedOrigins,
		MaxBodyBytes:   sc.MaxBodyBytes,
	}
	switch {
	case access.JWT != nil:
		o.Auth, o.Documents = access.JWT.Middleware, access.JWT.Documents()
	case len(access.Tokens) > 0:
		o.Auth = callerTokens(access.Tokens)
	}
	return o
}

// Timeouts returns how long the connections of `agenthost serve`'s HTTP listeners may take to send a request's
// headers and body, and may idle between requests ([serve]).
func Timeouts(sc config.Serve) *httpedge.ServeOptions {
	return &httpedge.ServeOptions{
		ReadHeaderTimeout: sc.ReadHeaderTimeout.Duration,
		ReadBodyTimeout:   sc.ReadBodyTimeout.Duration,
		IdleTimeout:       sc.IdleTimeout.Duration,
	}
}

// oauthScheme describes v's tokens for the A2A card: the flows its issuer's metadata offers.
func oauthScheme(v *jwtauth.Verifier) *a2a.OAuthScheme {
	s := &a2a.OAuthScheme{Scopes: v.RequiredScopes()}
	meta, metaURL := v.Metadata()
	if meta == nil {
		return s
	}
	s.MetadataURL, s.TokenURL = metaURL, meta.TokenEndpoint
	grants := meta.GrantTypesSupported
	if meta.AuthorizationEndpoint != "" && (len(grants) == 0 || slices.Contains(grants, "authorization_code")) {
		s.AuthorizationURL = meta.AuthorizationEndpoint
	}
	s.ClientCredentials = slices.Contains(grants, "client_credentials")
	return s
}

// Peers converts the configured A2A peers, in file order. With honourRequired false, no peer is required.
func Peers(cfg *config.Config, honourRequired bool) []a2a.PeerConfig {
	var out []a2a.PeerConfig
	for _, name := range cfg.A2A.Order {
		p := cfg.A2A.Peers[name]
		out = append(out, a2a.PeerConfig{
			Name:            name,
			URL:             p.URL,
			Description:     p.Description,
			Headers:         p.Headers,
			Timeout:         p.Timeout.Duration,
			PollInterval:    p.PollInterval.Duration,
			Required:        p.Required && honourRequired,
			ProtocolVersion: p.ProtocolVersion,
		})
	}
	return out
}

// A2AServerOptions returns the A2A server's options for cfg: the card advertises url, and declares the credentials
// access asks for.
func A2AServerOptions(cfg *config.Config, version, url string, access Access, logger *slog.Logger) *a2a.ServerOptions {
	var skills []a2a.Skill
	for _, s := range cfg.Serve.Skills {
		skills = append(skills, a2a.Skill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples})
	}
	var oauth *a2a.OAuthScheme
	if access.JWT != nil {
		oauth = oauthScheme(access.JWT)
	}
	var caller func(*http.Request) string
	if access.JWT != nil || len(access.Tokens) > 0 {
		caller = func(r *http.Request) string {
			if info := auth.TokenInfoFromContext(r.Context()); info != nil {
				return info.UserID
			}
			return ""
		}
	}
	o := &a2a.ServerOptions{
		Caller:        caller,
		OAuth:         oauth,
		Name:          cfg.Agent.Name,
		Description:   cfg.Agent.Description,
		Version:       version,
		URL:           url,
		Skills:        skills,
		ListTools:     cfg.Serve.CardListsTools,
		Authenticated: access.Token != "" || len(access.Tokens) > 0,
		InputTimeout:  cfg.Serve.InputTimeout.Duration,
		Logger:        logger,
		// Only with Caller, when callers are told apart, do tasks have a subject to count.
		MaxTasksPerSubject: cfg.Serve.MaxTasksPerSubject,
	}
	return o
}

// TaskStore returns db as the A2A server's task store.
func TaskStore(db *store.DB) a2a.TaskStore { return taskStore{db} }

// taskStore adapts store.DB to a2a.TaskStore, so that neither package knows the other.
type taskStore struct{ db *store.DB }

func (s taskStore) SaveTask(ctx context.Context, t *a2a.StoredTask) error {
	return s.db.PutTask(ctx, &store.Task{ID: t.ID, ContextID: t.ContextID, State: t.State, Terminal: t.Terminal,
		Updated: t.Updated, Version: t.Version, Body: t.Task, Owner: t.Owner, Durable: t.Durable, Subject: t.Subject})
}

func (s taskStore) Orphans(ctx context.Context, owner string) ([]*a2a.StoredTask, error) {
	tasks, err := s.db.Orphans(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make([]*a2a.StoredTask, len(tasks))
	for i, t := range tasks {
		out[i] = storedTask(t)
	}
	return out, nil
}

func (s taskStore) LoadTask(ctx context.Context, id string) (*a2a.StoredTask, error) {
	t, err := s.db.Task(ctx, id)
	if errors.Is(err, store.ErrTaskNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return storedTask(t), nil
}

func (s taskStore) ListTasks(ctx context.Context, q a2a.TaskQuery) ([]*a2a.StoredTask, int, error) {
	sq := store.TaskQuery{Subject: q.Subject, ContextID: q.ContextID, State: q.State, UpdatedAfter: q.UpdatedAfter, Limit: q.Limit}
	if q.AfterID != "" {
		sq.Before = &store.TaskCursor{Updated: q.AfterUpdated, ID: q.AfterID}
	}
	tasks, total, err := s.db.Tasks(ctx, sq)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*a2a.StoredTask, len(tasks))
	for i, t := range tasks {
		out[i] = storedTask(t)
	}
	return out, total, nil
}

func (s taskStore) Signal(ctx context.Context, taskID, kind string, body json.RawMessage) error {
	return s.db.Signal(ctx, taskID, kind, body)
}

func (s taskStore) TakeSignals(ctx context.Context, taskIDs []string) ([]host.RunSignal, error) {
	return s.db.TakeSignals(ctx, taskIDs)
}

func storedTask(t *store.Task) *a2a.StoredTask {
	return &a2a.StoredTask{ID: t.ID, ContextID: t.ContextID, State: t.State, Terminal: t.Terminal, Updated: t.Updated,
		Version: t.Version, Task: t.Body, Owner: t.Owner, Durable: t.Durable, Subject: t.Subject}
}

// Durable says whether [state] makes the runs of a front end durable: "mcp" (the agent tool's calls) or "a2a"
// (tasks).
func Durable(cfg *config.Config, frontEnd string) bool {
	switch {
	case cfg.State.Backend == config.StateMemory:
		return false
	case cfg.State.DurableRuns == config.DurableAll:
		return true
	}
	return cfg.State.DurableRuns == config.DurableTasks && frontEnd == "a2a"
}

// EngineOptions returns the options of the durable engine on the state database db, which sopts opened (see
// StateOptions); with Postgres, the engine beats in it and takes over the runs of replicas that stopped:
// the application is the agent, its version agenthost's and the configuration file's (so that a rebuild of the
// same agenthost resumes the runs of the one before, and a changed configuration, which could take a run down
// another path, does not), and the executor [state] executor_id, the host name with Postgres, else "local".
func EngineOptions(cfg *config.Config, db *store.DB, sopts store.Options, version string, logger *slog.Logger) (durable.Options, error) {
	h := sha256.New()
	if cfg.Path != "" {
		b, err := os.ReadFile(cfg.Path)
		if err != nil {
			return durable.Options{}, err
		}
		h.Write(b)
	}
	executor, err := ExecutorID(cfg)
	if err != nil {
		return durable.Options{}, err
	}
	opts := durable.Options{
		AppName:    cfg.Agent.Name,
		AppVersion: version + "-" + hex.EncodeToString(h.Sum(nil))[:12],
		ExecutorID: executor,
		Logger:     logger,
	}
	switch sopts.Backend {
	case store.SQLite:
		opts.SQLitePath = sopts.Path
	case store.Postgres:
		opts.PostgresURL, opts.Heartbeats = sopts.DSN, db.SQL()
	}
	return opts, nil
}

// ExecutorID names this process among those sharing the state: [state] executor_id, else the host name with
// Postgres, else "local".
func ExecutorID(cfg *config.Config) (string, error) {
	switch {
	case cfg.State.ExecutorID != "":
		return cfg.State.ExecutorID, nil
	case cfg.State.Backend != config.StatePostgres:
		return "local", nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("state.executor_id: no host name to default to: %w", err)
	}
	return host, nil
}

// CallStore returns db as the MCP server's store of calls paused between rounds.
func CallStore(db *store.DB) mcpserver.CallStore { return callStore{db} }

// callStore adapts store.DB to mcpserver.CallStore, so that neither package knows the other.
type callStore struct{ db *store.DB }

func (s callStore) SaveCall(ctx context.Context, c *mcpserver.SharedCall) error {
	return s.db.PutCall(ctx, &store.Call{ID: c.ID, Owner: c.Owner, Tool: c.Tool, Args: c.Args, Round: c.Round,
		State: c.State, Outcome: c.Outcome, Updated: c.Updated, Expires: c.Expires})
}

func (s callStore) LoadCall(ctx context.Context, id string) (*mcpserver.SharedCall, error) {
	c, err := s.db.Call(ctx, id)
	if c == nil || err != nil {
		return nil, err
	}
	return &mcpserver.SharedCall{ID: c.ID, Owner: c.Owner, Tool: c.Tool, Args: c.Args, Round: c.Round, State: c.State,
		Outcome: c.Outcome, Updated: c.Updated, Expires: c.Expires}, nil
}

func (s callStore) DeleteCall(ctx context.Context, id string) error { return s.db.DeleteCall(ctx, id) }

func (s callStore) Signal(ctx context.Context, id, kind string, body json.RawMessage) error {
	return s.db.Signal(ctx, id, kind, body)
}

func (s callStore) TakeSignals(ctx context.Context, ids []string) ([]host.RunSignal, error) {
	return s.db.TakeSignals(ctx, ids)
}
