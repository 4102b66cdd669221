package config_test

import (
	"fmt"

	"github.com/agenthost/agenthost/config"
)

func ExampleParse() {
	src := `
[agent]
max_iterations = 500

[mcp.servers.docs]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
comand = "npx"
`
	noEnv := func(string) (string, bool) { return "", false }
	_, err := config.Parse("agent.toml", []byte(src), noEnv)
	fmt.Println(err)
	// Output:
	// agent.toml:3: agent.max_iterations: must be between 1 and 100 (got 500)
	// agent.toml:7: mcp.servers.docs.headers.Authorization: environment variable DOCS_TOKEN is not set
	// agent.toml:8: mcp.servers.docs.comand: unknown key (did you mean "command"?)
}
