package main

// `agenthost serve --http --a2a` behind an identity provider ([serve.oauth]): the official TypeScript SDK's client
// authorizes with its own OAuth support against internal/testkit/testservers/jwtissuer, and tokens that must be refused
// are sent by hand to both listeners.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testservers/jwtissuer"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// freeAddr returns a loopback address with a port free at the time of the call: for a server whose URL must be in
// its configuration before it starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// authRequest posts body to url with token ("" for none) and extra headers, and returns the response with its body.
func authRequest(t *testing.T, url, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(t, processLimit), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` +
	`"clientInfo":{"name":"raw","version":"1"}}}`

func TestServeOAuth(t *testing.T) {
	is := jwtissuer.New()
	t.Cleanup(is.Close)
	is.AddClient("ci-bot", "ci-secret", nil)
	llm := fakellm.New()
	t.Cleanup(llm.Close)

	mcpAddr, a2aAddr := freeAddr(t), freeAddr(t)
	audience := "http://" + mcpAddr + "/mcp"
	config := a2aConfig(t, t.TempDir(), "guarded", llm.URL, fmt.Sprintf(`
[serve.oauth]
issuer = %q
audience = %q
required_scopes = ["agent:use"]
`, is.Issuer, audience))
	a2aLine := `(` + a2aServing.String() + `)`
	_, stderr := serveChild(t, []string{"TEST_KEY=k"}, regexp.MustCompile(a2aLine), "serve", "--log-level", "debug", "--config", config,
		"--http", mcpAddr, "--a2a", a2aAddr)
	a2aBase := "http://" + a2aAddr
	var tokens []string // every token sent, to look for in the log
	sign := func(c jwt.MapClaims) string {
		tok := is.Sign(c)
		tokens = append(tokens, tok)
		return tok
	}
	good := func(sub string) jwt.MapClaims { return is.Claims(sub, audience, []string{"agent:use"}, time.Hour) }

	t.Run("metadata", func(t *testing.T) {
		resp, err := http.Get("http://" + mcpAddr + "/.well-known/oauth-protected-resource/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var md oauthex.ProtectedResourceMetadata
		if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || md.Resource != audience ||
			!slices.Equal(md.AuthorizationServers, []string{is.Issuer}) || !slices.Equal(md.ScopesSupported, []string{"agent:use"}) ||
			md.ResourceName != "guarded" {
			t.Errorf("metadata %+v (%v)", md, err)
		}
	})

	t.Run("TypeScript authorization code", func(t *testing.T) {
		out := tsClient(t, true, "--url", audience, "--oauth", "--action", "tools")
		if out.OAuth == nil || !slices.Equal(out.OAuth.Flows, []string{"authorization_code"}) || !out.OAuth.Registered ||
			out.OAuth.Scope != "agent:use" {
			t.Errorf("oauth %+v, want a registered client granted agent:use by the authorization code flow", out.OAuth)
		}
		if out.OAuth != nil && !strings.Contains(out.OAuth.AuthorizationURL, "resource="+url.QueryEscape(audience)) {
			t.Errorf("authorization URL %q does not name the resource", out.OAuth.AuthorizationURL)
		}
		if len(out.Tools) != 1 || out.Tools[0].Name != "ask_guarded" {
			t.Errorf("tools %+v", out.Tools)
		}
	})

	t.Run("TypeScript client credentials", func(t *testing.T) {
		out := tsClient(t, true, "--url", audience, "--client-id", "ci-bot", "--client-secret", "ci-secret", "--issuer", is.Issuer,
			"--scope", "agent:use", "--action", "tools")
		if out.OAuth == nil || !slices.Equal(out.OAuth.Flows, []string{"client_credentials"}) || out.OAuth.Scope != "agent:use" {
			t.Errorf("oauth %+v", out.OAuth)
		}
		if len(out.Tools) != 1 {
			t.Errorf("tools %+v", out.Tools)
		}
		issued := is.Issued()
		if last := issued[len(issued)-1]; last["sub"] != "ci-bot" || last["aud"] != audience {
			t.Errorf("the last token issued: %v, want ci-bot's for %s", last, audience)
		}
	})

	t.Run("TypeScript client credentials without the scope", func(t *testing.T) {
		// The token lacks agent:use: the 403's challenge makes the SDK ask again for the scope it names, which the
		// provider does not request, so the second token is refused too.
		out := tsClient(t, false, "--url", audience, "--client-id", "ci-bot", "--client-secret", "ci-secret", "--issuer", is.Issuer,
			"--action", "tools")
		if fmt.Sprint(out.Error.Code) != "403" || !strings.Contains(out.Error.Message, "upscoping") {
			t.Errorf("error %+v, want HTTP 403 after the SDK tried to step up", out.Error)
		}
	})

	t.Run("TypeScript without credentials", func(t *testing.T) {
		out := tsClient(t, false, "--url", audience, "--action", "tools")
		if fmt.Sprint(out.Error.Code) != "401" || !strings.Contains(out.Error.Message, "a bearer token is required") {
			t.Errorf("error %+v, want HTTP 401", out.Error)
		}
	})

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	valid := sign(good("alice"))
	head, rest, _ := strings.Cut(valid, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	claims, _ := base64.RawURLEncoding.DecodeString(payload)
	forgedClaims := strings.Replace(string(claims), `"sub":"alice"`, `"sub":"root"`, 1)
	with := func(k string, v any) string {
		c := good("alice")
		c[k] = v
		return sign(c)
	}
	refused := []struct {
		name, token string
		code        int
		err, reason string
	}{
		{"no token", "", 401, "", ""},
		{"expired", sign(is.Claims("alice", audience, []string{"agent:use"}, -time.Minute*5)), 401, "invalid_token", "expired"},
		{"wrong audience", with("aud", "http://other.example.com/mcp"), 401, "invalid_token", "not for this resource"},
		{"wrong issuer", with("iss", "http://127.0.0.1:1"), 401, "invalid_token", "another issuer"},
		{"unsigned", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + ".", 401, "invalid_token",
			"algorithm is not accepted"},
		{"tampered", head + "." + base64.RawURLEncoding.EncodeToString([]byte(forgedClaims)) + "." + sig, 401, "invalid_token",
			"signature is not valid"},
		{"foreign key", jwtissuer.SignWith(is.CurrentKID(), other, good("alice")), 401, "invalid_token", "signature is not valid"},
		{"insufficient scope", sign(is.Claims("alice", audience, []string{"agent:read"}, time.Hour)), 403, "insufficient_scope", "agent:use"},
	}
	for _, listener := range []struct{ name, url, body string }{
		{"mcp", audience, initializeBody},
		{"a2a", a2aBase + "/", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`},
	} {
		for _, tt := range refused {
			t.Run(listener.name+" "+tt.name, func(t *testing.T) {
				resp, body := authRequest(t, listener.url, tt.token, listener.body, map[string]string{"A2A-Version": "1.0"})
				cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
				if resp.StatusCode != tt.code || err != nil || len(cs) != 1 {
					t.Fatalf("HTTP %d, challenge %q (%v): %s", resp.StatusCode, resp.Header.Values("WWW-Authenticate"), err, body)
				}
				p := cs[0].Params
				if p["resource_metadata"] != "http://"+mcpAddr+"/.well-known/oauth-protected-resource/mcp" || p["error"] != tt.err ||
					p["scope"] != "agent:use" || !strings.Contains(p["error_description"], tt.reason) {
					t.Errorf("challenge %q", resp.Header.Get("WWW-Authenticate"))
				}
			})
		}
	}

	t.Run("mcp session bound to its subject", func(t *testing.T) {
		resp, body := authRequest(t, audience, valid, initializeBody, nil)
		session := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize with a valid token: HTTP %d, session %q: %s", resp.StatusCode, session, body)
		}
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
		hdr := map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
		if resp, body := authRequest(t, audience, sign(good("mallory")), list, hdr); resp.StatusCode != http.StatusForbidden {
			t.Errorf("another subject's token on alice's session: HTTP %d: %s", resp.StatusCode, body)
		}
		if resp, body := authRequest(t, audience, sign(good("alice")), list, hdr); resp.StatusCode != http.StatusOK ||
			!strings.Contains(body, "ask_guarded") {
			t.Errorf("a new token of alice's on her session: HTTP %d: %s", resp.StatusCode, body)
		}
	})

	t.Run("a2a card", func(t *testing.T) {
		card := a2aOK[a2aCard](t, a2aBase, "card", map[string]any{})
		code, cc := string(card.SecuritySchemes["oauth2"]), string(card.SecuritySchemes["oauth2_client_credentials"])
		if !strings.Contains(code, `"authorizationUrl":"`+is.Issuer+`/authorize"`) || !strings.Contains(code, `"pkceRequired":true`) ||
			!strings.Contains(cc, `"tokenUrl":"`+is.Issuer+`/token"`) ||
			!strings.Contains(code, `"oauth2MetadataUrl":"`+is.Issuer+`/.well-known/oauth-authorization-server"`) {
			t.Errorf("security schemes %s", card.SecuritySchemes)
		}
	})

	t.Run("a2a with a token", func(t *testing.T) {
		llm.Enqueue(fakellm.Turn{Text: "Hello, alice."})
		tk := a2aOK[a2aOut](t, a2aBase, "send", map[string]any{"text": "Hi."}, "TOKEN="+sign(good("alice"))).task(t)
		if text, _ := a2aAnswerOf(t, tk); tk.Status.State != "TASK_STATE_COMPLETED" || text != "Hello, alice." {
			t.Errorf("send with a valid token: %s, answer %q", tk.Status.State, text)
		}
		if e := a2aFails(t, a2aBase, "send", map[string]any{"text": "Hi."}, "TOKEN="+with("aud", "http://other.example.com/")); !strings.Contains(e.Message, "401") {
			t.Errorf("send with a token for another resource: %+v, want HTTP 401", e)
		}
		// The task is alice's: bob, with a valid token of his own, can neither read nor list it.
		rpc := func(subject, method string, params string) string {
			_, body := authRequest(t, a2aBase+"/", sign(good(subject)), `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`,
				map[string]string{"A2A-Version": "1.0"})
			return body
		}
		get := `{"id":"` + tk.ID + `"}`
		if body := rpc("bob", "GetTask", get); !strings.Contains(body, `"code":-32001`) {
			t.Errorf("bob's GetTask of alice's task: %s", body)
		}
		if body := rpc("bob", "ListTasks", `{}`); !strings.Contains(body, `"totalSize":0`) || strings.Contains(body, tk.ID) {
			t.Errorf("bob's ListTasks: %s", body)
		}
		if body := rpc("alice", "GetTask", get); !strings.Contains(body, tk.ID) || strings.Contains(body, `"error"`) {
			t.Errorf("alice's GetTask: %s", body)
		}
	})

	t.Run("conversations belong to their subject", func(t *testing.T) {
		llm.Enqueue(fakellm.Turn{Text: "Noted, alice."}, fakellm.Turn{Text: "You asked me to remember plum."})
		as := func(sub string, args ...string) clientOutput {
			return tsClient(t, true, append([]string{"--url", audience, "--header", "Authorization: Bearer " + sign(good(sub)),
				"--action", "ask", "--tool", "ask_guarded"}, args...)...)
		}
		first := as("alice", "--prompt", "Remember plum.")
		id := first.Calls[0].Result.StructuredContent.ConversationID
		if !strings.Contains(id, "@") {
			t.Fatalf("alice's conversation id %q does not say whose it is", id)
		}
		bob := as("bob", "--conversation", id, "--prompt", "What did alice ask you?")
		if res := bob.Calls[0].Result; !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "unknown conversation id") {
			t.Errorf("bob continuing alice's conversation: %+v", res)
		}
		again := as("alice", "--conversation", id, "--prompt", "What did I ask you?")
		if got := again.Calls[0].Result.StructuredContent; got == nil || got.ConversationID != id || !strings.Contains(got.Answer, "plum") {
			t.Errorf("alice's follow-up: %+v", got)
		}
		if prompt, _ := json.Marshal(llm.LastRequest().Messages); !strings.Contains(string(prompt), "Remember plum.") {
			t.Errorf("alice's follow-up did not read her conversation: %s", prompt)
		}
	})

	if llm.RequestCount() != 3 || llm.Pending() != 0 {
		t.Errorf("%d model requests, %d turns unused: only the task with a valid token and alice's two calls may run", llm.RequestCount(), llm.Pending())
	}
	log := stderr.String()
	for _, tok := range tokens {
		if strings.Contains(log, tok) || strings.Contains(log, tok[strings.LastIndex(tok, ".")+1:]) {
			t.Errorf("a token is in the debug log:\n%s", log)
			break
		}
	}
	if !strings.Contains(log, "refused a bearer token") {
		t.Errorf("the log does not say why tokens were refused:\n%s", log)
	}
}

