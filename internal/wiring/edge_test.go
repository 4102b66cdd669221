package wiring

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

// TestServeEdges serves the app over MCP HTTP and A2A with a static token ([serve] auth_token_env) and asks both
// listeners over real HTTP what a probe and an OAuth-capable client ask: /livez answers 200 without the token and
// whatever the Host (a probe addresses the server by its IP), saying nothing else; /healthz keeps its details behind
// the token; the OAuth metadata paths answer 404, as there is no [serve.oauth]; a wrong token's 401 says
// error="invalid_token"; and a 401 on the A2A JSON-RPC endpoint is a JSON-RPC error.
func TestServeEdges(t *testing.T) {
	cfg, err := config.Parse("agent.toml", []byte(`[agent]
name = "edges"

[model]
provider = "test"

[state]
backend = "memory"

[serve]
auth_token_env = "EDGE_TOKEN"
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "EDGE_TOKEN" {
			return "s3cret"
		}
		return ""
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: getenv, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	got, stop := serving(t, app, &ServeOptions{HTTP: "127.0.0.1:0", A2A: "127.0.0.1:0"})
	bases := map[string]string{}
	for front, e := range got {
		bases[front] = "http://" + e.Addr.String()
	}
	client := &http.Client{Timeout: time.Minute}
	do := func(method, url, host, token, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}

	for front, base := range bases {
		t.Run(front, func(t *testing.T) {
			for _, host := range []string{"", "10.1.2.3:8765"} {
				resp, body := do("GET", base+"/livez", host, "", "")
				if resp.StatusCode != 200 || body != "ok\n" {
					t.Errorf("/livez (Host %q): %d %q, want 200 \"ok\\n\"", host, resp.StatusCode, body)
				}
			}
			if resp, body := do("GET", base+"/healthz", "", "", ""); resp.StatusCode != 401 {
				t.Errorf("/healthz without the token: %d %q, want 401", resp.StatusCode, body)
			}
			if resp, body := do("GET", base+"/healthz", "", "s3cret", ""); resp.StatusCode != 200 || !strings.Contains(body, `"status":"ok"`) {
				t.Errorf("/healthz with the token: %d %q, want 200 with the details", resp.StatusCode, body)
			}
			for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
				"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
				if resp, body := do("GET", base+path, "", "", ""); resp.StatusCode != 404 {
					t.Errorf("%s: %d %q, want 404: there is no [serve.oauth]", path, resp.StatusCode, body)
				}
			}
			resp, _ := do("GET", base+"/healthz", "", "wrong", "")
			if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(got, `error="invalid_token"`) {
				t.Errorf("a wrong token: %d, WWW-Authenticate %q; want 401 with error=\"invalid_token\"", resp.StatusCode, got)
			}
			resp, _ = do("GET", base+"/healthz", "", "", "")
			if got := resp.Header.Get("WWW-Authenticate"); strings.Contains(got, "error=") {
				t.Errorf("no token: WWW-Authenticate %q, want no error code (RFC 6750 section 3.1)", got)
			}
		})
	}

	const send = `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	for _, token := range []string{"", "wrong"} {
		resp, body := do("POST", bases["a2a"]+"/", "", token, send)
		var rpc struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &rpc); err != nil || resp.StatusCode != 401 || rpc.JSONRPC != "2.0" || rpc.Error == nil ||
			!strings.Contains(rpc.Error.Message, "unauthorized") || string(rpc.ID) != "null" {
			t.Errorf("A2A request with token %q: %d %q (%v); want 401 with a JSON-RPC error", token, resp.StatusCode, body, err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("A2A 401's Content-Type %q (nosniff %q), want application/json, nosniff", ct, resp.Header.Get("X-Content-Type-Options"))
		}
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("A2A 401 without its challenge")
		}
	}

	stop()
}
