package config

import (
	"reflect"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// envOf returns an environment lookup over vars only.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Path", c.Path, ""},
		{"Agent.Name", c.Agent.Name, "agenthost"},
		{"Agent.Description", c.Agent.Description, DefaultDescription},
		{"Agent.Instructions", c.Agent.Instructions, ""},
		{"Agent.MaxIterations", c.Agent.MaxIterations, 10},
		{"Agent.MaxToolCalls", c.Agent.MaxToolCalls, 10},
		{"Agent.ToolTimeout", c.Agent.ToolTimeout.Duration, 2 * time.Minute},
		{"Agent.Temperature", c.Agent.Temperature, (*float64)(nil)},
		{"Agent.CitationStyle", c.Agent.CitationStyle, "markdown"},
		{"Agent.MaxConversations", c.Agent.MaxConversations, 1000},
		{"Agent.ConversationTTL", c.Agent.ConversationTTL.Duration, 30 * 24 * time.Hour}, // the default backend is sqlite
		{"State", c.State, State{Backend: "sqlite", DSNEnv: "DATABASE_URL", DurableRuns: "tasks"}},
		{"Model.Provider", c.Model.Provider, "auto"},
		{"Model.Model", c.Model.Model, ""},
		{"Model.BaseURL", c.Model.BaseURL, ""},
		{"Model.APIKeyEnv", c.Model.APIKeyEnv, "OPENAI_API_KEY"},
		{"Model.RequestTimeout", c.Model.RequestTimeout.Duration, 5 * time.Minute},
		{"Model.IdleTimeout", c.Model.IdleTimeout.Duration, 60 * time.Second},
		{"Model.MaxRetries", c.Model.MaxRetries, 4},
		{"Model.MaxTokens", c.Model.MaxTokens, 0},
		{"Model.ContextTokens", c.Model.ContextTokens, 128000},
		{"Model.Script", c.Model.Script, ""},
		{"Limits", c.Limits, Limits{Requests: 50}},
		{"Builtin.Tools", c.Builtin.Tools, []string{"current_time"}},
		{"Tools", c.Tools, map[string]ToolPolicy{}},
		{"MCP", c.MCP, MCP{Servers: map[string]MCPServer{}}},
		{"A2A", c.A2A, A2A{Peers: map[string]A2APeer{}}},
		{"Serve", c.Serve, Serve{
			HTTP: "127.0.0.1:8765", A2A: "127.0.0.1:8766", Path: "/mcp", MaxBodyBytes: 4194304, ProgressInterval: Duration{250 * time.Millisecond},
			InputTimeout: Duration{10 * time.Minute}, MaxWaitingCalls: 100,
			ReadHeaderTimeout: Duration{10 * time.Second}, ReadBodyTimeout: Duration{30 * time.Second}, IdleTimeout: Duration{2 * time.Minute},
			MaxSessions: 10000, SessionIdleTimeout: Duration{30 * time.Minute},
			MaxSessionsPerSubject: 100, MaxTasksPerSubject: 100, GatewayTools: GatewayToolsAll,
		}},
		{"DefaultMCPServer", DefaultMCPServer(), MCPServer{ConnectTimeout: Duration{30 * time.Second}, ReconnectWait: Duration{10 * time.Second}, SamplingMaxTokens: 1024}},
		{"Serve.A2APublicURL", c.Serve.A2APublicURL, ""},
		{"Serve.Skills", c.Serve.Skills, []Skill(nil)},
		{"CodeMode", c.CodeMode, CodeMode{Timeout: Duration{30 * time.Second}, MemoryLimit: 67108864, MaxToolCalls: 100, MaxOutputBytes: 65536}},
		{"DefaultA2APeer", DefaultA2APeer(), A2APeer{Timeout: Duration{5 * time.Minute}, PollInterval: Duration{time.Second}}},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

// TestParseEmptyIsDefault checks that an empty file and Default agree, so the defaults live in one place.
func TestParseEmptyIsDefault(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "[agent]\n[model]\n[limits]\n[builtin]\n[mcp]\n[a2a]\n[serve]\n"} {
		got, err := Parse("agent.toml", []byte(src), envOf(nil))
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		want := Default()
		want.Path = "agent.toml"
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) =\n%#v\nwant\n%#v", src, got, want)
		}
	}
}