// TestCheckServeOAuth: `agenthost check` reads the issuer's metadata and keys as `serve` will, and fails when it
// cannot.
func TestCheckServeOAuth(t *testing.T) {
	is := jwtissuer.New()
	t.Cleanup(is.Close)
	dir := t.TempDir()
	down := jwtissuer.New()
	down.Close()
	for _, tt := range []struct {
		name, issuer, jwks string
		code               int
		want               []string
	}{
		{"discovered", is.Issuer, "", 0, []string{is.Issuer + "/.well-known/oauth-authorization-server  1     ok"}},
		{"issuer down", down.Issuer, "", 1, []string{"no metadata for the issuer " + down.Issuer, "set jwks_url to skip discovery"}},
		{"keys down", is.Issuer, down.JWKSURL(), 1, []string{"  0     no keys", "no signing key could be fetched from the issuer " + is.Issuer}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			jwks := ""
			if tt.jwks != "" {
				jwks = fmt.Sprintf("jwks_url = %q\n", tt.jwks)
			}
			writeFile(t, dir, "agent.toml", fmt.Sprintf("[model]\nprovider = \"test\"\n\n[serve.oauth]\nissuer = %q\naudience = \"https://agent.example.com/mcp\"\n%s",
				tt.issuer, jwks))
			r := agenthost(t, dir, "", nil, "check")
			if r.code != tt.code || !strings.Contains(r.stdout, "SERVE OAUTH ISSUER") {
				t.Fatalf("check: exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("check output lacks %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
		})
	}
}
