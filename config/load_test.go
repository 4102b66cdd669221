package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseAllKeys sets every key to a value other than its default and checks where each one lands.
func TestParseAllKeys(t *testing.T) {
	src := `
[agent]
name = "helper"
description = "Helps."
instructions = """
Be brief.
"""
max_iterations = 20
max_tool_calls = 5
tool_timeout = "30s"
temperature = 0.5
citation_style = "sup"
max_conversations = 7
conversation_ttl = "10m"
output_retries = 4

[agent.output.schema]
type = "object"
required = ["city"]
properties.city = { type = "string", pattern = "^[A-Z]" }

[model]
provider = "openai"
model = "gpt-4o-mini"
base_url = "http://localhost:8080/v1"
api_key_env = "MY_KEY"
request_timeout = "1m"
idle_timeout = "5s"
max_retries = 0
max_tokens = 2048
context_tokens = 32000
structured_output = false

[limits]
requests = 3
total_tokens = 100000
tool_calls = 9

[builtin]
tools = []

[builtin.fetch_url]
timeout = "10s"
max_bytes = 4096
max_chars = 500
allow_private = true
allow_hosts = ["wiki.internal", "127.0.0.1:8080"]
user_agent = "ua"

[builtin.web_search]
backend = "searxng"
url = "http://127.0.0.1:8888"
api_key_env = "SEARCH_KEY"
max_results = 7
timeout = "5s"

[builtin.files]
roots = ["docs", "/srv/files"]
max_file_bytes = 1000
max_results = 20

[builtin.doc_search]
roots = ["handbook"]
extensions = [".md", ".rst"]
index = "state/docs.db"
refresh_interval = "0s"
max_file_bytes = 2000
max_results = 9

[builtin.calculate]
precision = 30

[agents.analyst]
description = "Analyses."
instructions = "Think."
model = "gpt-4o"
tools = ["fs_read_file"]
max_iterations = 4

[agents.analyst.limits]
requests = 5
total_tokens = 1000
tool_calls = 3

[tools."fs_read_file"]
enabled = false
exclusive = true
forced = true
takes_control = true
require_approval = true
prompt = "p"
format_prompt = "f"
retry_on_disconnect = true
evaluation_checks = ["citations"]
pinned = true

[mcp.servers.fs]
transport = "stdio"
command = "npx"
args = ["-y", "server"]
env = { A = "1" }
cwd = "/tmp"
protocol_version = "2025-06-18"
connect_timeout = "10s"
reconnect_wait = "3s"
required = true
include = ["read_*"]
exclude = ["*_dangerous"]
prefix = ""
use_instructions = false
allow_sampling = false
sampling_max_tokens = 99

[mcp.servers.web]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer t" }

[a2a.peers.researcher]
url = "https://peer.example.com"
description = "Researches."
headers = { X-Key = "k" }
timeout = "1m"
required = true
protocol_version = "0.3"
poll_interval = "250ms"

[state]
backend = "postgres"
path = "/var/lib/agenthost/helper.db"
dsn_env = "AGENT_DB"
durable_runs = "all"
executor_id = "replica-1"

[serve]
tool_name = "ask_helper"
http = "0.0.0.0:9000"
a2a = "0.0.0.0:9001"
a2a_public_url = "https://agent.example.com/a2a"
path = "/agent/mcp"
stateless = true
auth_token_env = "SERVE_TOKEN"
allowed_hosts = ["agent.example.com", "agent.example.com:9000", "[::1]:9000"]
allowed_origins = ["https://app.example.com", "http://localhost:3000"]
max_body_bytes = 1048576
expose_tools = true
gateway_tools = "search"
progress_interval = "1s"
input_timeout = "2m"
max_waiting_calls = 20
read_header_timeout = "5s"
read_body_timeout = "1m"
idle_timeout = "30s"
max_sessions = 500
session_idle_timeout = "1h"
max_sessions_per_subject = 5
max_tasks_per_subject = 6

[[serve.skills]]
id = "research"
name = "Research"
description = "Researches a topic."
tags = ["research", "web"]
examples = ["What changed in Go 1.26?"]

[[serve.skills]]
id = "summarize"
name = "Summarize"
description = "Summarizes a text."

[telemetry]
exporter = "otlp"
protocol = "grpc"
endpoint = "http://collector:4317"
headers = { api-key = "k" }
service_name = "helper-agent"
capture_content = true

[eval]
checks = ["citations", "grounded"]
on_failure = "retry"
model = "gpt-4o"
datasets = ["evals/*.jsonl", "/srv/evals/smoke.jsonl"]

[code_mode]
enabled = true
tools = ["fs_read_file", "analyst", "researcher"]
timeout = "20s"
memory_limit = 1048576
max_tool_calls = 10000
max_output_bytes = 1024
`
	got, err := Parse("/etc/agenthost/agent.toml", []byte(src), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Path: "/etc/agenthost/agent.toml",
		Agent: Agent{
			Name: "helper", Description: "Helps.", Instructions: "Be brief.\n", MaxIterations: 20, MaxToolCalls: 5,
			ToolTimeout: Duration{30 * time.Second}, Temperature: ptr(0.5), CitationStyle: "sup",
			MaxConversations: 7, ConversationTTL: Duration{10 * time.Minute}, OutputRetries: 4,
			Output: &Output{Schema: json.RawMessage(`{"properties":{"city":{"pattern":"^[A-Z]","type":"string"}},"required":["city"],"type":"object"}`)},
		},
		Model: Model{
			Provider: "openai", Model: "gpt-4o-mini", BaseURL: "http://localhost:8080/v1", APIKeyEnv: "MY_KEY",
			RequestTimeout: Duration{time.Minute}, IdleTimeout: Duration{5 * time.Second}, MaxRetries: 0,
			MaxTokens: 2048, ContextTokens: 32000, StructuredOutput: ptr(false),
		},
		Limits: Limits{Requests: 3, TotalTokens: 100000, ToolCalls: 9},
		Builtin: Builtin{
			Tools: []string{},
			FetchURL: FetchURL{Timeout: Duration{10 * time.Second}, MaxBytes: 4096, MaxChars: 500, AllowPrivate: true,
				AllowHosts: []string{"wiki.internal", "127.0.0.1:8080"}, UserAgent: "ua"},
			WebSearch: WebSearch{Backend: "searxng", URL: "http://127.0.0.1:8888", APIKeyEnv: "SEARCH_KEY", MaxResults: 7,
				Timeout: Duration{5 * time.Second}},
			Files: Files{Roots: []string{"/etc/agenthost/docs", "/srv/files"}, MaxFileBytes: 1000, MaxResults: 20},
			DocSearch: DocSearch{Roots: []string{"/etc/agenthost/handbook"}, Extensions: []string{".md", ".rst"},
				Index: "/etc/agenthost/state/docs.db", MaxFileBytes: 2000, MaxResults: 9},
			Calculate: Calculate{Precision: 30},
		},
		Agents: map[string]SubAgent{"analyst": {
			Description: "Analyses.", Instructions: "Think.", Model: "gpt-4o", Tools: []string{"fs_read_file"},
			MaxIterations: 4, Limits: Limits{Requests: 5, TotalTokens: 1000, ToolCalls: 3},
		}},
		AgentOrder: []string{"analyst"},
		Tools: map[string]ToolPolicy{"fs_read_file": {
			Enabled: ptr(false), Exclusive: true, Forced: true, TakesControl: true, RequireApproval: true,
			Prompt: "p", FormatPrompt: "f", RetryOnDisconnect: true, EvaluationChecks: []string{"citations"},
			Pinned: ptr(true),
		}},
		MCP: MCP{
			Servers: map[string]MCPServer{
				"fs": {
					Transport: "stdio", Command: "npx", Args: []string{"-y", "server"}, Env: map[string]string{"A": "1"},
					Cwd: "/tmp", ProtocolVersion: "2025-06-18", ConnectTimeout: Duration{10 * time.Second}, ReconnectWait: Duration{3 * time.Second},
					Required: true, Include: []string{"read_*"}, Exclude: []string{"*_dangerous"}, Prefix: ptr(""),
					UseInstructions: ptr(false), AllowSampling: ptr(false), SamplingMaxTokens: 99,
				},
				"web": {
					Transport: "http", URL: "https://mcp.example.com/mcp",
					Headers:        map[string]string{"Authorization": "Bearer t"},
					ConnectTimeout: Duration{30 * time.Second}, ReconnectWait: Duration{10 * time.Second}, SamplingMaxTokens: 1024,
				},
			},
			Order: []string{"fs", "web"},
		},
		A2A: A2A{
			Peers: map[string]A2APeer{"researcher": {
				URL: "https://peer.example.com", Description: "Researches.", Headers: map[string]string{"X-Key": "k"},
				Timeout: Duration{time.Minute}, Required: true, ProtocolVersion: "0.3",
				PollInterval: Duration{250 * time.Millisecond},
			}},
			Order: []string{"researcher"},
		},
		State: State{Backend: "postgres", Path: "/var/lib/agenthost/helper.db", DSNEnv: "AGENT_DB", DurableRuns: "all", ExecutorID: "replica-1"},
		Serve: Serve{
			ToolName: "ask_helper", HTTP: "0.0.0.0:9000", A2A: "0.0.0.0:9001",
			A2APublicURL: "https://agent.example.com/a2a",
			Skills: []Skill{
				{
					ID: "research", Name: "Research", Description: "Researches a topic.",
					Tags: []string{"research", "web"}, Examples: []string{"What changed in Go 1.26?"},
				},
				{ID: "summarize", Name: "Summarize", Description: "Summarizes a text."},
			},
			Path: "/agent/mcp", Stateless: true, AuthTokenEnv: "SERVE_TOKEN",
			AllowedHosts:   []string{"agent.example.com", "agent.example.com:9000", "[::1]:9000"},
			AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"},
			MaxBodyBytes:   1 << 20, ExposeTools: true, GatewayTools: GatewayToolsSearch, ProgressInterval: Duration{time.Second},
			InputTimeout: Duration{2 * time.Minute}, MaxWaitingCalls: 20,
			ReadHeaderTimeout: Duration{5 * time.Second}, ReadBodyTimeout: Duration{time.Minute}, IdleTimeout: Duration{30 * time.Second},
			MaxSessions: 500, SessionIdleTimeout: Duration{time.Hour},
			MaxSessionsPerSubject: 5, MaxTasksPerSubject: 6,
		},
		Telemetry: Telemetry{Exporter: "otlp", Protocol: "grpc", Endpoint: "http://collector:4317", Headers: map[string]string{"api-key": "k"},
			ServiceName: "helper-agent", CaptureContent: true},
		Eval: Eval{Checks: []string{"citations", "grounded"}, OnFailure: "retry", Model: "gpt-4o",
			Datasets: []string{"/etc/agenthost/evals/*.jsonl", "/srv/evals/smoke.jsonl"}},
		CodeMode: CodeMode{Enabled: true, Tools: []string{"fs_read_file", "analyst", "researcher"}, Timeout: Duration{20 * time.Second},
			MemoryLimit: 1 << 20, MaxToolCalls: 10000, MaxOutputBytes: 1024},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse =\n%#v\nwant\n%#v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate after Parse = %v", err)
	}
}