func TestToolPolicyIsEnabled(t *testing.T) {
	for _, tc := range []struct {
		enabled *bool
		want    bool
	}{{nil, true}, {ptr(true), true}, {ptr(false), false}} {
		if got := (ToolPolicy{Enabled: tc.enabled}).IsEnabled(); got != tc.want {
			t.Errorf("IsEnabled with %v = %v, want %v", tc.enabled, got, tc.want)
		}
	}
}

func TestMCPServerHelpers(t *testing.T) {
	if got := (MCPServer{}).PrefixOrName("fs"); got != "fs" {
		t.Errorf("nil prefix: got %q, want %q", got, "fs")
	}
	if got := (MCPServer{Prefix: ptr("")}).PrefixOrName("fs"); got != "" {
		t.Errorf("empty prefix: got %q, want bare", got)
	}
	if got := (MCPServer{Prefix: ptr("files")}).PrefixOrName("fs"); got != "files" {
		t.Errorf("set prefix: got %q, want %q", got, "files")
	}
	for _, tc := range []struct {
		b    *bool
		want bool
	}{{nil, true}, {ptr(true), true}, {ptr(false), false}} {
		if got := (MCPServer{UseInstructions: tc.b}).InstructionsEnabled(); got != tc.want {
			t.Errorf("InstructionsEnabled with %v = %v", tc.b, got)
		}
		if got := (MCPServer{AllowSampling: tc.b}).SamplingAllowed(); got != tc.want {
			t.Errorf("SamplingAllowed with %v = %v", tc.b, got)
		}
	}
	for _, tc := range []struct {
		s    MCPServer
		want string
	}{
		{MCPServer{Command: "x"}, "stdio"},
		{MCPServer{URL: "http://x"}, "http"},
		{MCPServer{Transport: "sse", URL: "http://x"}, "sse"},
		{MCPServer{Command: "x", URL: "http://x"}, ""},
		{MCPServer{}, ""},
	} {
		if got := tc.s.EffectiveTransport(); got != tc.want {
			t.Errorf("EffectiveTransport(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestResolveProvider(t *testing.T) {
	tests := []struct {
		name string
		m    Model
		env  map[string]string
		want string
	}{
		{"explicit", Model{Provider: "scripted", APIKeyEnv: "K"}, map[string]string{"K": "x"}, "scripted"},
		{"auto with key", Model{Provider: "auto", APIKeyEnv: "K"}, map[string]string{"K": "sk"}, "openai"},
		{"auto with empty key", Model{Provider: "auto", APIKeyEnv: "K"}, map[string]string{"K": ""}, "test"},
		{"auto without key", Model{Provider: "auto", APIKeyEnv: "K"}, nil, "test"},
		{"auto without key variable", Model{Provider: "auto"}, map[string]string{"": "x"}, "test"},
		{"auto with base_url", Model{Provider: "auto", BaseURL: "http://localhost:1/v1"}, nil, "openai"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.ResolveProvider(envOf(tc.env)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := (Model{Provider: "auto", APIKeyEnv: "K"}).ResolveProvider(nil); got != "test" {
		t.Errorf("nil env: got %q, want test", got)
	}
}

func TestDurationText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1h30m")); err != nil || d.Duration != 90*time.Minute {
		t.Fatalf("UnmarshalText(1h30m) = %v, %v", d, err)
	}
	b, err := d.MarshalText()
	if err != nil || string(b) != "1h30m0s" {
		t.Fatalf("MarshalText = %q, %v", b, err)
	}
	if err := d.UnmarshalText([]byte("soon")); err == nil {
		t.Fatal("UnmarshalText(soon): no error")
	}
}

func TestValidateProgrammatic(t *testing.T) {
	c := Default()
	c.Agent.MaxIterations = 0
	c.Model.Provider = "openai"
	c.MCP.Servers["fs"] = MCPServer{Command: "x"} // no defaults, missing from Order
	err := c.Validate()
	want := `agent.max_iterations: must be between 1 and 100 (got 0)
model.model: required when provider is "openai"
mcp.servers: the Order field must list each of the 1 names exactly once (got [])
mcp.servers.fs.connect_timeout: must be positive (got "0s")
mcp.servers.fs.reconnect_wait: must be positive (got "0s")
mcp.servers.fs.sampling_max_tokens: must be at least 1 (got 0)`
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() =\n%v\nwant\n%s", err, want)
	}

	// A Serve built in code gets no defaults either.
	c = Default()
	c.Serve = Serve{}
	err = c.Validate()
	want = `serve.http: must be a listen address host:port such as "127.0.0.1:8765" (got "")
serve.a2a: must be a listen address host:port such as "127.0.0.1:8766" (got "")
serve.path: must be a URL path such as "/mcp": starting with "/", without spaces, ?, #, { or } (got "")
serve.max_body_bytes: must be between 1024 and 1073741824 (got 0)
serve.gateway_tools: must be one of "all", "search", "code" (got "")
serve.progress_interval: must be positive (got "0s")
serve.input_timeout: must be positive (got "0s")
serve.max_waiting_calls: must be between 1 and 100000 (got 0)
serve.read_header_timeout: must be positive and at most 10m (got "0s")
serve.read_body_timeout: must be positive and at most 1h (got "0s")
serve.idle_timeout: must be positive and at most 1h (got "0s")
serve.max_sessions: must be between 1 and 1000000 (got 0)
serve.session_idle_timeout: must be positive and at most 168h (got "0s")
serve.max_sessions_per_subject: must be between 1 and 1000000 (got 0)
serve.max_tasks_per_subject: must be between 1 and 1000000 (got 0)`
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() with a zero Serve =\n%v\nwant\n%s", err, want)
	}

	// Skills and peers built in code are checked like parsed ones, with the same keys.
	c = Default()
	c.A2A.Peers["p"] = A2APeer{URL: "http://p.example", Timeout: Duration{time.Minute}}
	c.A2A.Order = []string{"p"}
	c.Serve.Skills = []Skill{
		{ID: "a", Name: "A", Description: "d"},
		{ID: "a", Description: " "},
	}
	err = c.Validate()
	want = `a2a.peers.p.poll_interval: must be positive (got "0s")
serve.skills[2].name: required
serve.skills[2].description: must not be blank (got " ")
serve.skills[2].id: "a" is already the id of serve.skills[1]`
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() with skills =\n%v\nwant\n%s", err, want)
	}

	c = Default()
	s := DefaultMCPServer()
	s.Command = "x"
	c.MCP.Servers["fs"] = s
	c.MCP.Order = []string{"fs"}
	p := DefaultA2APeer()
	p.URL = "https://peer.example"
	c.A2A.Peers["peer"] = p
	c.A2A.Order = []string{"peer"}
	c.Serve.Skills = []Skill{{ID: "a", Name: "A", Description: "d"}, {ID: "b", Name: "B", Description: "d", Tags: []string{"t"}}}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() of a complete config = %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.toml", Line: 3, Key: "agent.name", Msg: "m"}, "a.toml:3: agent.name: m"},
		{Error{File: "a.toml", Key: "agent.name", Msg: "m"}, "a.toml: agent.name: m"},
		{Error{Line: 3, Key: "agent.name", Msg: "m"}, "line 3: agent.name: m"},
		{Error{Key: "agent.name", Msg: "m"}, "agent.name: m"},
		{Error{File: "a.toml", Line: 1, Msg: "invalid TOML: x"}, "a.toml:1: invalid TOML: x"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestConversationTTLDefaultPerBackend: a conversation in a database outlives the hour that fits memory, unless the
// file says otherwise.
func TestConversationTTLDefaultPerBackend(t *testing.T) {
	const month = 30 * 24 * time.Hour
	for _, tc := range []struct {
		name, src string
		want      time.Duration
	}{
		{"no file's key, default backend", "", month},
		{"sqlite", "[state]\nbackend = \"sqlite\"\n", month},
		{"postgres", "[state]\nbackend = \"postgres\"\n", month},
		{"memory", "[state]\nbackend = \"memory\"\n", time.Hour},
		{"backend from a variable", "[state]\nbackend = \"${BACKEND}\"\n", time.Hour},
		{"set, sqlite", "[agent]\nconversation_ttl = \"2h\"\n", 2 * time.Hour},
		{"set, memory", "[agent]\nconversation_ttl = \"72h\"\n[state]\nbackend = \"memory\"\n", 72 * time.Hour},
		{"set to the memory default, sqlite", "[agent]\nconversation_ttl = \"1h\"\n", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("agent.toml", []byte(tc.src), envOf(map[string]string{"BACKEND": "memory"}))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Agent.ConversationTTL.Duration; got != tc.want {
				t.Errorf("conversation_ttl = %s, want %s", got, tc.want)
			}
		})
	}
	if DefaultConversationTTL(StateMemory) != time.Hour || DefaultConversationTTL(StatePostgres) != month {
		t.Errorf("DefaultConversationTTL: memory %s, postgres %s", DefaultConversationTTL(StateMemory), DefaultConversationTTL(StatePostgres))
	}
}
