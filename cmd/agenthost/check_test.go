package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// closedAddr is a loopback address nothing listens at.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestCheckModel: check contacts the model API and its exit code agrees with what it printed.
func TestCheckModel(t *testing.T) {
	listed := fakellm.New()
	t.Cleanup(listed.Close)
	listed.SetModels("m", "other")
	unlisted := fakellm.New() // no /models: check asks for one token
	t.Cleanup(unlisted.Close)
	const key = "sk-check-secret-4242"
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(unauthorized.Close)
	closed := "http://" + closedAddr(t) + "/v1"
	// A web page where the API was expected, and a server that has nothing at the paths (base_url without /v1).
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>Open WebUI</title>")
	}))
	t.Cleanup(page.Close)
	nothing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nothing.Close)
	// A server that lists other names than the one it answers to, as Azure's deployments.
	deployment := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o"}]}`)
			return
		}
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"p"},"finish_reason":"length"}]}`)
	}))
	t.Cleanup(deployment.Close)

	for _, tc := range []struct {
		name, baseURL, model, provider string
		code                           int
		want                           []string
	}{
		{"listed", listed.URL, "m", "openai", 0, []string{"m      openai    " + listed.URL + "  ok (listed among 2 models)", ": ok (model provider openai"}},
		{"not listed", listed.URL, "gpt-typo", "openai", 1, []string{"not listed", `the API lists 2 models and not "gpt-typo", nor does it answer to it: correct the model name`, ": 1 problem"}},
		{"answers unlisted", deployment.URL + "/v1", "my-deployment", "openai", 0, []string{"ok (answered; not in the API's list)", ": ok (model provider openai"}},
		{"web page", page.URL, "m", "openai", 1, []string{"not an OpenAI API", "base_url usually ends in the API's version", ": 1 problem"}},
		{"no API", nothing.URL, "m", "openai", 1, []string{"not an OpenAI API", ": 1 problem"}},
		{"no list", unlisted.URL, "m", "openai", 0, []string{"ok (answered)", ": ok (model provider openai"}},
		{"closed port", closed, "m", "openai", 1, []string{"unreachable", "connection refused: nothing listens at " + strings.TrimSuffix(strings.TrimPrefix(closed, "http://"), "/v1") + "; start the server, or correct [model] base_url", ": 1 problem"}},
		{"401", unauthorized.URL + "/v1", "m", "openai", 1, []string{"key refused", "the API answered 401 to the key of TEST_KEY: set a valid key", "Incorrect API key provided: [redacted]", ": 1 problem"}},
		{"test", "", "m", "test", 0, []string{"-      test      -         nothing to contact (provider test)", ": ok (model provider test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no list" {
				unlisted.Enqueue(fakellm.Turn{Text: "p"})
			}
			dir := t.TempDir()
			base := ""
			if tc.baseURL != "" {
				base = fmt.Sprintf("base_url = %q\n", tc.baseURL)
			}
			writeFile(t, dir, "agent.toml", fmt.Sprintf("[model]\nprovider = %q\nmodel = %q\n%sapi_key_env = \"TEST_KEY\"\n", tc.provider, tc.model, base))
			r := agenthost(t, dir, "", []string{"TEST_KEY=" + key}, "check")
			out := r.stdout + r.stderr
			if r.code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", r.code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q:\n%s", w, out)
				}
			}
			if tc.code != 0 && strings.Contains(r.stdout, ": ok") {
				t.Errorf("check printed ok and exits %d:\n%s", r.code, out)
			}
			if strings.Contains(out, key) {
				t.Errorf("the output shows the key:\n%s", out)
			}
		})
	}
	if n := unlisted.RequestCount(); n != 1 || unlisted.Unscripted() != 0 {
		t.Errorf("the server without a list got %d chat requests (%d unscripted), want the one probe", n, unlisted.Unscripted())
	}
}

// TestCheckAndMCPListServerCause: a failed server's root cause and the child's last stderr lines are on the first
// screen of check and mcp list, below its row, and both exit 1.
func TestCheckAndMCPListServerCause(t *testing.T) {
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(unauthorized.Close)
	closed := closedAddr(t)
	dir := t.TempDir()
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "test"

[mcp.servers.docker]
command = "sh"
args = ["-c", "echo 'Unable to find image locally' >&2; echo 'docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 125"]

[mcp.servers.refused]
url = "http://%s/mcp"

[mcp.servers.locked]
url = "%s/mcp"
auth = "none"
`, closed, unauthorized.URL))
	want := []string{
		"the server exited before it answered; its last lines on stderr say why",
		"    Unable to find image locally\n",
		"    docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n",
		"connection refused: nothing listens at " + closed + "; start the server, or correct url\n",
		"401 Unauthorized: " + strings.TrimPrefix(unauthorized.URL, "http://") + " wants credentials; set its token in headers, or, if it uses OAuth, run `agenthost mcp login locked`\n",
	}
	for _, args := range [][]string{{"check"}, {"mcp", "list"}} {
		r := agenthost(t, dir, "", nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "MCP servers not reachable: docker, refused, locked") {
			t.Errorf("%s: exit %d, want 1 and the servers named:\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: the output lacks %q:\n%s", args, w, r.stdout)
			}
		}
		if strings.Contains(r.stdout, ": ok") {
			t.Errorf("%s printed ok:\n%s", args, r.stdout)
		}
	}
	// A run with the servers says the same in its start-up warning.
	r := agenthost(t, dir, "", nil, "run", "hello")
	for _, w := range []string{"docker: Cannot connect to the Docker daemon", "connection refused: nothing listens at " + closed} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("run: the start-up warning lacks %q:\n%s", w, r.stderr)
		}
	}
}
