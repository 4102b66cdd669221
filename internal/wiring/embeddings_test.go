package wiring

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

func TestEmbeddingsModel(t *testing.T) {
	model := config.Model{Provider: "openai", Model: "chat", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "MODEL_KEY", MaxRetries: 3}
	tests := []struct {
		name                 string
		ts                   config.ToolSearch
		wantBase, wantKeyEnv string
	}{
		{"[model]'s API", config.ToolSearch{EmbeddingsModel: "e"}, "http://127.0.0.1:1/v1", "MODEL_KEY"},
		{"[model]'s URL written again", config.ToolSearch{EmbeddingsModel: "e", BaseURL: "http://127.0.0.1:1/v1"}, "http://127.0.0.1:1/v1", "MODEL_KEY"},
		{"[model]'s API, a key of its own", config.ToolSearch{EmbeddingsModel: "e", APIKeyEnv: "EMBED_KEY"}, "http://127.0.0.1:1/v1", "EMBED_KEY"},
		{"another API: not [model]'s key", config.ToolSearch{EmbeddingsModel: "e", BaseURL: "http://127.0.0.1:2/v1"}, "http://127.0.0.1:2/v1", ""},
		{"another API with its key", config.ToolSearch{EmbeddingsModel: "e", BaseURL: "http://127.0.0.1:2/v1", APIKeyEnv: "EMBED_KEY"}, "http://127.0.0.1:2/v1", "EMBED_KEY"},
		{"[model]'s origin, another path", config.ToolSearch{EmbeddingsModel: "e", BaseURL: "HTTP://127.0.0.1:1/embed/v1/"}, "HTTP://127.0.0.1:1/embed/v1/", "MODEL_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Model: model}
			cfg.Agent.ToolSearch = tt.ts
			m := EmbeddingsModel(cfg)
			if m.Model != "e" || m.BaseURL != tt.wantBase || m.APIKeyEnv != tt.wantKeyEnv || m.MaxRetries != 3 {
				t.Errorf("EmbeddingsModel = model %q, base %q, key env %q, retries %d; want e, %q, %q, 3",
					m.Model, m.BaseURL, m.APIKeyEnv, m.MaxRetries, tt.wantBase, tt.wantKeyEnv)
			}
		})
	}

	// [model] on the provider's default URL: its key goes to that origin written out, and to no other.
	openAI := config.Model{Provider: "openai", Model: "chat", APIKeyEnv: "OPENAI_API_KEY"}
	for _, tt := range []struct{ base, wantKeyEnv string }{{openai.DefaultBaseURL, "OPENAI_API_KEY"}, {"http://127.0.0.1:2/v1", ""}} {
		cfg := &config.Config{Model: openAI}
		cfg.Agent.ToolSearch = config.ToolSearch{EmbeddingsModel: "e", BaseURL: tt.base}
		if m := EmbeddingsModel(cfg); m.BaseURL != tt.base || m.APIKeyEnv != tt.wantKeyEnv {
			t.Errorf("[model] on the default URL, embeddings at %s: base %q, key env %q; want the key env %q", tt.base, m.BaseURL, m.APIKeyEnv, tt.wantKeyEnv)
		}
	}
}

// The tools' vectors outlive the process: a search embeds every tool and the query, and after a restart over the
// same state file a search embeds the query alone. The embeddings API gets the key of tool_search's api_key_env.
func TestToolVectorsSurviveRestart(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	path := filepath.Join(t.TempDir(), "state.db")
	cfg, err := config.Parse("agent.toml", []byte(`[agent]
name = "embedded"

[agent.tool_search]
embeddings_model = "embed-small"
base_url = "`+s.URL+`"
api_key_env = "EMBED_KEY"

[model]
provider = "test"

[builtin]
tools = ["current_time", "calculate", "fetch_url"]

[state]
backend = "sqlite"
path = "`+path+`"
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"EMBED_KEY": "embed-secret", "OPENAI_API_KEY": "model-secret"}
	search := func(query string) (tools int, top string) {
		t.Helper()
		app, err := Build(t.Context(), cfg, &Options{Getenv: func(k string) string { return env[k] }, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		if app.State() == nil {
			t.Fatal("no state database open")
		}
		list, _ := app.Tools().Tools(t.Context())
		hits, err := app.Tools().Search(t.Context(), query, nil)
		if err != nil || len(hits) == 0 {
			t.Fatalf("Search(%q) = %v, %v", query, hits, err)
		}
		return len(list), hits[0].Tool.Spec.Name
	}

	tools, top := search("what is the time now")
	if top != "current_time" {
		t.Errorf("top hit %q, want current_time", top)
	}
	if got, want := s.EmbeddedTexts(), tools+1; got != want {
		t.Fatalf("first start embedded %d texts, want %d (the %d tools and the query)", got, want, tools)
	}
	_, top = search("evaluate an arithmetic expression")
	if got, want := s.EmbeddedTexts(), tools+2; got != want {
		t.Errorf("after a restart %d texts embedded in all, want %d: the tools were embedded again", got, want)
	}
	if top != "calculate" {
		t.Errorf("top hit after the restart %q, want calculate", top)
	}
	reqs := s.EmbeddingRequests()
	last := reqs[len(reqs)-1]
	if len(last.Input) != 1 || last.Input[0] != "evaluate an arithmetic expression" {
		t.Errorf("the restart's request embedded %q, want the query alone", last.Input)
	}
	for _, r := range reqs {
		if r.Model != "embed-small" || r.Header.Get("Authorization") != "Bearer embed-secret" {
			t.Errorf("request %d: model %q, authorization %q", r.Seq, r.Model, r.Header.Get("Authorization"))
		}
		if strings.Contains(string(r.Body), "model-secret") {
			t.Errorf("request %d carries [model]'s key", r.Seq)
		}
	}
}
