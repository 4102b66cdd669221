package config

import (
	"strings"
	"testing"
)

// The embeddings keys of [agent.tool_search] are checked as [model]'s are, one problem at a time.
func TestParseToolSearchEmbeddings(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"all set", "[agent.tool_search]\nembeddings_model = \"e\"\nbase_url = \"http://127.0.0.1:11434/v1\"\napi_key_env = \"EMBED_KEY\"\n", ""},
		{"model alone", "[agent.tool_search]\nembeddings_model = \"e\"\n", ""},
		{"base_url not http", "[agent.tool_search]\nembeddings_model = \"e\"\nbase_url = \"ftp://example.test/v1\"\n",
			`agent.toml:3: agent.tool_search.base_url: must be an http or https URL (got "ftp://example.test/v1")`},
		{"base_url without host", "[agent.tool_search]\nembeddings_model = \"e\"\nbase_url = \"localhost:11434\"\n",
			`agent.toml:3: agent.tool_search.base_url: must be an http or https URL (got "localhost:11434")`},
		{"api_key_env not a name", "[agent.tool_search]\nembeddings_model = \"e\"\napi_key_env = \"sk-123\"\n",
			`agent.toml:3: agent.tool_search.api_key_env: must be the name of an environment variable (got "sk-123")`},
		{"base_url without a model", "[agent.tool_search]\nbase_url = \"http://127.0.0.1:1/v1\"\n",
			`agent.toml:2: agent.tool_search.base_url: only used with embeddings_model, which is not set`},
		{"api_key_env without a model", "[agent.tool_search]\nmode = \"always\"\napi_key_env = \"K\"\n",
			`agent.toml:3: agent.tool_search.api_key_env: only used with embeddings_model, which is not set`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("agent.toml", []byte(tc.src), envOf(nil))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Parse: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}

	// Validate, of a Config built in code, reports them too.
	c := Default()
	c.Agent.ToolSearch = ToolSearch{EmbeddingsModel: "e", BaseURL: "nope", APIKeyEnv: "1X"}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "agent.tool_search.base_url: must be an http or https URL") ||
		!strings.Contains(err.Error(), "agent.tool_search.api_key_env: must be the name") {
		t.Errorf("Validate = %v", err)
	}
}
