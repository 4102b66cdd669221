package console

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/runlog"
)

// web holds the page: index.html and the files it loads.
//
//go:embed web/*.html web/*.js web/*.css web/*.svg
var web embed.FS

// Options configures a Console. Orchestrator and Runs are required; the other fields may be left zero, and the
// console then shows that the feature is not there.
type Options struct {
	Orchestrator *host.Orchestrator
	// Runs records every run of the process; the console lists and follows them.
	Runs *runlog.Recorder
	// Evals runs the configured eval datasets; nil when none are configured.
	Evals *evals.Suite
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger

	// Agent describes the agent to the page; the zero value shows no name.
	Agent Agent
	// OutputSchema is the JSON Schema the agent's answers match by default ([agent.output]), shown to the page; nil
	// when there is none.
	OutputSchema json.RawMessage
	// CompileSchema checks the output schema a chat request gives before its run starts; nil leaves the check to
	// the run, which then fails.
	CompileSchema host.CompileFunc
	// Content says whether the content of the runs of the other front ends (MCP, A2A, ...) is recorded, as
	// features.content; the console's own always is. False means only theirs sizes and timings are.
	Content bool
	// Servers returns the state of the MCP servers and A2A peers; nil lists none.
	Servers func() []ServerState
	// Conversations are the conversations of the state database; nil when the state is in memory, which cannot
	// list them (features.state is then false).
	Conversations Conversations
	// Tasks are the served A2A tasks of the state database; nil without one (features.tasks is then false).
	Tasks Tasks

	// Token, when not empty, is a token that logs in: [serve] auth_token_env's.
	Token string
	// Tokens are the callers' own tokens ([serve] auth_tokens_env), each mapped to its subject; nil has none.
	Tokens map[string]string
	// Verify, when set, verifies a JWT of [serve.oauth] and returns its subject and expiry, which ends the session
	// it logs in (a zero expiry does not).
	Verify func(ctx context.Context, bearer string) (subject string, expires time.Time, err error)
	// ListenAddr, AllowedHosts and AllowedOrigins are the Host and Origin values accepted besides loopback ones, as
	// [serve] has them (see httpedge.Options); zero accepts loopback only.
	ListenAddr     string
	AllowedHosts   []string
	AllowedOrigins []string
	// MaxBodyBytes caps a request's body; 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxRuns caps the console's runs going at once; beyond it a chat is refused with 429. 0 means 8.
	MaxRuns int
	// InputTimeout is how long an approval or elicitation of a console's run waits for the page's answer; then the
	// run is told that nobody answered (the approval denied, the elicitation cancelled). 0 means 10 minutes, as
	// [serve] input_timeout.
	InputTimeout time.Duration
	// Now is the clock of the sessions; nil means time.Now.
	Now func() time.Time
}

// Agent describes the agent served.
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
	Model       string `json:"model"`
	Provider    string `json:"provider"`
}

// ServerState is an MCP server or an A2A peer as GET /api/servers lists it.
type ServerState struct {
	Name string `json:"name"`
	// Kind is "mcp" or "a2a".
	Kind      string `json:"kind"`
	Transport string `json:"transport,omitempty"`
	URL       string `json:"url,omitempty"`
	// State is "connected", "connecting", "reconnecting", "failed", "needs_login" or "disabled".
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"`
	// Login is the command that logs in to a server whose State is "needs_login".
	Login string `json:"login,omitempty"`
}

// ErrNotFound is what Conversations and Tasks return for an id they do not have.
var ErrNotFound = errors.New("not found")

// Conversations are the conversations the console lists, shows and deletes: every one kept; the console shows a
// caller told apart only those it owns (host.OwnsConversation). Implementations must be safe for concurrent use.
type Conversations interface {
	// List returns the conversations kept, most recently used first.
	List(ctx context.Context) ([]ConversationSummary, error)
	// Get returns a conversation, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (*host.Conversation, error)
	// Delete deletes a conversation, or returns an error wrapping ErrNotFound.
	Delete(ctx context.Context, id string) error
}

// ConversationSummary is a conversation as GET /api/conversations lists it.
type ConversationSummary struct {
	ID string `json:"id"`
	// Title is the start of its first message.
	Title    string    `json:"title"`
	Messages int       `json:"messages"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Tasks are the served A2A tasks the console lists and shows, each of a subject: the caller it was served to (the
// subject of its token), "" when the A2A server does not tell callers apart. Implementations must be safe for
// concurrent use.
type Tasks interface {
	// List returns the tasks of subject kept, most recently updated first.
	List(ctx context.Context, subject string) ([]TaskSummary, error)
	// Get returns a task of subject as stored (its JSON), or an error wrapping ErrNotFound, also when the task is
	// another subject's.
	Get(ctx context.Context, subject, id string) (json.RawMessage, error)
}

// TaskSummary is an A2A task as GET /api/tasks lists it.
type TaskSummary struct {
	ID        string `json:"id"`
	ContextID string `json:"context_id"`
	State     string `json:"state"`
	// Created is when the task was created; zero (and left out) when the store does not say.
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated"`
}

// Defaults of Options.
const (
	defaultMaxRuns      = 8
	defaultInputTimeout = 10 * time.Minute
	// A page opens two or three event streams; a session needs no more than a few tabs' worth.
	defaultMaxSessionStreams = 16
	defaultMaxStreams        = 256
)