const publicURLMsg = `must be an absolute http or https URL with a host and no query, fragment or user info, ` +
	`such as "https://agent.example.com/a2a"`

// TestParseErrors checks each kind of problem, with its exact message and line.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want string
	}{
		{"syntax", "[agent]\nname = \"x\"\nmax_iterations = = 3\n", nil,
			"agent.toml:3: invalid TOML: expected value but found '=' instead"},
		{"unknown top-level key", "title = \"x\"\n", nil,
			"agent.toml:1: title: unknown key"},
		{"unknown key with suggestion", "[agent]\n\nmax_iteration = 3\n", nil,
			`agent.toml:3: agent.max_iteration: unknown key (did you mean "max_iterations"?)`},
		{"unknown key in a server", "[mcp.servers.fs]\ncommand = \"x\"\ncomand = \"y\"\n", nil,
			`agent.toml:3: mcp.servers.fs.comand: unknown key (did you mean "command"?)`},
		{"unknown key in a tool policy", "[tools.x]\nenable = false\n", nil,
			`agent.toml:2: tools.x.enable: unknown key (did you mean "enabled"?)`},
		{"unknown table via dotted key", "# c\nagnt.name = \"x\"\n", nil,
			`agent.toml:2: agnt: unknown key (did you mean "agent"?)`},
		{"unknown key under mcp", "[mcp]\nservers = {}\nserver = {}\n", nil,
			`agent.toml:3: mcp.server: unknown key (did you mean "servers"?)`},
		{"wrong type int", "[agent]\nmax_iterations = \"ten\"\n", nil,
			`agent.toml:2: agent.max_iterations: must be an integer (got string "ten")`},
		{"wrong type float for int", "[model]\nmax_retries = 1.5\n", nil,
			`agent.toml:2: model.max_retries: must be an integer (got float 1.5)`},
		{"wrong type bool", "[tools.x]\nforced = \"yes\"\n", nil,
			`agent.toml:2: tools.x.forced: must be a boolean (got string "yes")`},
		{"wrong type string", "[agent]\nname = 5\n", nil,
			`agent.toml:2: agent.name: must be a string (got integer 5)`},
		{"wrong type table", "agent = 5\n", nil,
			`agent.toml:1: agent: must be a table (got integer 5)`},
		{"wrong type array", "[builtin]\ntools = \"current_time\"\n", nil,
			`agent.toml:2: builtin.tools: must be an array of strings (got string "current_time")`},
		{"wrong element type", "[builtin]\ntools = [\n  \"a\",\n  1,\n]\n", nil,
			`agent.toml:2: builtin.tools[1]: must be a string (got integer 1)`},
		{"wrong map value type", "[mcp.servers.fs]\ncommand = \"x\"\nenv = { A = 1 }\n", nil,
			`agent.toml:3: mcp.servers.fs.env.A: must be a string (got integer 1)`},
		{"array of tables", "[[mcp.servers]]\nname = \"x\"\n", nil,
			`agent.toml:1: mcp.servers: must be a table (got an array of tables)`},
		{"date-time", "[agent]\nname = 1979-05-27\n", nil,
			`agent.toml:2: agent.name: must be a string (got a date-time)`},
		{"bad duration", "[agent]\ntool_timeout = \"2 minutes\"\n", nil,
			`agent.toml:2: agent.tool_timeout: must be a duration such as "30s" or "2m" (got "2 minutes")`},
		{"duration as integer", "[agent]\ntool_timeout = 120\n", nil,
			`agent.toml:2: agent.tool_timeout: must be a duration such as "30s" or "2m" (got integer 120)`},
		{"zero duration", "[model]\nidle_timeout = \"0s\"\n", nil,
			`agent.toml:2: model.idle_timeout: must be positive (got "0s")`},
		{"negative duration", "[agent]\nconversation_ttl = \"-1h\"\n", nil,
			`agent.toml:2: agent.conversation_ttl: must be positive (got "-1h0m0s")`},
		{"max_iterations too big", "[agent]\nmax_iterations = 500\n", nil,
			`agent.toml:2: agent.max_iterations: must be between 1 and 100 (got 500)`},
		{"max_tool_calls zero", "[agent]\nmax_tool_calls = 0\n", nil,
			`agent.toml:2: agent.max_tool_calls: must be between 1 and 100 (got 0)`},
		{"temperature", "[agent]\ntemperature = 2.5\n", nil,
			`agent.toml:2: agent.temperature: must be between 0 and 2 (got 2.5)`},
		{"temperature nan", "[agent]\ntemperature = nan\n", nil,
			`agent.toml:2: agent.temperature: must be between 0 and 2 (got NaN)`},
		{"max_conversations", "[agent]\nmax_conversations = 0\n", nil,
			`agent.toml:2: agent.max_conversations: must be at least 1 (got 0)`},
		{"agent name", "[agent]\nname = \"my agent\"\n", nil,
			`agent.toml:2: agent.name: must match ^[a-zA-Z0-9_-]{1,64}$, as it names the agent's tool (got "my agent")`},
		{"citation style", "[agent]\ncitation_style = \"footnote\"\n", nil,
			`agent.toml:2: agent.citation_style: must be one of "markdown", "sup", "none" (got "footnote")`},
		{"provider", "[model]\nprovider = \"anthropic\"\n", nil,
			`agent.toml:2: model.provider: must be one of "auto", "openai", "test", "scripted", "sampling" (got "anthropic")`},
		{"openai needs model", "[model]\nprovider = \"openai\"\n", nil,
			`agent.toml:1: model.model: required when provider is "openai"`},
		{"auto resolving to openai needs model", "[model]\napi_key_env = \"K\"\n", map[string]string{"K": "sk"},
			`agent.toml:1: model.model: required: provider "auto" resolves to "openai" because K is set`},
		{"auto with base_url needs model", "[model]\nbase_url = \"http://localhost:1/v1\"\n", nil,
			`agent.toml:1: model.model: required: provider "auto" resolves to "openai" because base_url is set`},
		{"scripted needs script", "[model]\nprovider = \"scripted\"\n", nil,
			`agent.toml:1: model.script: required when provider is "scripted"`},
		{"script with another provider", "[model]\nprovider = \"test\"\nscript = \"s.jsonl\"\n", nil,
			`agent.toml:3: model.script: only used with provider "scripted" (provider is "test")`},
		{"base_url", "[model]\nmodel = \"m\"\nbase_url = \"localhost:8080\"\n", nil,
			`agent.toml:3: model.base_url: must be an http or https URL (got "localhost:8080")`},
		{"api_key_env", "[model]\napi_key_env = \"MY-KEY\"\n", nil,
			`agent.toml:2: model.api_key_env: must be the name of an environment variable (got "MY-KEY")`},
		{"max_retries", "[model]\nmax_retries = 11\n", nil,
			`agent.toml:2: model.max_retries: must be between 0 and 10 (got 11)`},
		{"max_tokens", "[model]\nmax_tokens = -1\n", nil,
			`agent.toml:2: model.max_tokens: must not be negative; 0 leaves it to the provider (got -1)`},
		{"context_tokens", "[model]\ncontext_tokens = 0\n", nil,
			`agent.toml:2: model.context_tokens: must be at least 1 (got 0)`},
		{"negative limit", "[limits]\ntotal_tokens = -5\n", nil,
			`agent.toml:2: limits.total_tokens: must not be negative; 0 means unlimited (got -5)`},
		{"builtin name", "[builtin]\ntools = [\"current time\"]\n", nil,
			`agent.toml:2: builtin.tools[0]: must be a tool name matching ^[a-zA-Z0-9_-]{1,64}$ (got "current time")`},
		{"builtin twice", "[builtin]\ntools = [\"a\", \"a\"]\n", nil,
			`agent.toml:2: builtin.tools[0]: unknown built-in tool "a"; the built-ins are current_time, calculate, fetch_url, web_search, read_file, list_dir, search_files, doc_search` + "\n" +
				`agent.toml:2: builtin.tools[1]: "a" is listed twice`},
		{"tool name", "[tools.\"fs.read\"]\nenabled = false\n", nil,
			`agent.toml:1: tools."fs.read": tool name must match ^[a-zA-Z0-9_-]{1,64}$`},
		{"server name", "[mcp.servers.\"my server\"]\ncommand = \"x\"\n", nil,
			`agent.toml:1: mcp.servers."my server": server name must match ^[a-zA-Z0-9_-]{1,64}$`},
		{"server without transport", "[mcp.servers.fs]\nrequired = true\n", nil,
			`agent.toml:1: mcp.servers.fs: needs command (stdio) or url (http, sse)`},
		{"server with command and url", "[mcp.servers.fs]\ncommand = \"x\"\nurl = \"http://x\"\n", nil,
			`agent.toml:1: mcp.servers.fs: set command (stdio) or url (http, sse), not both`},
		{"transport", "[mcp.servers.fs]\ntransport = \"ws\"\nurl = \"http://x\"\n", nil,
			`agent.toml:2: mcp.servers.fs.transport: must be one of "stdio", "http", "sse" (got "ws")`},
		{"stdio needs command", "[mcp.servers.fs]\ntransport = \"stdio\"\nargs = [\"x\"]\n", nil,
			`agent.toml:1: mcp.servers.fs.command: required with transport "stdio"`},
		{"sse needs url", "[mcp.servers.fs]\ntransport = \"sse\"\n", nil,
			`agent.toml:1: mcp.servers.fs.url: required with transport "sse"`},
		{"url on stdio", "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nurl = \"http://x\"\n", nil,
			`agent.toml:4: mcp.servers.fs.url: not used with transport "stdio"`},
		{"headers on stdio", "[mcp.servers.fs]\ncommand = \"x\"\nheaders = { A = \"b\" }\n", nil,
			`agent.toml:3: mcp.servers.fs.headers: not used with transport "stdio"`},
		{"args on http", "[mcp.servers.fs]\nurl = \"http://x\"\nargs = []\n", nil,
			`agent.toml:3: mcp.servers.fs.args: not used with transport "http"`},
		{"command on sse", "[mcp.servers.fs]\ntransport = \"sse\"\nurl = \"http://x\"\n\ncommand = \"x\"\n", nil,
			`agent.toml:5: mcp.servers.fs.command: not used with transport "sse"`},
		{"server url", "[mcp.servers.fs]\nurl = \"file:///tmp/x\"\n", nil,
			`agent.toml:2: mcp.servers.fs.url: must be an http or https URL (got "file:///tmp/x")`},
		{"header name", "[mcp.servers.fs]\nurl = \"http://x\"\nheaders = { \"Bad Header\" = \"x\" }\n", nil,
			`agent.toml:3: mcp.servers.fs.headers."Bad Header": not a valid HTTP header name`},
		{"header value from env", "[mcp.servers.fs]\nurl = \"http://x\"\nheaders = { A = \"${V}\" }\n", map[string]string{"V": "a\nb"},
			`agent.toml:3: mcp.servers.fs.headers.A: header value must not contain line breaks or NUL`},
		{"auth mode", "[mcp.servers.fs]\nurl = \"http://x\"\nauth = \"basic\"\n", nil,
			`agent.toml:3: mcp.servers.fs.auth: must be one of "none", "oauth", "client_credentials" (got "basic")`},
		{"auth on stdio", "[mcp.servers.fs]\ncommand = \"x\"\nauth = \"oauth\"\n", nil,
			`agent.toml:3: mcp.servers.fs.auth: not used with transport "stdio"`},
		{"oauth and a static token", "[mcp.servers.fs]\nurl = \"http://x\"\nheaders = { authorization = \"Bearer t\" }\nauth = \"oauth\"\n", nil,
			`agent.toml:4: mcp.servers.fs.auth: "oauth" conflicts with the static Authorization header in headers: keep one`},
		{"client credentials without a client", "[mcp.servers.fs]\nurl = \"http://x\"\nauth = \"client_credentials\"\nredirect_port = 9000\n", nil,
			`agent.toml:1: mcp.servers.fs.client_id: required with auth = "client_credentials"
agent.toml:1: mcp.servers.fs.client_secret_env: required with auth = "client_credentials"
agent.toml:4: mcp.servers.fs.redirect_port: not used with auth = "client_credentials": there is no redirect`},
		{"client keys with auth none", "[mcp.servers.fs]\nurl = \"http://x\"\nauth = \"none\"\nscopes = [\"a\"]\n", nil,
			`agent.toml:4: mcp.servers.fs.scopes: not used with auth = "none"`},
		{"client secret without its client", "[mcp.servers.fs]\nurl = \"http://x\"\nclient_secret_env = \"S\"\n", nil,
			`agent.toml:3: mcp.servers.fs.client_secret_env: needs client_id: the secret is that client's`},
		{"client metadata url", "[mcp.servers.fs]\nurl = \"http://x\"\nclient_metadata_url = \"http://x/client.json\"\n", nil,
			`agent.toml:3: mcp.servers.fs.client_metadata_url: must be an https URL with a path, where the client ID metadata document is served (got "http://x/client.json")`},
		{"scope and port", "[mcp.servers.fs]\nurl = \"http://x\"\nscopes = [\"ok\", \"two words\"]\nredirect_port = 70000\n", nil,
			`agent.toml:3: mcp.servers.fs.scopes[1]: not a valid OAuth scope (got "two words")
agent.toml:4: mcp.servers.fs.redirect_port: must be a port, 1 to 65535, or 0 for a free one (got 70000)`},
		{"env name", "[mcp.servers.fs]\ncommand = \"x\"\nenv = { \"A=B\" = \"x\" }\n", nil,
			`agent.toml:3: mcp.servers.fs.env."A=B": not a valid environment variable name`},
		{"protocol version", "[mcp.servers.fs]\ncommand = \"x\"\nprotocol_version = \"latest\"\n", nil,
			`agent.toml:3: mcp.servers.fs.protocol_version: must be an MCP protocol version such as "2025-06-18" (got "latest")`},
		{"pattern", "[mcp.servers.fs]\ncommand = \"x\"\ninclude = [\"ok\", \"[bad\"]\n", nil,
			`agent.toml:3: mcp.servers.fs.include[1]: invalid pattern "[bad": syntax error in pattern`},
		{"env_passthrough", "[mcp.servers.fs]\ncommand = \"x\"\nenv_passthrough = [\"AWS_*\", \"*\", \"A-B\", \"\"]\n", nil,
			`agent.toml:3: mcp.servers.fs.env_passthrough[2]: must be a variable name, or a pattern in which * stands for any run of characters: letters, digits, _ and * (got "A-B")
agent.toml:3: mcp.servers.fs.env_passthrough[3]: must be a variable name, or a pattern in which * stands for any run of characters: letters, digits, _ and * (got "")`},
		{"env_passthrough on http", "[mcp.servers.fs]\nurl = \"http://x\"\nenv_passthrough = [\"A\"]\n", nil,
			`agent.toml:3: mcp.servers.fs.env_passthrough: not used with transport "http"`},
		{"prefix", "[mcp.servers.fs]\ncommand = \"x\"\nprefix = \"f s\"\n", nil,
			`agent.toml:3: mcp.servers.fs.prefix: must match ^[a-zA-Z0-9_-]{1,64}$, or be "" for bare tool names (got "f s")`},
		{"sampling", "[mcp.servers.fs]\ncommand = \"x\"\nsampling = \"model\"\n", nil,
			`agent.toml:3: mcp.servers.fs.sampling: must be one of "agent", "caller" (got "model")`},
		{"sampling_max_tokens", "[mcp.servers.fs]\ncommand = \"x\"\nsampling_max_tokens = 0\n", nil,
			`agent.toml:3: mcp.servers.fs.sampling_max_tokens: must be at least 1 (got 0)`},
		{"connect_timeout", "[mcp.servers.fs]\ncommand = \"x\"\nconnect_timeout = \"0s\"\n", nil,
			`agent.toml:3: mcp.servers.fs.connect_timeout: must be positive (got "0s")`},
		{"reconnect_wait", "[mcp.servers.fs]\ncommand = \"x\"\nreconnect_wait = \"-1s\"\n", nil,
			`agent.toml:3: mcp.servers.fs.reconnect_wait: must be positive (got "-1s")`},
		{"retry_on_disconnect", "[tools.\"x\"]\nretry_on_disconnect = \"yes\"\n", nil,
			`agent.toml:2: tools.x.retry_on_disconnect: must be a boolean (got string "yes")`},
		{"serve oauth needs issuer and audience", "[serve.oauth]\nrequired_scopes = [\"a b\"]\n", nil,
			`agent.toml:1: serve.oauth.issuer: required
agent.toml:1: serve.oauth.audience: required
agent.toml:2: serve.oauth.required_scopes[0]: must be a scope: printable, without spaces, quotes or backslashes (got "a b")`},
		{"serve oauth urls", "[serve]\nauth_token_env = \"TOKEN\"\n[serve.oauth]\nissuer = \"http://idp.example.com\"\naudience = \"a\"\njwks_url = \"https://idp.example.com/keys?x=1\"\n", nil,
			`agent.toml:2: serve.auth_token_env: conflicts with [serve.oauth]: requests carry either the issuer's tokens or a static one; keep one
agent.toml:4: serve.oauth.issuer: must be an https URL (http only on a loopback host) with no query or fragment, such as "https://login.example.com/" (got "http://idp.example.com")
agent.toml:6: serve.oauth.jwks_url: must be an https URL (http only on a loopback host) with no query or fragment (got "https://idp.example.com/keys?x=1")`},
		{"output schema twice", "[agent.output]\nschema_file = \"a.json\"\nschema = { type = \"object\" }\n", nil,
			`agent.toml:2: agent.output.schema_file: conflicts with schema: give the schema inline or in a file, not both`},
		{"output without a schema", "[agent]\noutput_retries = 11\n[agent.output]\n", nil,
			`agent.toml:2: agent.output_retries: must be between 0 and 10 (got 11)
agent.toml:3: agent.output: needs schema (a TOML table) or schema_file`},
		{"eval values", "[eval]\nchecks = [\"citations\", \"spelling\", \"citations\"]\non_failure = \"ignore\"\n[tools.t]\nevaluation_checks = [\"tone\"]\n", nil,
			`agent.toml:2: eval.checks[1]: must be one of citations, complete, schema, grounded (got "spelling")
agent.toml:2: eval.checks[2]: "citations" is listed twice
agent.toml:3: eval.on_failure: must be one of "warn", "retry" (got "ignore")
agent.toml:5: tools.t.evaluation_checks[0]: must be one of citations, complete, schema, grounded (got "tone")`},
		{"eval datasets", "[eval]\nchecks = []\ndatasets = [\"evals/*.jsonl\", \"evals/[a.jsonl\", \"\"]\n", nil,
			`agent.toml:3: eval.datasets[1]: must be a file name or a glob such as "evals/*.jsonl" (got "evals/[a.jsonl")
agent.toml:3: eval.datasets[2]: must be a file name or a glob such as "evals/*.jsonl" (got "")`},
		{"eval datasets type", "[eval]\ndatasets = \"evals/*.jsonl\"\n", nil,
			`agent.toml:2: eval.datasets: must be an array of strings (got string "evals/*.jsonl")`},
		{"telemetry values", "[telemetry]\nexporter = \"jaeger\"\nprotocol = \"http\"\nendpoint = \"localhost:4318\"\nheaders = { \"a b\" = \"x\" }\n", nil,
			`agent.toml:2: telemetry.exporter: must be one of "otlp", "none" (got "jaeger")
agent.toml:3: telemetry.protocol: must be one of "http/protobuf", "grpc" (got "http")
agent.toml:4: telemetry.endpoint: must be an http or https URL (got "localhost:4318")
agent.toml:5: telemetry.headers."a b": not a valid HTTP header name`},
		{"serve oauth unknown key", "[serve.oauth]\nissuer = \"http://127.0.0.1:9\"\naudience = \"a\"\nscopes = []\n", nil,
			`agent.toml:4: serve.oauth.scopes: unknown key`},
		{"peer needs url", "[a2a.peers.p]\ndescription = \"d\"\n", nil,
			`agent.toml:1: a2a.peers.p.url: required`},
		{"peer url", "[a2a.peers.p]\nurl = \"peer.example.com\"\n", nil,
			`agent.toml:2: a2a.peers.p.url: must be an http or https URL (got "peer.example.com")`},
		{"peer protocol", "[a2a.peers.p]\nurl = \"http://x\"\nprotocol_version = \"2.0\"\n", nil,
			`agent.toml:3: a2a.peers.p.protocol_version: must be one of "", "1.0", "0.3" (got "2.0")`},
		{"peer timeout", "[a2a.peers.p]\nurl = \"http://x\"\ntimeout = \"0s\"\n", nil,
			`agent.toml:3: a2a.peers.p.timeout: must be positive (got "0s")`},
		{"peer name", "[a2a.peers.\"a.b\"]\nurl = \"http://x\"\n", nil,
			`agent.toml:1: a2a.peers."a.b": peer name must match ^[a-zA-Z0-9_-]{1,64}$, as it names the peer's tool`},
		{"state backend", "[state]\nbackend = \"mysql\"\n", nil,
			`agent.toml:2: state.backend: must be one of "sqlite", "postgres", "memory" (got "mysql")`},
		{"state dsn_env", "[state]\n\ndsn_env = \"NOT A NAME\"\n", nil,
			`agent.toml:3: state.dsn_env: must be the name of an environment variable (got "NOT A NAME")`},
		{"state durable_runs", "[state]\ndurable_runs = \"some\"\n", nil,
			`agent.toml:2: state.durable_runs: must be one of "all", "tasks", "none" (got "some")`},
		{"state executor_id", "[state]\nexecutor_id = \"a b\"\n", nil,
			"agent.toml:2: state.executor_id: must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ (got \"a b\")"},
		{"state unknown key", "[state]\ndriver = \"x\"\n", nil,
			`agent.toml:2: state.driver: unknown key`},
		{"peer poll_interval", "[a2a.peers.p]\nurl = \"http://x\"\npoll_interval = \"0s\"\n", nil,
			`agent.toml:3: a2a.peers.p.poll_interval: must be positive (got "0s")`},
		{"peer poll_interval negative", "[a2a.peers.p]\nurl = \"http://x\"\n\npoll_interval = \"-1s\"\n", nil,
			`agent.toml:4: a2a.peers.p.poll_interval: must be positive (got "-1s")`},
		{"peer poll_interval not a duration", "[a2a.peers.p]\nurl = \"http://x\"\npoll_interval = 1\n", nil,
			`agent.toml:3: a2a.peers.p.poll_interval: must be a duration such as "30s" or "2m" (got integer 1)`},
		{"script with sampling", "[model]\nprovider = \"sampling\"\nscript = \"s.jsonl\"\n", nil,
			`agent.toml:3: model.script: only used with provider "scripted" (provider is "sampling")`},
		{"unknown serve key", "[serve]\nhttp = \"127.0.0.1:1\"\nexpose_tool = true\n", nil,
			`agent.toml:3: serve.expose_tool: unknown key (did you mean "expose_tools"?)`},
		{"serve tool_name", "[serve]\ntool_name = \"ask agent\"\n", nil,
			`agent.toml:2: serve.tool_name: must match ^[a-zA-Z0-9_-]{1,64}$, or be "" for "ask_<agent name>" (got "ask agent")`},
		{"serve http without port", "[serve]\nhttp = \"127.0.0.1\"\n", nil,
			`agent.toml:2: serve.http: must be a listen address host:port such as "127.0.0.1:8765" (got "127.0.0.1")`},
		{"serve http empty", "[serve]\nhttp = \"\"\n", nil,
			`agent.toml:2: serve.http: must be a listen address host:port such as "127.0.0.1:8765" (got "")`},
		{"serve http port", "[serve]\nhttp = \"localhost:65536\"\n", nil,
			`agent.toml:2: serve.http: port must be a number between 0 and 65535, 0 for any free port (got "localhost:65536")`},
		{"serve http named port", "[serve]\nhttp = \":http\"\n", nil,
			`agent.toml:2: serve.http: port must be a number between 0 and 65535, 0 for any free port (got ":http")`},
		{"serve a2a without port", "[serve]\na2a = \"127.0.0.1\"\n", nil,
			`agent.toml:2: serve.a2a: must be a listen address host:port such as "127.0.0.1:8766" (got "127.0.0.1")`},
		{"serve a2a empty", "[serve]\n\na2a = \"\"\n", nil,
			`agent.toml:3: serve.a2a: must be a listen address host:port such as "127.0.0.1:8766" (got "")`},
		{"serve a2a port", "[serve]\na2a = \"localhost:70000\"\n", nil,
			`agent.toml:2: serve.a2a: port must be a number between 0 and 65535, 0 for any free port (got "localhost:70000")`},
		{"serve a2a named port", "[serve]\na2a = \":https\"\n", nil,
			`agent.toml:2: serve.a2a: port must be a number between 0 and 65535, 0 for any free port (got ":https")`},
		{"serve a2a type", "[serve]\na2a = 8766\n", nil,
			`agent.toml:2: serve.a2a: must be a string (got integer 8766)`},
		{"serve a2a_public_url relative", "[serve]\na2a_public_url = \"/a2a\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "/a2a")`},
		{"serve a2a_public_url without scheme", "[serve]\na2a_public_url = \"agent.example.com\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "agent.example.com")`},
		{"serve a2a_public_url scheme", "[serve]\na2a_public_url = \"ws://agent.example.com/\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "ws://agent.example.com/")`},
		{"serve a2a_public_url without host", "[serve]\na2a_public_url = \"https:///a2a\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https:///a2a")`},
		{"serve a2a_public_url query", "[serve]\na2a_public_url = \"https://agent.example.com/a2a?x=1\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https://agent.example.com/a2a?x=1")`},
		{"serve a2a_public_url empty query", "[serve]\na2a_public_url = \"https://agent.example.com/?\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https://agent.example.com/?")`},
		{"serve a2a_public_url fragment", "[serve]\na2a_public_url = \"https://agent.example.com/#card\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https://agent.example.com/#card")`},
		{"serve a2a_public_url user info", "[serve]\na2a_public_url = \"https://u:p@agent.example.com/\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https://u:p@agent.example.com/")`},
		{"serve a2a_public_url port", "[serve]\na2a_public_url = \"https://agent.example.com:0/\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https://agent.example.com:0/")`},
		{"serve a2a_public_url space", "[serve]\na2a_public_url = \"https://agent.example.com/a 2a\"\n", nil,
			`agent.toml:2: serve.a2a_public_url: ` + publicURLMsg + ` (got "https://agent.example.com/a 2a")`},
		{"serve skills not an array", "[serve]\nskills = \"research\"\n", nil,
			`agent.toml:2: serve.skills: must be an array of tables (got string "research")`},
		{"serve skills a table", "[serve.skills]\nid = \"a\"\n", nil,
			`agent.toml:1: serve.skills: must be an array of tables (got a table)`},
		{"skill without id", "[[serve.skills]]\nname = \"A\"\ndescription = \"d\"\n", nil,
			`agent.toml:1: serve.skills[1].id: required`},
		{"skill without anything", "[serve]\nhttp = \"127.0.0.1:1\"\n\n[[serve.skills]]\n", nil,
			"agent.toml:4: serve.skills[1].id: required\n" +
				"agent.toml:4: serve.skills[1].name: required\n" +
				"agent.toml:4: serve.skills[1].description: required"},
		{"skill with empty name", "[[serve.skills]]\nid = \"a\"\nname = \"\"\ndescription = \"d\"\n", nil,
			`agent.toml:3: serve.skills[1].name: required`},
		{"skill with blank description", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"\"\"\n\n\"\"\"\n", nil,
			`agent.toml:4: serve.skills[1].description: must not be blank (got "\n")`},
		{"skill id twice", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"d\"\n" +
			"[[serve.skills]]\nid = \"b\"\nname = \"B\"\ndescription = \"d\"\n" +
			"[[serve.skills]]\nname = \"A again\"\nid = \"a\"\ndescription = \"d\"\n", nil,
			`agent.toml:11: serve.skills[3].id: "a" is already the id of serve.skills[1]`},
		{"skill unknown key", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"d\"\n[[serve.skills]]\nid = \"b\"\nname = \"B\"\ndescription = \"d\"\ntag = [\"x\"]\n", nil,
			`agent.toml:9: serve.skills[2].tag: unknown key (did you mean "tags"?)`},
		{"skill id type", "[[serve.skills]]\nid = 1\nname = \"A\"\ndescription = \"d\"\n", nil,
			`agent.toml:2: serve.skills[1].id: must be a string (got integer 1)`},
		{"skill tags type", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"d\"\ntags = \"web\"\n", nil,
			`agent.toml:5: serve.skills[1].tags: must be an array of strings (got string "web")`},
		{"skill example type", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"d\"\nexamples = [\"ok\", 2]\n", nil,
			`agent.toml:5: serve.skills[1].examples[1]: must be a string (got integer 2)`},
		{"skill unset variable", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"${DESC}\"\n", nil,
			`agent.toml:4: serve.skills[1].description: environment variable DESC is not set`},
		{"skill in a sub-table of an element", "[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"d\"\n[serve.skills.meta]\nx = 1\n", nil,
			`agent.toml:5: serve.skills[1].meta: unknown key`},
		{"inline skills", "[serve]\nskills = [\n  { id = \"a\", name = \"A\", description = \"d\" },\n  { name = \"B\", description = \"d\" },\n" +
			"  { id = \"a\", name = \"C\",\n    description = \"d\", colour = 1 },\n  \"x\",\n]\n", nil,
			"agent.toml:2: serve.skills[4]: must be a table (got string \"x\")\n" +
				"agent.toml:4: serve.skills[2].id: required\n" +
				"agent.toml:5: serve.skills[3].id: \"a\" is already the id of serve.skills[1]\n" +
				"agent.toml:6: serve.skills[3].colour: unknown key"},
		{"serve path relative", "[serve]\npath = \"mcp\"\n", nil,
			`agent.toml:2: serve.path: must be a URL path such as "/mcp": starting with "/", without spaces, ?, #, { or } (got "mcp")`},
		{"serve path with a query", "[serve]\npath = \"/mcp?x=1\"\n", nil,
			`agent.toml:2: serve.path: must be a URL path such as "/mcp": starting with "/", without spaces, ?, #, { or } (got "/mcp?x=1")`},
		{"serve path healthz", "[serve]\npath = \"/healthz\"\n", nil,
			`agent.toml:2: serve.path: "/healthz" is the health check's path`},
		{"serve auth_token_env", "[serve]\nauth_token_env = \"TOKEN-1\"\n", nil,
			`agent.toml:2: serve.auth_token_env: must be the name of an environment variable (got "TOKEN-1")`},
		{"serve allowed_hosts", "[serve]\nallowed_hosts = [\"ok.example\", \"https://x.example\", \"::1\", \"x:0\", \"\"]\n", nil,
			"agent.toml:2: serve.allowed_hosts[1]: must be a host or host:port such as \"agent.example.com\" or \"[::1]:8765\", without a scheme (got \"https://x.example\")\n" +
				"agent.toml:2: serve.allowed_hosts[2]: must be a host or host:port such as \"agent.example.com\" or \"[::1]:8765\", without a scheme (got \"::1\")\n" +
				"agent.toml:2: serve.allowed_hosts[3]: must be a host or host:port such as \"agent.example.com\" or \"[::1]:8765\", without a scheme (got \"x:0\")\n" +
				"agent.toml:2: serve.allowed_hosts[4]: must be a host or host:port such as \"agent.example.com\" or \"[::1]:8765\", without a scheme (got \"\")"},
		{"serve allowed_origins", "[serve]\nallowed_origins = [\n  \"https://ok.example\",\n  \"https://x.example/\",\n  \"ftp://x.example\",\n  \"x.example\",\n  \"http://x.example:\",\n]\n", nil,
			"agent.toml:2: serve.allowed_origins[1]: must be an origin such as \"https://app.example.com\": http or https, a host, an optional port and no path (got \"https://x.example/\")\n" +
				"agent.toml:2: serve.allowed_origins[2]: must be an origin such as \"https://app.example.com\": http or https, a host, an optional port and no path (got \"ftp://x.example\")\n" +
				"agent.toml:2: serve.allowed_origins[3]: must be an origin such as \"https://app.example.com\": http or https, a host, an optional port and no path (got \"x.example\")\n" +
				"agent.toml:2: serve.allowed_origins[4]: must be an origin such as \"https://app.example.com\": http or https, a host, an optional port and no path (got \"http://x.example:\")"},
		{"serve allowed_hosts type", "[serve]\nallowed_hosts = \"a.example\"\n", nil,
			`agent.toml:2: serve.allowed_hosts: must be an array of strings (got string "a.example")`},
		{"serve max_body_bytes small", "[serve]\nmax_body_bytes = 1023\n", nil,
			`agent.toml:2: serve.max_body_bytes: must be between 1024 and 1073741824 (got 1023)`},
		{"serve max_body_bytes big", "[serve]\nmax_body_bytes = 1073741825\n", nil,
			`agent.toml:2: serve.max_body_bytes: must be between 1024 and 1073741824 (got 1073741825)`},
		{"serve progress_interval", "[serve]\nprogress_interval = \"0s\"\n", nil,
			`agent.toml:2: serve.progress_interval: must be positive (got "0s")`},
		{"serve input_timeout", "[serve]\ninput_timeout = \"-1s\"\n", nil,
			`agent.toml:2: serve.input_timeout: must be positive (got "-1s")`},
		{"serve max_waiting_calls", "[serve]\n\nmax_waiting_calls = 0\n", nil,
			`agent.toml:3: serve.max_waiting_calls: must be between 1 and 100000 (got 0)`},
		{"serve timeouts", "[serve]\nread_header_timeout = \"0s\"\nread_body_timeout = \"2h\"\nidle_timeout = \"-1s\"\nsession_idle_timeout = \"169h\"\n", nil,
			`agent.toml:2: serve.read_header_timeout: must be positive and at most 10m (got "0s")
agent.toml:3: serve.read_body_timeout: must be positive and at most 1h (got "2h0m0s")
agent.toml:4: serve.idle_timeout: must be positive and at most 1h (got "-1s")
agent.toml:5: serve.session_idle_timeout: must be positive and at most 168h (got "169h0m0s")`},
		{"serve max_sessions", "[serve]\nmax_sessions = 0\n", nil,
			`agent.toml:2: serve.max_sessions: must be between 1 and 1000000 (got 0)`},
		{"serve caps per subject", "[serve]\nmax_sessions_per_subject = 0\nmax_tasks_per_subject = 1000001\n", nil,
			`agent.toml:2: serve.max_sessions_per_subject: must be between 1 and 1000000 (got 0)
agent.toml:3: serve.max_tasks_per_subject: must be between 1 and 1000000 (got 1000001)`},
		{"serve oauth caps", "[serve.oauth]\nissuer = \"https://idp.example.com\"\naudience = \"a\"\nmax_sessions_per_subject = 2\n", nil,
			`agent.toml:4: serve.oauth.max_sessions_per_subject: unknown key`},
		{"serve stateless type", "[serve]\nstateless = 1\n", nil,
			`agent.toml:2: serve.stateless: must be a boolean (got integer 1)`},
		{"serve not a table", "serve = \"stdio\"\n", nil,
			`agent.toml:1: serve: must be a table (got string "stdio")`},
		{"unset variable", "[model]\nmodel = \"m\"\nbase_url = \"${BASE}/v1\"\n", nil,
			`agent.toml:3: model.base_url: environment variable BASE is not set`},
		{"unset variable in multi-line string", "[agent]\ninstructions = \"\"\"\nHello\n${WHO}\n\"\"\"\n", nil,
			`agent.toml:2: agent.instructions: environment variable WHO is not set`},
		{"unset variables in an array", "[mcp.servers.fs]\ncommand = \"x\"\nargs = [\"${A}\", \"ok\", \"${B}${C}\"]\n", nil,
			"agent.toml:3: mcp.servers.fs.args[0]: environment variable A is not set\n" +
				"agent.toml:3: mcp.servers.fs.args[2]: environment variables B, C are not set"},
		{"unset variable in a map", "[a2a.peers.p]\nurl = \"http://x\"\n[a2a.peers.p.headers]\nAuthorization = \"Bearer ${TOKEN}\"\n", nil,
			`agent.toml:4: a2a.peers.p.headers.Authorization: environment variable TOKEN is not set`},
		{"bad reference", "[agent]\ndescription = \"costs ${5}\"\n", nil,
			`agent.toml:2: agent.description: invalid variable name "5" in ${...} (write $$ for a literal $)`},
		{"unterminated reference", "[agent]\ndescription = \"${OOPS\"\n", nil,
			`agent.toml:2: agent.description: unterminated ${ (write $$ for a literal $)`},
		{"variable that is not a number", "[agent]\nmax_iterations = \"${N}\"\n", map[string]string{"N": "many"},
			`agent.toml:2: agent.max_iterations: must be an integer (got "many" after expansion)`},
		{"variable that is not a boolean", "[tools.x]\nforced = \"${F}\"\n", map[string]string{"F": "1"},
			`agent.toml:2: tools.x.forced: must be a boolean (got "1" after expansion)`},
		{"escaped reference is not a number", "[agent]\nmax_iterations = \"$${N}\"\n", nil,
			`agent.toml:2: agent.max_iterations: must be an integer (got string "$${N}")`},
		{"number from an unset variable", "[agent]\nmax_iterations = \"${N}\"\n", nil,
			`agent.toml:2: agent.max_iterations: environment variable N is not set`},
		{"number from a variable out of range", "[agent]\nmax_iterations = \"${N}\"\n", map[string]string{"N": "500"},
			`agent.toml:2: agent.max_iterations: must be between 1 and 100 (got 500)`},
		{"quoted and dotted keys", "[agent]\n\"max_iterations\" = 0\n[mcp]\nservers.fs.command = \"x\"\nservers.fs.'bogus' = 1\n", nil,
			"agent.toml:2: agent.max_iterations: must be between 1 and 100 (got 0)\n" +
				"agent.toml:5: mcp.servers.fs.bogus: unknown key"},
		{"inline tables", "mcp = { servers = { fs = { command = \"x\",\n  colour = 1 } } }\n", nil,
			"agent.toml:2: mcp.servers.fs.colour: unknown key"},
		{"web_search without backend", "[builtin]\ntools = [\"web_search\"]\n", nil,
			`agent.toml:1: builtin.web_search.backend: required when web_search is in builtin.tools: one of "searxng", "brave", "tavily"`},
		{"unknown backend", "[builtin.web_search]\nbackend = \"bing\"\n", nil,
			`agent.toml:2: builtin.web_search.backend: must be one of "searxng", "brave", "tavily" (got "bing")`},
		{"searxng without url", "[builtin.web_search]\nbackend = \"searxng\"\n", nil,
			`agent.toml:1: builtin.web_search.url: required with backend "searxng": the URL of the SearXNG instance`},
		{"web_search ranges", "[builtin.web_search]\nbackend = \"brave\"\nmax_results = 21\ntimeout = \"0s\"\napi_key_env = \"A-B\"\n", nil,
			"agent.toml:3: builtin.web_search.max_results: must be between 1 and 20 (got 21)\n" +
				"agent.toml:4: builtin.web_search.timeout: must be positive (got \"0s\")\n" +
				"agent.toml:5: builtin.web_search.api_key_env: must be the name of an environment variable (got \"A-B\")"},
		{"file tools without roots", "[builtin]\ntools = [\"list_dir\"]\n", nil,
			"agent.toml:1: builtin.files.roots: required when read_file, list_dir or search_files is in builtin.tools: the directories they may read"},
		{"doc_search without roots", "[builtin]\ntools = [\"doc_search\"]\n", nil,
			"agent.toml:1: builtin.doc_search.roots: required when doc_search is in builtin.tools: the directories to index"},
		{"doc_search values", "[builtin.doc_search]\nroots = [\"a\", \"\"]\nextensions = [\"md\"]\nrefresh_interval = \"-1m\"\nmax_results = 51\n", nil,
			"agent.toml:2: builtin.doc_search.roots[1]: must be a directory path (got \"\")\n" +
				"agent.toml:3: builtin.doc_search.extensions[0]: must be a file extension with its dot, such as \".rst\" (got \"md\")\n" +
				"agent.toml:4: builtin.doc_search.refresh_interval: must not be negative; \"0s\" refreshes at start-up only (got \"-1m0s\")\n" +
				"agent.toml:5: builtin.doc_search.max_results: must be between 1 and 50 (got 51)"},
		{"fetch_url values", "[builtin.fetch_url]\nmax_bytes = 10\nmax_chars = 5\nallow_hosts = [\"a/b\"]\ntimeout = \"-1s\"\n", nil,
			"agent.toml:2: builtin.fetch_url.max_bytes: must be between 1024 and 1073741824 (got 10)\n" +
				"agent.toml:3: builtin.fetch_url.max_chars: must be between 100 and 10000000 (got 5)\n" +
				"agent.toml:4: builtin.fetch_url.allow_hosts[0]: must be a host or host:port such as \"intranet.example\" or \"127.0.0.1:8080\" (got \"a/b\")\n" +
				"agent.toml:5: builtin.fetch_url.timeout: must be positive (got \"-1s\")"},
		{"unknown key in fetch_url", "[builtin.fetch_url]\nallow_host = []\n", nil,
			`agent.toml:2: builtin.fetch_url.allow_host: unknown key (did you mean "allow_hosts"?)`},
		{"precision", "[builtin.calculate]\nprecision = 0\n", nil,
			"agent.toml:2: builtin.calculate.precision: must be between 1 and 1000 (got 0)"},
		{"sub-agent without description", "[agents.a]\ninstructions = \"x\"\n", nil,
			"agent.toml:1: agents.a.description: required"},
		{"sub-agent name", "[agents.\"a b\"]\ndescription = \"x\"\n", nil,
			"agent.toml:1: agents.\"a b\": sub-agent name must match ^[a-zA-Z0-9_-]{1,64}$, as it names the sub-agent's tool"},
		{"sub-agent tools", "[agents.a]\ndescription = \"x\"\ntools = [\"a\", \"t\", \"t\", \"b c\"]\nmax_iterations = 0\n[agents.a.limits]\nrequests = -1\n", nil,
			"agent.toml:3: agents.a.tools[0]: a sub-agent cannot use itself\n" +
				"agent.toml:3: agents.a.tools[2]: \"t\" is listed twice\n" +
				"agent.toml:3: agents.a.tools[3]: must be a tool name matching ^[a-zA-Z0-9_-]{1,64}$ (got \"b c\")\n" +
				"agent.toml:4: agents.a.max_iterations: must be between 1 and 100 (got 0)\n" +
				"agent.toml:6: agents.a.limits.requests: must not be negative; 0 means unlimited (got -1)"},
		{"gateway tools misspelt", "[serve]\ngateway_tools = \"serch\"\n", nil,
			`agent.toml:2: serve.gateway_tools: must be one of "all", "search", "code" (got "serch") (did you mean "search"?)`},
		{"gateway search without gateway mode", "[serve]\ngateway_tools = \"search\"\n", nil,
			`agent.toml:2: serve.gateway_tools: only used with expose_tools = true (gateway mode); expose_tools is false`},
		{"agent tool named as a gateway search tool", "[serve]\nexpose_tools = true\ngateway_tools = \"search\"\ntool_name = \"call_tool\"\n", nil,
			`agent.toml:4: serve.tool_name: "call_tool" is a tool of gateway_tools = "search"; name the agent tool otherwise`},
		{"gateway code without gateway mode", "[serve]\ngateway_tools = \"code\"\n", nil,
			`agent.toml:2: serve.gateway_tools: only used with expose_tools = true (gateway mode); expose_tools is false`},
		{"agent tool named as a gateway code tool", "[serve]\nexpose_tools = true\ngateway_tools = \"code\"\ntool_name = \"run_code\"\n", nil,
			`agent.toml:4: serve.tool_name: "run_code" is a tool of gateway_tools = "code"; name the agent tool otherwise`},
		{"agent tool named call_tool in the code form", "[serve]\nexpose_tools = true\ngateway_tools = \"code\"\ntool_name = \"call_tool\"\n", nil,
			`agent.toml:4: serve.tool_name: "call_tool" is a tool of gateway_tools = "code"; name the agent tool otherwise`},
		{"gateway code misspelt", "[serve]\ngateway_tools = \"cod\"\n", nil,
			`agent.toml:2: serve.gateway_tools: must be one of "all", "search", "code" (got "cod") (did you mean "code"?)`},
		{"tool search threshold negative in the short form", "[agent]\nname = \"a\"\ntool_search_threshold = -5\n", nil,
			`agent.toml:3: agent.tool_search_threshold: must not be negative; 0 means 5% of [model] context_tokens (got -5)`},
		{"unknown key in a sub-agent", "[agents.a]\ndescription = \"x\"\ntool = []\n", nil,
			`agent.toml:3: agents.a.tool: unknown key (did you mean "tools"?)`},
		{"tool search mode misspelt", "[agent.tool_search]\nmode = \"alwyas\"\n", nil,
			`agent.toml:2: agent.tool_search.mode: must be one of "auto", "always", "never" (got "alwyas") (did you mean "always"?)`},
		{"tool search mode in the short form", "[agent]\nname = \"a\"\ntool_search = \"nevr\"\n", nil,
			`agent.toml:3: agent.tool_search.mode: must be one of "auto", "always", "never" (got "nevr") (did you mean "never"?)`},
		{"tool search threshold negative", "[agent.tool_search]\nmode = \"auto\"\nthreshold = -1\n", nil,
			`agent.toml:3: agent.tool_search.threshold: must not be negative; 0 means 5% of [model] context_tokens (got -1)`},
		{"tool search wrong type", "[agent]\ntool_search = true\n", nil,
			`agent.toml:2: agent.tool_search: must be a table (got boolean true)`},
		{"pinned wrong type", "[tools.current_time]\npinned = \"yes\"\n", nil,
			`agent.toml:2: tools.current_time.pinned: must be a boolean (got string "yes")`},
		{"code mode unknown key", "[code_mode]\nenable = true\n", nil,
			`agent.toml:2: code_mode.enable: unknown key (did you mean "enabled"?)`},
		{"code mode wrong types", "[code_mode]\nenabled = \"yes\"\ntimeout = 30\nmemory_limit = \"64MiB\"\ntools = \"current_time\"\n", nil,
			"agent.toml:2: code_mode.enabled: must be a boolean (got string \"yes\")\n" +
				"agent.toml:3: code_mode.timeout: must be a duration such as \"30s\" or \"2m\" (got integer 30)\n" +
				"agent.toml:4: code_mode.memory_limit: must be an integer (got string \"64MiB\")\n" +
				"agent.toml:5: code_mode.tools: must be an array of strings (got string \"current_time\")"},
		{"code mode bad duration", "[code_mode]\ntimeout = \"half a minute\"\n", nil,
			`agent.toml:2: code_mode.timeout: must be a duration such as "30s" or "2m" (got "half a minute")`},
		{"code mode timeout not positive", "[code_mode]\ntimeout = \"0s\"\n", nil,
			`agent.toml:2: code_mode.timeout: must be positive and at most 10m (got "0s")`},
		{"code mode timeout too long", "[agent]\ntool_timeout = \"20m\"\n[code_mode]\ntimeout = \"10m1s\"\n", nil,
			`agent.toml:4: code_mode.timeout: must be positive and at most 10m (got "10m1s")`},
		{"code mode timeout past tool_timeout", "[agent]\ntool_timeout = \"1m\"\n[code_mode]\ntimeout = \"90s\"\n", nil,
			`agent.toml:4: code_mode.timeout: must not exceed [agent] tool_timeout (1m0s), which bounds run_code as any tool call (got 1m30s)`},
		{"code mode memory limit too small", "[code_mode]\nmemory_limit = 1048575\n", nil,
			`agent.toml:2: code_mode.memory_limit: must be between 1048576 and 1073741824 (got 1048575)`},
		{"code mode memory limit too large", "[code_mode]\nmemory_limit = 1073741825\n", nil,
			`agent.toml:2: code_mode.memory_limit: must be between 1048576 and 1073741824 (got 1073741825)`},
		{"code mode no tool calls", "[code_mode]\nmax_tool_calls = 0\n", nil,
			`agent.toml:2: code_mode.max_tool_calls: must be between 1 and 10000 (got 0)`},
		{"code mode too many tool calls", "[code_mode]\nmax_tool_calls = 10001\n", nil,
			`agent.toml:2: code_mode.max_tool_calls: must be between 1 and 10000 (got 10001)`},
		{"code mode output too small", "[code_mode]\nmax_output_bytes = 1023\n", nil,
			`agent.toml:2: code_mode.max_output_bytes: must be between 1024 and 10485760 (got 1023)`},
		{"code mode output too large", "[code_mode]\nmax_output_bytes = 10485761\n", nil,
			`agent.toml:2: code_mode.max_output_bytes: must be between 1024 and 10485760 (got 10485761)`},
		{"code mode tools empty", "[code_mode]\nenabled = true\ntools = []\n", nil,
			`agent.toml:3: code_mode.tools: must name at least one tool; leave it out for every tool the agent offers`},
		{"code mode tools", "[code_mode]\ntools = [\"current_time\", \"a b\", \"run_code\", \"current_time\"]\n", nil,
			"agent.toml:2: code_mode.tools[1]: must be a tool name matching ^[a-zA-Z0-9_-]{1,64}$ (got \"a b\")\n" +
				"agent.toml:2: code_mode.tools[2]: \"run_code\" is code mode's own tool: a program cannot call it\n" +
				"agent.toml:2: code_mode.tools[3]: \"current_time\" is listed twice"},
		{"code mode bounds from variables", "[code_mode]\nmax_tool_calls = \"${CALLS}\"\n", map[string]string{"CALLS": "0"},
			`agent.toml:2: code_mode.max_tool_calls: must be between 1 and 10000 (got 0)`},
		{"sub-agent cycle of three", "[agents.a]\ndescription = \"a\"\ntools = [\"b\"]\n[agents.b]\ndescription = \"b\"\ntools = [\"c\"]\n[agents.c]\ndescription = \"c\"\ntools = [\"a\"]\n", nil,
			"agent.toml:3: agents.a.tools: sub-agents call each other in a cycle: a -> b -> c -> a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("testdata/agent.toml", []byte(tc.src), envOf(tc.env))
			if err == nil {
				t.Fatalf("no error, want\n%s", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}

// TestParseToolSearch checks both forms of [agent.tool_search] and that the modes and the edge of the threshold
// load.
func TestParseToolSearch(t *testing.T) {
	tests := []struct {
		src  string
		want ToolSearch
	}{
		{"", ToolSearch{}},
		{"[agent]\ntool_search = \"always\"\n", ToolSearch{Mode: ToolSearchAlways}},
		{"[agent]\ntool_search = \"never\"\n", ToolSearch{Mode: ToolSearchNever}},
		{"[agent.tool_search]\nmode = \"auto\"\nthreshold = 0\n", ToolSearch{Mode: ToolSearchAuto}},
		{"[agent.tool_search]\nthreshold = 8000\n", ToolSearch{Threshold: 8000}},
		{"[agent]\ntool_search = \"auto\"\ntool_search_threshold = 9000\n", ToolSearch{Mode: ToolSearchAuto, Threshold: 9000}},
	}
	for _, tc := range tests {
		c, err := Parse("agent.toml", []byte(tc.src), envOf(nil))
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		if c.Agent.ToolSearch != tc.want {
			t.Errorf("Parse(%q): tool search %+v, want %+v", tc.src, c.Agent.ToolSearch, tc.want)
		}
	}
}

// TestParseToolSearchThresholdTwice checks that the threshold set in both forms is reported, at its line.
func TestParseToolSearchThresholdTwice(t *testing.T) {
	src := "[agent]\ntool_search_threshold = 9000\n[agent.tool_search]\nthreshold = 8000\n"
	_, err := Parse("agent.toml", []byte(src), envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "agent.toml:2: agent.tool_search_threshold: set twice") {
		t.Fatalf("Parse: %v; want the threshold reported as set twice at line 2", err)
	}
}

// TestParseServeAccepts checks the edge values of [serve] that must load, so that the checks are not stricter
// than documented.
func TestParseServeAccepts(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want func(Serve) bool
	}{
		{"any free port on all interfaces", `http = ":0"`, nil, func(s Serve) bool { return s.HTTP == ":0" }},
		{"IPv6 listen address", `http = "[::1]:65535"`, nil, func(s Serve) bool { return s.HTTP == "[::1]:65535" }},
		{"host name listen address", `http = "localhost:8765"`, nil, func(s Serve) bool { return s.HTTP == "localhost:8765" }},
		{"root path", `path = "/"`, nil, func(s Serve) bool { return s.Path == "/" }},
		{"path below healthz", `path = "/healthz/mcp"`, nil, func(s Serve) bool { return s.Path == "/healthz/mcp" }},
		{"hosts", `allowed_hosts = ["[::1]", "10.0.0.1", "10.0.0.1:1", "Agent.Example.COM", "my_host"]`, nil,
			func(s Serve) bool { return len(s.AllowedHosts) == 5 }},
		{"origins", `allowed_origins = ["http://[::1]:8080", "HTTPS://App.Example.com", "http://localhost:65535"]`, nil,
			func(s Serve) bool { return len(s.AllowedOrigins) == 3 }},
		{"gateway tools by default", "", nil, func(s Serve) bool { return s.GatewayTools == GatewayToolsAll }},
		{"gateway tools search", "expose_tools = true\ngateway_tools = \"search\"", nil, func(s Serve) bool { return s.GatewayTools == GatewayToolsSearch }},
		{"gateway tools code", "expose_tools = true\ngateway_tools = \"code\"", nil, func(s Serve) bool { return s.GatewayTools == GatewayToolsCode }},
		{"body bounds", "max_body_bytes = 1024", nil, func(s Serve) bool { return s.MaxBodyBytes == 1024 }},
		{"body from a variable", `max_body_bytes = "${MAX}"`, map[string]string{"MAX": "1073741824"},
			func(s Serve) bool { return s.MaxBodyBytes == 1<<30 }},
		{"token variable set or not", `auth_token_env = "UNSET_TOKEN"`, nil,
			func(s Serve) bool { return s.AuthTokenEnv == "UNSET_TOKEN" }},
		{"tool name of 64 characters", `tool_name = "` + strings.Repeat("a", 64) + `"`, nil,
			func(s Serve) bool { return len(s.ToolName) == 64 }},
		{"a2a on any free port", `a2a = ":0"`, nil, func(s Serve) bool { return s.A2A == ":0" }},
		{"IPv6 a2a address", `a2a = "[::1]:65535"`, nil, func(s Serve) bool { return s.A2A == "[::1]:65535" }},
		{"public URL without a path", `a2a_public_url = "http://localhost:8766"`, nil,
			func(s Serve) bool { return s.A2APublicURL == "http://localhost:8766" }},
		{"public URL with a path and port", `a2a_public_url = "HTTPS://Agent.Example.com:8443/a2a/"`, nil,
			func(s Serve) bool { return s.A2APublicURL == "HTTPS://Agent.Example.com:8443/a2a/" }},
		{"public URL with an IPv6 host", `a2a_public_url = "http://[::1]:8766/"`, nil,
			func(s Serve) bool { return s.A2APublicURL == "http://[::1]:8766/" }},
		{"public URL from a variable", `a2a_public_url = "${URL}"`, map[string]string{"URL": "https://a.example/"},
			func(s Serve) bool { return s.A2APublicURL == "https://a.example/" }},
		{"no skills", `skills = []`, nil, func(s Serve) bool { return s.Skills != nil && len(s.Skills) == 0 }},
		{"inline skill without tags", `skills = [{ id = "a", name = "A", description = "d" }]`, nil,
			func(s Serve) bool {
				return reflect.DeepEqual(s.Skills, []Skill{{ID: "a", Name: "A", Description: "d"}})
			}},
		{"short progress interval", `progress_interval = "1ns"`, nil,
			func(s Serve) bool { return s.ProgressInterval.Duration == time.Nanosecond }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("agent.toml", []byte("[serve]\n"+tc.src+"\n"), envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c.Serve) {
				t.Errorf("Serve = %+v", c.Serve)
			}
		})
	}
}

func TestParseSamplingProvider(t *testing.T) {
	// No model name and no API key: the caller's model is used.
	c, err := Parse("agent.toml", []byte("[model]\nprovider = \"sampling\"\n"), envOf(map[string]string{"OPENAI_API_KEY": "sk"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Provider != ProviderSampling || c.Model.ResolveProvider(nil) != ProviderSampling {
		t.Errorf("provider %q resolves to %q", c.Model.Provider, c.Model.ResolveProvider(nil))
	}
}

func TestParseErrorValues(t *testing.T) {
	_, err := Parse("conf/x.toml", []byte("[agent]\nmax_iterations = 0\n"), envOf(nil))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	want := Error{File: "x.toml", Line: 2, Key: "agent.max_iterations", Msg: "must be between 1 and 100 (got 0)"}
	if *e != want {
		t.Errorf("got %#v, want %#v", *e, want)
	}
}

// TestParseManyErrors checks that problems of every kind are reported together, in line order, and that a value
// with a decoding problem is not reported a second time by validation.
func TestParseManyErrors(t *testing.T) {
	src := `[agent]
max_iterations = 500
nmae = "x"
temperature = "hot"
tool_timeout = "2x"
instructions = """
hello ${NOPE}
"""

[model]
provider = "openai"

[mcp.servers.fs]
transport = "stdio"
url = "http://x"
command = 42
args = ["a", 3]

[mcp.servers.web]
url = "ftp://x"

[a2a.peers."bad name"]
url = "http://x"
`
	_, err := Parse("agent.toml", []byte(src), envOf(nil))
	want := []string{
		`agent.toml:2: agent.max_iterations: must be between 1 and 100 (got 500)`,
		`agent.toml:3: agent.nmae: unknown key (did you mean "name"?)`,
		`agent.toml:4: agent.temperature: must be a number (got string "hot")`,
		`agent.toml:5: agent.tool_timeout: must be a duration such as "30s" or "2m" (got "2x")`,
		`agent.toml:6: agent.instructions: environment variable NOPE is not set`,
		`agent.toml:10: model.model: required when provider is "openai"`,
		`agent.toml:15: mcp.servers.fs.url: not used with transport "stdio"`,
		`agent.toml:16: mcp.servers.fs.command: must be a string (got integer 42)`,
		`agent.toml:17: mcp.servers.fs.args[1]: must be a string (got integer 3)`,
		`agent.toml:20: mcp.servers.web.url: must be an http or https URL (got "ftp://x")`,
		`agent.toml:22: a2a.peers."bad name": peer name must match ^[a-zA-Z0-9_-]{1,64}$, as it names the peer's tool`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseEnv(t *testing.T) {
	src := `
[agent]
description = "${WHO} costs $$5 and $${NOT_A_VAR} stays; lone $ too"
instructions = "${EMPTY}"
max_iterations = "${ITER}"
temperature = "${TEMP}"

[model]
model = "${MODEL}"
api_key_env = "K"

[limits]
total_tokens = " ${TOKENS} "

[tools.x]
forced = "${FORCED}"

[mcp.servers.fs]
command = "${HOME}/bin/server"
args = ["--root", "${HOME}/notes", "${HOME}${HOME}"]
env = { TOKEN = "${TOKEN}", LITERAL = "$${TOKEN}" }
prefix = "${PREFIX}"
`
	env := map[string]string{
		"WHO": "it", "EMPTY": "", "ITER": "7", "TEMP": "0.25", "MODEL": "gpt-x", "TOKENS": "1000",
		"FORCED": "true", "HOME": "/home/u", "TOKEN": "secret", "PREFIX": "",
	}
	c, err := Parse("agent.toml", []byte(src), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	s := c.MCP.Servers["fs"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"description", c.Agent.Description, "it costs $5 and ${NOT_A_VAR} stays; lone $ too"},
		{"instructions", c.Agent.Instructions, ""},
		{"max_iterations", c.Agent.MaxIterations, 7},
		{"temperature", *c.Agent.Temperature, 0.25},
		{"model", c.Model.Model, "gpt-x"},
		{"total_tokens", c.Limits.TotalTokens, int64(1000)},
		{"forced", c.Tools["x"].Forced, true},
		{"command", s.Command, "/home/u/bin/server"},
		{"args", s.Args, []string{"--root", "/home/u/notes", "/home/u/home/u"}},
		{"env", s.Env, map[string]string{"TOKEN": "secret", "LITERAL": "${TOKEN}"}},
		{"prefix", *s.Prefix, ""},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
}

func TestParseOrder(t *testing.T) {
	src := `
[mcp.servers.zeta]
command = "z"

[a2a.peers.b]
url = "http://b"

[mcp.servers.alpha]
url = "http://alpha"

[mcp.servers.mid.env]
A = "1"

[a2a.peers.a]
url = "http://a"

[mcp.servers.mid]
command = "m"

[mcp]
servers.beta.command = "b"
servers.zeta.args = []
`
	c, err := Parse("agent.toml", []byte(src), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"zeta", "alpha", "mid", "beta"}; !slices.Equal(c.MCP.Order, want) {
		t.Errorf("MCP.Order = %q, want %q", c.MCP.Order, want)
	}
	if want := []string{"b", "a"}; !slices.Equal(c.A2A.Order, want) {
		t.Errorf("A2A.Order = %q, want %q", c.A2A.Order, want)
	}
}

func TestParseScriptPath(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"conf/agent.toml", "s.jsonl", filepath.Join("conf", "s.jsonl")},
		{"agent.toml", "s.jsonl", "s.jsonl"},
		{"conf/agent.toml", "/abs/s.jsonl", "/abs/s.jsonl"},
		{"", "s.jsonl", "s.jsonl"},
	}
	for _, tc := range tests {
		src := "[model]\nprovider = \"scripted\"\nscript = \"" + tc.script + "\"\n[state]\npath = \"" + tc.script + "\"\n"
		c, err := Parse(tc.name, []byte(src), envOf(nil))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.name, err)
		}
		if c.Model.Script != tc.want || c.State.Path != tc.want {
			t.Errorf("Parse(%q) script and state path %q = %q and %q, want %q", tc.name, tc.script, c.Model.Script, c.State.Path, tc.want)
		}
	}
}

func TestParseNoName(t *testing.T) {
	_, err := Parse("", []byte("[agent]\nmax_iterations = 0\n"), envOf(nil))
	if want := "line 2: agent.max_iterations: must be between 1 and 100 (got 0)"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte("[agent]\nname = \"loaded\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != path || c.Agent.Name != "loaded" {
		t.Errorf("Load: Path %q, Name %q", c.Path, c.Agent.Name)
	}

	_, err = Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "config: ") {
		t.Errorf("Load(missing) = %v, want a wrapped not-exist error", err)
	}
}

// TestExampleFile keeps the documented example at the repository root valid, with and without an API key.
func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []map[string]string{nil, {"OPENAI_API_KEY": "sk-test"}} {
		c, err := Parse("agent.toml", data, envOf(env))
		if err != nil {
			t.Fatalf("example with env %v:\n%v", env, err)
		}
		if c.Model.Provider != "auto" || !slices.Equal(c.Builtin.Tools, []string{"current_time"}) {
			t.Errorf("example: provider %q, builtin %q", c.Model.Provider, c.Builtin.Tools)
		}
		if _, ok := c.Tools["current_time"]; !ok {
			t.Error(`example: no [tools."current_time"] policy`)
		}
	}
}

// uncommentExample returns agent.toml with the commented example that starts at header uncommented, up to the first
// line that is not a comment.
func uncommentExample(t *testing.T, header string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.LastIndex(text, "# "+header+"\n")
	if i < 0 {
		t.Fatalf("agent.toml has no commented %s example", header)
	}
	var src strings.Builder
	src.WriteString(text[:i])
	inExample := true
	for line := range strings.Lines(text[i:]) {
		if inExample && !strings.HasPrefix(line, "# ") {
			inExample = false
		}
		if inExample {
			line = strings.TrimPrefix(line, "# ")
		}
		src.WriteString(line)
	}
	return src.String()
}

// TestExampleSkill checks that the commented [[serve.skills]] example in agent.toml loads once it is uncommented.
func TestExampleSkill(t *testing.T) {
	c, err := Parse("agent.toml", []byte(uncommentExample(t, "[[serve.skills]]")), envOf(nil))
	if err != nil {
		t.Fatalf("agent.toml with the skill uncommented:\n%v", err)
	}
	if len(c.Serve.Skills) != 1 || c.Serve.Skills[0].ID != "research" || len(c.Serve.Skills[0].Tags) == 0 {
		t.Errorf("skills = %+v", c.Serve.Skills)
	}
}

// TestExampleOutput checks that the commented [agent.output] example loads once it is uncommented (without its
// schema_file line, which excludes the inline schema).
func TestExampleOutput(t *testing.T) {
	src := strings.Replace(uncommentExample(t, "[agent.output]"), "schema_file = \"answer.schema.json\"\n", "", 1)
	c, err := Parse("agent.toml", []byte(src), envOf(nil))
	if err != nil {
		t.Fatalf("agent.toml with [agent.output] uncommented:\n%v", err)
	}
	var schema map[string]any
	if c.Agent.Output == nil || json.Unmarshal(c.Agent.Output.Schema, &schema) != nil || schema["type"] != "object" {
		t.Errorf("output = %+v", c.Agent.Output)
	}
}

// TestExampleEval checks that the commented [eval] example loads once it is uncommented.
func TestExampleEval(t *testing.T) {
	c, err := Parse("agent.toml", []byte(uncommentExample(t, "[eval]")), envOf(nil))
	if err != nil {
		t.Fatalf("agent.toml with [eval] uncommented:\n%v", err)
	}
	if len(c.Eval.Checks) != 2 || c.Eval.OnFailure != OnFailureWarn || !slices.Equal(c.Eval.Datasets, []string{"evals/*.jsonl"}) {
		t.Errorf("eval = %+v", c.Eval)
	}
}

// TestExampleTelemetry checks that the commented [telemetry] example loads once it is uncommented.
func TestExampleTelemetry(t *testing.T) {
	c, err := Parse("agent.toml", []byte(uncommentExample(t, "[telemetry]")), envOf(map[string]string{"COLLECTOR_KEY": "k"}))
	if err != nil {
		t.Fatalf("agent.toml with [telemetry] uncommented:\n%v", err)
	}
	if c.Telemetry.Exporter != ExporterOTLP || c.Telemetry.Endpoint == "" || c.Telemetry.Headers["api-key"] != "k" {
		t.Errorf("telemetry = %+v", c.Telemetry)
	}
}

// TestExampleCodeMode checks that the commented [code_mode] example loads once it is uncommented, with the
// defaults it spells out.
func TestExampleCodeMode(t *testing.T) {
	c, err := Parse("agent.toml", []byte(uncommentExample(t, "[code_mode]")), envOf(nil))
	if err != nil {
		t.Fatalf("agent.toml with [code_mode] uncommented:\n%v", err)
	}
	want := Default().CodeMode
	want.Enabled, want.Tools = true, []string{"current_time", "calculate"}
	if !reflect.DeepEqual(c.CodeMode, want) {
		t.Errorf("code_mode = %+v, want %+v", c.CodeMode, want)
	}
}

// TestExampleServeOAuth checks that the commented [serve.oauth] example loads once it is uncommented.
func TestExampleServeOAuth(t *testing.T) {
	c, err := Parse("agent.toml", []byte(uncommentExample(t, "[serve.oauth]")), envOf(nil))
	if err != nil {
		t.Fatalf("agent.toml with [serve.oauth] uncommented:\n%v", err)
	}
	if o := c.Serve.OAuth; o == nil || o.Issuer == "" || o.Audience == "" || o.JWKSURL == "" || len(o.RequiredScopes) != 1 {
		t.Errorf("serve.oauth = %+v", o)
	}
}

// TestExampleFileDocumentsEveryKey checks that agent.toml mentions every key the decoder accepts, so the
// reference stays complete when a key is added.
func TestExampleFileDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Agent](), reflect.TypeFor[Model](), reflect.TypeFor[Limits](), reflect.TypeFor[Builtin](),
		reflect.TypeFor[ToolPolicy](), reflect.TypeFor[MCPServer](), reflect.TypeFor[A2APeer](), reflect.TypeFor[Serve](),
		reflect.TypeFor[Skill](), reflect.TypeFor[FetchURL](), reflect.TypeFor[WebSearch](), reflect.TypeFor[Files](),
		reflect.TypeFor[DocSearch](), reflect.TypeFor[Calculate](), reflect.TypeFor[SubAgent](), reflect.TypeFor[ServeOAuth](),
		reflect.TypeFor[Telemetry](), reflect.TypeFor[Eval](), reflect.TypeFor[CodeMode](),
	} {
		for f := range typ.Fields() {
			key := snake(f.Name)
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[Duration]() ||
				f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
				// A sub-table, documented by its header: [builtin.fetch_url], [agents.<name>.limits].
				if !strings.Contains(text, "."+key+"]\n") {
					t.Errorf("agent.toml does not document %s.%s ([...%s])", typ.Name(), f.Name, key)
				}
				continue
			}
			if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
				// An array of tables, documented by an example: [[serve.skills]].
				if !strings.Contains(text, "."+key+"]]\n") {
					t.Errorf("agent.toml does not document %s.%s ([[...%s]])", typ.Name(), f.Name, key)
				}
				continue
			}
			if !strings.Contains(text, "\n"+key+" = ") && !strings.Contains(text, "# "+key+" = ") {
				t.Errorf("agent.toml does not document %s.%s (%s)", typ.Name(), f.Name, key)
			}
		}
	}
}

