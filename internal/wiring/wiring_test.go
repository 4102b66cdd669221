package wiring

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/builtin"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/mcpserver"
	"github.com/agenthost/agenthost/telemetry/otlp"
)

// testConfig sets every key the mapping reads to a value other than its default.
const testConfig = `
[agent]
name = "helper"
description = "Helps."
instructions = "Be brief."
max_iterations = 7
max_tool_calls = 3
tool_timeout = "40s"
temperature = 0.5
citation_style = "sup"
max_conversations = 20
conversation_ttl = "5m"

[agent.tool_search]
mode = "always"
threshold = 1234

[model]
provider = "openai"
model = "m1"
base_url = "http://127.0.0.1:9/v1"
api_key_env = ""
request_timeout = "50s"
idle_timeout = "15s"
max_retries = 4
max_tokens = 300
context_tokens = 9000

[limits]
requests = 9
total_tokens = 5000
tool_calls = 11

[tools."t"]
enabled = false
exclusive = true
forced = true
takes_control = true
require_approval = true
prompt = "p"
format_prompt = "f"
evaluation_checks = ["citations"]
pinned = false

[serve]
tool_name = "ask_helper"
path = "/agent/mcp"
stateless = true
allowed_hosts = ["agent.example.com"]
allowed_origins = ["https://app.example.com"]
max_body_bytes = 2048
expose_tools = true
gateway_tools = "search"
progress_interval = "1s"
input_timeout = "2m"
max_waiting_calls = 5
max_sessions_per_subject = 3
max_tasks_per_subject = 4

[eval]
checks = ["complete"]
on_failure = "retry"

[telemetry]
exporter = "otlp"
protocol = "grpc"
endpoint = "http://127.0.0.1:4317"
headers = { api-key = "k" }
service_name = "helper-svc"
capture_content = true
`

func TestMapping(t *testing.T) {
	cfg, err := config.Parse("agent.toml", []byte(testConfig), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}

	if got, want := OpenAIOptions(cfg.Model, "key", nil), (&openai.Options{
		BaseURL: "http://127.0.0.1:9/v1", APIKey: "key", Model: "m1", RequestTimeout: 50 * time.Second, MaxRetries: 4,
		IdleTimeout: 15 * time.Second,
	}); !reflect.DeepEqual(got, want) {
		t.Errorf("OpenAIOptions = %+v\nwant %+v", got, want)
	}
	m := cfg.Model
	m.MaxRetries = 0
	if got := OpenAIOptions(m, "", nil).MaxRetries; got != -1 {
		t.Errorf("max_retries = 0 gave the adapter %d, want -1 (none)", got)
	}

	h := HostOptions(cfg, nil)
	if h.Conversations == nil {
		t.Fatal("no conversation store")
	}
	h.Conversations = nil
	if h.CompileSchema == nil {
		t.Error("HostOptions has no schema compiler")
	}
	h.CompileSchema = nil
	temp := 0.5
	if want := (&host.Options{
		Instructions: "Be brief.", MaxIterations: 7, MaxToolCalls: 3, ToolTimeout: 40 * time.Second, Temperature: &temp,
		MaxTokens: 300, CitationStyle: host.CitationStyle("sup"), Limits: host.Limits{Requests: 9, TotalTokens: 5000, ToolCalls: 11},
		ContextTokens: 9000, ToolSearch: host.ToolSearchOptions{Mode: host.ToolSearchAlways, Threshold: 1234}, Name: "helper", Description: "Helps.", OutputMode: host.OutputTool, OutputRetries: 2,
		Checks: []string{"complete"}, OnCheckFailure: host.CheckRetry,
	}); !reflect.DeepEqual(h, want) {
		t.Errorf("HostOptions = %+v\nwant %+v", h, want)
	}

	if got, want := Policies(cfg.Tools), map[string]host.ToolPolicy{"t": {
		Disabled: true, Exclusive: true, Forced: true, TakesControl: true, RequireApproval: true, Prompt: "p", FormatPrompt: "f",
		EvaluationChecks: []string{"citations"}, Pinned: new(bool),
	}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Policies = %+v\nwant %+v", got, want)
	}

	if got, want := ServerOptions(cfg, "v1", mcpserver.SamplingAuto, nil), (&mcpserver.Options{
		Name: "helper", Version: "v1", ToolName: "ask_helper", Description: "Helps.", ProgressInterval: time.Second,
		Sampling: mcpserver.SamplingAuto, ExposeTools: true, GatewayTools: mcpserver.GatewayToolsSearch, ToolTimeout: 40 * time.Second, InputTimeout: 2 * time.Minute,
		MaxWaitingCalls: 5,
	}); !reflect.DeepEqual(got, want) {
		t.Errorf("ServerOptions = %+v\nwant %+v", got, want)
	}

	env := func(k string) string { return "env:" + k }
	tel := Telemetry(cfg, "v2", env)
	if tel.Getenv == nil || tel.Getenv("X") != "env:X" {
		t.Errorf("Telemetry's Getenv does not read the environment given")
	}
	tel.Getenv = nil
	if want := (otlp.Config{Exporter: "otlp", Protocol: "grpc", Endpoint: "http://127.0.0.1:4317", Headers: map[string]string{"api-key": "k"},
		ServiceName: "helper-svc", ServiceVersion: "v2", CaptureContent: true}); !reflect.DeepEqual(tel, want) {
		t.Errorf("Telemetry = %+v\nwant %+v", tel, want)
	}

	got := HTTPOptions(cfg.Serve, Access{Token: "tok"}, "127.0.0.1:1", nil)
	if want := (&mcpserver.HTTPOptions{
		Path: "/agent/mcp", Stateless: true, Token: "tok", ListenAddr: "127.0.0.1:1", AllowedHosts: []string{"agent.example.com"},
		AllowedOrigins: []string{"https://app.example.com"}, MaxBodyBytes: 2048, SessionIdleTimeout: 30 * time.Minute,
		MaxSessionsPerSubject: 3,
	}); !reflect.DeepEqual(got, want) {
		t.Errorf("HTTPOptions = %+v\nwant %+v", got, want)
	}
	if a := A2AServerOptions(cfg, "v2", "http://127.0.0.1:2/", Access{Tokens: map[string]string{"t": "T"}}, nil); a.MaxTasksPerSubject != 4 || a.Caller == nil {
		t.Errorf("A2AServerOptions: MaxTasksPerSubject %d, Caller set %v; want 4 and a caller", a.MaxTasksPerSubject, a.Caller != nil)
	}
	if to := Timeouts(cfg.Serve); *to != (httpedge.ServeOptions{ReadHeaderTimeout: 10 * time.Second, ReadBodyTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}) {
		t.Errorf("Timeouts = %+v", to)
	}
}

