package mcpclients_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// conformanceClientPackage is the client command the suite runs: a small program built on this package.
const conformanceClientPackage = "github.com/agenthost/agenthost/internal/testkit/testservers/conformanceclient"

// TestConformance runs the official MCP conformance suite in client mode against conformanceclient. For each
// scenario the suite starts a mock server, runs the client with the server's URL, and grades what the client did.
// A scenario passes when the suite exits 0 and its checks.json holds no FAILURE and no WARNING, and every check the
// scenario exists for is there and succeeded: a run whose checks are all informational proves nothing.
func TestConformance(t *testing.T) {
	client := buildConformanceClient(t)

	tests := []struct {
		scenario string
		want     []string // ids of the checks that must be present and succeed
	}{
		{"initialize", []string{"mcp-client-initialization"}},
		{"tools_call", []string{"tool-add-numbers"}},
		{"elicitation-sep1034-client-defaults", []string{
			"client-elicitation-sep1034-string-default",
			"client-elicitation-sep1034-integer-default",
			"client-elicitation-sep1034-number-default",
			"client-elicitation-sep1034-enum-default",
			"client-elicitation-sep1034-boolean-default",
		}},
		// The server closes the tool call's stream before answering and sets retry to 500ms: the client must
		// resume it with a GET carrying Last-Event-ID, 450 to 700ms later (the suite's window).
		{"sse-retry", []string{"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"}},

		// OAuth, through mcpauth's login handler as `agenthost mcp login` uses it. Not run here, for the reasons
		// BENCHMARKS.md gives: auth/2025-03-26-oauth-metadata-backcompat (the mock server advertises the wrong
		// issuer), auth/client-credentials-jwt (private_key_jwt client authentication) and
		// auth/cross-app-access-complete-flow (an enterprise identity provider's ID-JAG).
		{"auth/metadata-default", authCode("client-registration", "prm-pathbased-requested")},
		{"auth/metadata-var1", authCode("client-registration", "prm-pathbased-requested")},
		{"auth/metadata-var2", authCode("client-registration", "prm-pathbased-requested")},
		{"auth/metadata-var3", authCode("client-registration", "prm-pathbased-requested")},
		{"auth/basic-cimd", authCode("cimd-client-id-used")},
		{"auth/scope-from-www-authenticate", authCode("scope-from-www-authenticate")},
		{"auth/scope-from-scopes-supported", authCode("scope-from-scopes-supported")},
		{"auth/scope-omitted-when-undefined", authCode("scope-omitted-when-undefined")},
		{"auth/scope-step-up", authCode("scope-step-up-initial", "scope-step-up-escalation")},
		{"auth/scope-retry-limit", []string{"authorization-request", "token-request", "scope-retry-limit"}},
		{"auth/token-endpoint-auth-basic", authCode("token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token")},
		{"auth/token-endpoint-auth-post", authCode("token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token")},
		{"auth/token-endpoint-auth-none", authCode("token-endpoint-auth-method", "resource-parameter-in-authorization", "resource-parameter-in-token")},
		{"auth/pre-registration", authCode("pre-registration-auth")},
		{"auth/2025-03-26-oauth-endpoint-fallback", []string{"client-registration", "authorization-request", "token-request", "valid-bearer-token"}},
		{"auth/resource-mismatch", []string{"resource-mismatch-rejected"}},
		{"auth/offline-access-scope", authCode("sep-2207-offline-access-requested", "sep-2207-client-metadata-grant-types")},
		{"auth/offline-access-not-supported", authCode("sep-2207-offline-access-not-requested")},
		{"auth/client-credentials-basic", []string{"authorization-server-metadata", "client-credentials-basic-auth", "token-request", "valid-bearer-token"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			out := t.TempDir()
			// The suite runs on Node 22. Its grading, on its stderr, goes to t.Log.
			cmd := peers.Command22(t, "conformance", "client", "--command", client, "--scenario", tt.scenario, "-o", out)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Run(); err != nil {
				logClientOutput(t, out)
				t.Errorf("conformance client --scenario %s: %v\n%s", tt.scenario, err, stdout.Bytes())
			}

			checks := readChecks(t, out)

			passed := map[string]bool{}
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed[c.ID] = true
					t.Logf("check %s passed %s", c.ID, compact(c.Details)) // with -v: the measured retry delay, say
				case "INFO":
				default: // FAILURE, WARNING, or a status this test does not know
					t.Errorf("check %s (%s) is %s: %s %s", c.ID, c.Description, c.Status, c.ErrorMessage, c.Details)
				}
			}
			for _, id := range tt.want {
				if !passed[id] {
					t.Errorf("check %s did not succeed", id)
				}
			}
			t.Logf("%s: %d checks passed", tt.scenario, len(passed))
		})
	}
}

// authCode returns the checks of an authorization-code login that succeeded, and more.
func authCode(more ...string) []string {
	return append([]string{"authorization-server-metadata", "authorization-request", "token-request", "valid-bearer-token",
		"pkce-code-challenge-sent", "pkce-s256-method-used", "pkce-verifier-matches-challenge"}, more...)
}

// conformanceCheck is one entry of the suite's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// compact returns details on one line, or nothing when there are none.
func compact(details json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, details) != nil {
		return ""
	}
	return b.String()
}

// readChecks reads every checks.json the suite wrote under dir, failing the test when there is none.
func readChecks(t *testing.T, dir string) []conformanceCheck {
	t.Helper()
	var checks []conformanceCheck
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(data, &cs); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		checks = append(checks, cs...)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the suite's results: %v", err)
	}
	if files == 0 {
		t.Fatalf("the suite wrote no checks.json under %s", dir)
	}
	return checks
}

// logClientOutput logs what the client printed, which the suite saves next to checks.json.
func logClientOutput(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (d.Name() == "stdout.txt" || d.Name() == "stderr.txt") {
			if data, err := os.ReadFile(path); err == nil {
				t.Logf("client %s:\n%s", d.Name(), data)
			}
		}
		return nil
	})
}

// buildConformanceClient builds the client command into a temporary directory and returns its path.
func buildConformanceClient(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformanceclient")
	// The suite splits --command on spaces and runs it through a shell.
	if strings.ContainsAny(bin, " \t\n'\"$`\\;&|<>()*?") {
		t.Fatalf("the client's path %q holds characters the suite's shell command cannot take; set TMPDIR to a plain path", bin)
	}
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, conformanceClientPackage).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", conformanceClientPackage, err, out)
	}
	return bin
}