// snake turns a Go field name into its TOML key: MaxToolCalls → max_tool_calls, BaseURL → base_url.
func snake(name string) string {
	for _, r := range []struct{ from, to string }{{"URL", "Url"}, {"OAuth", "Oauth"}, {"JWKS", "Jwks"}, {"A2A", "A2a"}, {"APIKey", "ApiKey"}, {"ID", "Id"}, {"MCP", "Mcp"}, {"TTL", "Ttl"}, {"HTTP", "Http"}} {
		name = strings.ReplaceAll(name, r.from, r.to)
	}
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestParseSubAgentDefaults checks what a sub-agent with only its description gets, and that sub-agents keep the
// file's order.
func TestParseSubAgentDefaults(t *testing.T) {
	c, err := Parse("agent.toml", []byte("[agents.zed]\ndescription = \"z\"\n[agents.alpha]\ndescription = \"a\"\ntools = [\"zed\"]\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSubAgent()
	want.Description = "z"
	if !reflect.DeepEqual(c.Agents["zed"], want) {
		t.Errorf("zed = %+v, want %+v", c.Agents["zed"], want)
	}
	if !slices.Equal(c.AgentOrder, []string{"zed", "alpha"}) {
		t.Errorf("AgentOrder = %v", c.AgentOrder)
	}
}

// TestExampleResearch checks the research example: a web-searching agent with a researcher sub-agent that takes
// control.
func TestExampleResearch(t *testing.T) {
	c, err := Load(filepath.Join("..", "examples", "research", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := c.Agents["researcher"]
	if !ok || !slices.Contains(r.Tools, "web_search") || !slices.Contains(r.Tools, "fetch_url") || r.Limits.Requests != 30 {
		t.Errorf("researcher = %+v", r)
	}
	if !c.Tools["researcher"].TakesControl {
		t.Error("the researcher does not take control")
	}
	if c.Builtin.WebSearch.Backend != "brave" || !slices.Contains(c.Builtin.Tools, "fetch_url") {
		t.Errorf("builtin = %+v", c.Builtin)
	}
}

// TestServeCapsPerSubject: the caps per subject of [serve] have their defaults when the table leaves them out, and
// take the values it sets.
func TestServeCapsPerSubject(t *testing.T) {
	c, err := Parse("agent.toml", []byte("[serve.oauth]\nissuer = \"https://idp.example.com/\"\naudience = \"a\"\n"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Serve; s.MaxSessionsPerSubject != 100 || s.MaxTasksPerSubject != 100 {
		t.Errorf("caps per subject %d and %d; want 100 and 100", s.MaxSessionsPerSubject, s.MaxTasksPerSubject)
	}
	c, err = Parse("agent.toml", []byte("[serve]\nauth_tokens_env = [\"A\"]\nmax_sessions_per_subject = 2\nmax_tasks_per_subject = 3\n"),
		envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Serve; s.MaxSessionsPerSubject != 2 || s.MaxTasksPerSubject != 3 {
		t.Errorf("caps per subject %d and %d; want 2 and 3", s.MaxSessionsPerSubject, s.MaxTasksPerSubject)
	}
}