func TestOutputMapping(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		m    config.Model
		want host.OutputMode
	}{
		{config.Model{}, host.OutputNative},
		{config.Model{BaseURL: "https://api.openai.com/v1"}, host.OutputNative},
		{config.Model{BaseURL: "http://localhost:11434/v1"}, host.OutputTool},
		{config.Model{BaseURL: "http://localhost:11434/v1", StructuredOutput: &yes}, host.OutputNative},
		{config.Model{StructuredOutput: &no}, host.OutputTool},
	} {
		if got := OutputMode(tc.m); got != tc.want {
			t.Errorf("OutputMode(%+v) = %s, want %s", tc.m, got, tc.want)
		}
	}
	if got := outputRetries(0); got != -1 {
		t.Errorf("output_retries = 0 gave %d, want -1 (none)", got)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"object","required":["a"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Agent.Output = &config.Output{SchemaFile: file}
	if s, err := OutputSchema(cfg); err != nil || !strings.Contains(string(s), `"required"`) {
		t.Errorf("OutputSchema from a file = %s, %v", s, err)
	}
	cfg.Agent.Output = &config.Output{Schema: json.RawMessage(`{"type":"nonsense"}`)}
	if _, err := OutputSchema(cfg); err == nil || !strings.HasPrefix(err.Error(), "agent.output.schema: not a usable JSON Schema") {
		t.Errorf("a bad inline schema: %v", err)
	}
	cfg.Agent.Output = &config.Output{SchemaFile: filepath.Join(dir, "missing.json")}
	if _, err := OutputSchema(cfg); err == nil || !strings.HasPrefix(err.Error(), "agent.output.schema_file:") {
		t.Errorf("a missing schema file: %v", err)
	}
}

// TestBuiltinNames checks that the configuration knows every built-in tool by the name package builtin gives it, so
// that a name it reports as unknown is one builtin.New would refuse.
func TestBuiltinNames(t *testing.T) {
	if !slices.Equal(config.BuiltinTools, builtin.Available()) {
		t.Errorf("config.BuiltinTools = %q, builtin.Available() = %q", config.BuiltinTools, builtin.Available())
	}
}

func TestBuiltinAndSubAgentMapping(t *testing.T) {
	const text = `
[agent]
max_iterations = 7
conversation_ttl = "5m"

[builtin]
tools = ["fetch_url", "web_search", "read_file", "doc_search", "calculate"]

[builtin.fetch_url]
timeout = "9s"
max_bytes = 4096
max_chars = 500
allow_private = true
allow_hosts = ["wiki.internal"]
user_agent = "ua"

[builtin.web_search]
backend = "brave"
max_results = 3
timeout = "4s"

[builtin.files]
roots = ["/srv/files"]
max_file_bytes = 100
max_results = 10

[builtin.doc_search]
roots = ["/srv/docs"]
extensions = [".md"]
index = "/var/lib/agenthost/docs.db"
refresh_interval = "0s"
max_file_bytes = 200
max_results = 7

[builtin.calculate]
precision = 30

[agents.clock]
description = "Tells the time."
instructions = "Answer with the time only."
tools = ["current_time"]
max_iterations = 2

[agents.clock.limits]
requests = 3
tool_calls = 4
`
	// The roots of enabled tools must exist: real directories stand for /srv/files and /srv/docs.
	files, docs := t.TempDir(), t.TempDir()
	src := strings.NewReplacer("/srv/files", files, "/srv/docs", docs).Replace(text)
	cfg, err := config.Parse("/etc/agenthost/agent.toml", []byte(src), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BRAVE_API_KEY": "brave-key"}
	getenv := func(k string) string { return env[k] }
	got := BuiltinOptions(cfg, "v2", getenv, nil)
	want := &builtin.Options{
		Version: "v2",
		Agent:   "agenthost",
		FetchURL: builtin.FetchURLOptions{Timeout: 9 * time.Second, MaxBytes: 4096, MaxChars: 500, AllowPrivate: true,
			AllowHosts: []string{"wiki.internal"}, UserAgent: "ua"},
		WebSearch: builtin.WebSearchOptions{Backend: "brave", APIKey: "brave-key", MaxResults: 3, Timeout: 4 * time.Second},
		Files:     builtin.FilesOptions{Roots: []string{files}, MaxFileBytes: 100, MaxResults: 10},
		DocSearch: builtin.DocSearchOptions{Roots: []string{docs}, Extensions: []string{".md"},
			Index: "/var/lib/agenthost/docs.db", RefreshInterval: -1, MaxFileBytes: 200, MaxResults: 7},
		Calculate: builtin.CalculateOptions{Precision: 30},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BuiltinOptions = %+v\nwant %+v", got, want)
	}

	// api_key_env replaces the backend's usual variable.
	cfg.Builtin.WebSearch.APIKeyEnv = "MY_SEARCH_KEY"
	env["MY_SEARCH_KEY"] = "mine"
	if got := BuiltinOptions(cfg, "v2", getenv, nil).WebSearch.APIKey; got != "mine" {
		t.Errorf("key from api_key_env = %q, want mine", got)
	}
	cfg.Builtin.DocSearch.RefreshInterval.Duration = time.Minute
	if got := BuiltinOptions(cfg, "v2", getenv, nil).DocSearch.RefreshInterval; got != time.Minute {
		t.Errorf("refresh interval = %v, want 1m", got)
	}

	sa := SubAgentOptions(cfg, cfg.Agents["clock"], nil)
	if sa.Conversations == nil || sa.Conversations == HostOptions(cfg, nil).Conversations {
		t.Fatal("the sub-agent has no conversation store of its own")
	}
	if sa.Instructions != "Answer with the time only." || sa.MaxIterations != 2 ||
		sa.Limits != (host.Limits{Requests: 3, ToolCalls: 4}) {
		t.Errorf("SubAgentOptions = instructions %q, max iterations %d, limits %+v", sa.Instructions, sa.MaxIterations, sa.Limits)
	}
	// A sub-agent searches as the agent does.
	cfg.Agent.ToolSearch = config.ToolSearch{Mode: config.ToolSearchAuto, Threshold: 77}
	if got, want := SubAgentOptions(cfg, cfg.Agents["clock"], nil).ToolSearch, (host.ToolSearchOptions{Mode: host.ToolSearchAuto, Threshold: 77}); got != want {
		t.Errorf("the sub-agent's tool search = %+v, want the agent's %+v", got, want)
	}
}

func TestStateMapping(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	cfg := config.Default()
	cfg.Agent.Name = "helper"
	cfg.Agent.MaxConversations, cfg.Agent.ConversationTTL.Duration = 20, 5*time.Minute
	noEnv := func(string) string { return "" }

	conversations, db, err := OpenState(t.Context(), cfg, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if want := filepath.Join(state, "agenthost", "helper.db"); db.Where() != want || conversations != host.ConversationStore(db) {
		t.Errorf("default sqlite store at %s, want %s", db.Where(), want)
	}

	cfg.State.Path = filepath.Join(t.TempDir(), "x.db")
	opts, err := StateOptions(cfg, noEnv, nil)
	if err != nil || opts.Path != cfg.State.Path || opts.MaxConversations != 20 || opts.IdleTTL != 5*time.Minute {
		t.Errorf("StateOptions = %+v, %v", opts, err)
	}

	cfg.State = config.State{Backend: config.StatePostgres, DSNEnv: "AGENT_DB"}
	if _, err := StateOptions(cfg, noEnv, nil); err == nil || err.Error() != `state.dsn_env: AGENT_DB is not set: backend "postgres" needs the connection string in it` {
		t.Errorf("postgres without its variable: err = %v", err)
	}
	opts, err = StateOptions(cfg, func(k string) string { return map[string]string{"AGENT_DB": "postgres://db/x"}[k] }, nil)
	if err != nil || opts.DSN != "postgres://db/x" || opts.Backend != "postgres" {
		t.Errorf("postgres: %+v, %v", opts, err)
	}

	cfg.State.Backend = config.StateMemory
	conversations, db, err = OpenState(t.Context(), cfg, noEnv, nil)
	if _, ok := conversations.(*host.MemoryStore); !ok || db != nil || err != nil {
		t.Errorf("memory: %T, %v, %v", conversations, db, err)
	}
}

// TestCallerTokens: a request with one of the callers' tokens reaches the handler with its subject, where the MCP
// and A2A handlers read it; one without gets 401 saying what is wrong.
func TestCallerTokens(t *testing.T) {
	h := callerTokens(map[string]string{"alice-token": "ALICE_TOKEN", "bob-token": "BOB_TOKEN"})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := auth.TokenInfoFromContext(r.Context())
			if info == nil {
				t.Error("no token info")
				return
			}
			io.WriteString(w, info.UserID)
		}))
	for _, tt := range []struct{ header, status, body string }{
		{"Bearer alice-token", "200", "ALICE_TOKEN"},
		{"Bearer bob-token", "200", "BOB_TOKEN"},
		{"Bearer carol-token", "401", "unauthorized: the bearer token is not valid\n"},
		{"", "401", "unauthorized: a bearer token is required\n"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := strconv.Itoa(w.Code); got != tt.status || w.Body.String() != tt.body {
			t.Errorf("%q: HTTP %s %q; want %s %q", tt.header, got, w.Body.String(), tt.status, tt.body)
		}
		if wrong := tt.header != "" && tt.status == "401"; wrong != strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%q: WWW-Authenticate %q", tt.header, w.Header().Get("WWW-Authenticate"))
		}
	}
}

// TestConversationTTLPerBackend: the conversations of a file that leaves conversation_ttl out last a month idle in a
// database, an hour in memory.
func TestConversationTTLPerBackend(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	noEnv := func(string) string { return "" }
	for _, tc := range []struct{ backend, idle string }{{"sqlite", "720h0m0s idle"}, {"memory", "1h0m0s idle"}} {
		cfg, err := config.Parse("agent.toml", []byte("[state]\nbackend = \""+tc.backend+"\"\n"), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		conversations, db, err := OpenState(t.Context(), cfg, noEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if db != nil {
			defer db.Close()
		}
		if _, err := conversations.Load(t.Context(), "gone"); !errors.Is(err, host.ErrUnknownConversation) || !strings.Contains(err.Error(), tc.idle) {
			t.Errorf("%s: Load of an unknown conversation: %v, want it to say %q", tc.backend, err, tc.idle)
		}
	}
}