// Console serves the web console.
type Console struct {
	opts   Options
	logger *slog.Logger
	// evals is opts.Evals; nil when there is none.
	evals evalSuite
	// ctx ends at Close; every run and stream of the console ends with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// csrf is the CSRF token of an unprotected console.
	csrf     string
	sessions *sessions
	assets   *assets
	// heartbeat is how often an idle event stream sends a comment, so that proxies and the browser keep it open.
	heartbeat time.Duration
	now       func() time.Time
	// maxStreams and maxSessionStreams cap the event streams open, in all and of one session.
	maxStreams, maxSessionStreams int
	logins                        *loginLimiter

	mu       sync.Mutex
	closed   bool
	active   map[string]*consoleRun // the console's runs going, by run id
	streams  map[string]int         // the event streams open, by session (streamKey)
	nStreams int
	evalRuns map[string]*evalRun
	evalIDs  []string // evalRuns' ids, oldest first
	// evalMu guards the eval runs' reports, which their runs fill as cases end.
	evalMu sync.Mutex

	// searchMu guards searchList, the tool list searchOn last decided over, and searchWas, its decision.
	searchMu   sync.Mutex
	searchList []*host.ManagedTool
	searchWas  host.SearchDecision
}

// New returns a console. Close it when done.
func New(opts *Options) *Console {
	c := &Console{heartbeat: 15 * time.Second, active: map[string]*consoleRun{}, evalRuns: map[string]*evalRun{},
		streams: map[string]int{}, maxStreams: defaultMaxStreams, maxSessionStreams: defaultMaxSessionStreams}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.Evals != nil {
		c.evals = c.opts.Evals
	}
	if c.logger = c.opts.Logger; c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.opts.MaxRuns <= 0 {
		c.opts.MaxRuns = defaultMaxRuns
	}
	if c.opts.InputTimeout <= 0 {
		c.opts.InputTimeout = defaultInputTimeout
	}
	now := c.opts.Now
	if now == nil {
		now = time.Now
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.csrf = rand.Text()
	c.now = now
	c.sessions = newSessions(now)
	c.logins = newLoginLimiter(now)
	c.assets = newAssets(web)
	return c
}

// protected says whether the console needs a login.
func (c *Console) protected() bool {
	return c.opts.Token != "" || len(c.opts.Tokens) > 0 || c.opts.Verify != nil
}

// authKind is how one logs in: the session's "auth" and the 401's "login". "oauth" when a JWT of [serve.oauth] is
// the only way in; "token" when a static token is one ([serve] auth_token_env or auth_tokens_env: the page asks
// for a token, which may be a JWT as well); "none" when the console is not protected.
func (c *Console) authKind() string {
	switch {
	case c.opts.Verify != nil && c.opts.Token == "" && len(c.opts.Tokens) == 0:
		return "oauth"
	case c.protected():
		return "token"
	}
	return "none"
}

// Handler returns the console's HTTP handler: the API and the page, behind the Host and Origin checks, with the
// security headers on every response.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/session", c.session)
	mux.HandleFunc("POST /api/login", c.login)
	mux.HandleFunc("POST /api/logout", c.logout)
	mux.HandleFunc("POST /api/chat", c.chat)
	mux.HandleFunc("GET /api/runs", c.listRuns)
	mux.HandleFunc("GET /api/runs/live", c.liveRuns)
	mux.HandleFunc("GET /api/runs/{id}", c.getRun)
	mux.HandleFunc("GET /api/runs/{id}/events", c.runEvents)
	mux.HandleFunc("POST /api/runs/{id}/cancel", c.cancelRun)
	mux.HandleFunc("POST /api/runs/{id}/answer", c.answer)
	mux.HandleFunc("GET /api/tools", c.tools)
	mux.HandleFunc("GET /api/servers", c.servers)
	mux.HandleFunc("GET /api/conversations", c.listConversations)
	mux.HandleFunc("GET /api/conversations/{id}", c.getConversation)
	mux.HandleFunc("DELETE /api/conversations/{id}", c.deleteConversation)
	mux.HandleFunc("GET /api/tasks", c.listTasks)
	mux.HandleFunc("GET /api/tasks/{id}", c.getTask)
	mux.HandleFunc("GET /api/evals", c.listEvals)
	mux.HandleFunc("POST /api/evals/{name}/run", c.runEval)
	mux.HandleFunc("GET /api/evals/runs/{id}", c.getEvalRun)
	mux.HandleFunc("POST /api/evals/runs/{id}/cancel", c.cancelEvalRun)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API path")
	})
	mux.Handle("/", c.assets)
	guarded := httpedge.Guard(c.access(mux), httpedge.Options{
		ListenAddr:    c.opts.ListenAddr,
		AllowedHosts:  c.opts.AllowedHosts,
		OriginAllowed: c.originAllowed,
		MaxBodyBytes:  c.opts.MaxBodyBytes,
	})
	return securityHeaders(guarded)
}

// originAllowed accepts the console's own origin, the scheme and Host of the request (whose Host the guard has
// checked), and those of [serve] allowed_origins; not any other loopback origin, which would be another local
// program's page.
func (c *Console) originAllowed(r *http.Request, origin string) bool {
	origin = strings.TrimSuffix(origin, "/")
	for _, scheme := range []string{"http://", "https://"} {
		if strings.EqualFold(origin, scheme+r.Host) {
			return true
		}
	}
	return slices.ContainsFunc(c.opts.AllowedOrigins, func(o string) bool {
		return strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
	})
}

// Close cancels the runs the console started, ends its event streams and eval runs, and waits for them to end. It
// is idempotent.
func (c *Console) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// go runs f on a goroutine the console owns: Close waits for it. It reports false, running nothing, once the
// console is closed.
func (c *Console) goOwned(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// contentSecurityPolicy lets the page load its own files only, and be framed by nobody.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// securityHeaders sets the security headers on every response, and Cache-Control no-store on the API's.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if isAPI(r.URL.Path) {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

func isAPI(path string) bool { return path == "/api" || len(path) >= 5 && path[:5] == "/api/" }

// writeJSON writes v as the response, with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
