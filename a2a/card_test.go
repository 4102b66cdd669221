package a2a

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

const testCardURL = "https://peer.example:8443/agents/one/.well-known/agent-card.json"

func TestCardChoose(t *testing.T) {
	tests := []struct {
		name    string
		card    string
		pin     version
		want    endpoint
		wantErr string // a part of the error; "" for none
	}{
		{
			name: "v1.0: first JSON-RPC 1.x, gRPC skipped, tenant kept, relative URL resolved",
			card: `{"name":"p","supportedInterfaces":[
				{"url":"grpc://peer.example:9000","protocolBinding":"GRPC","protocolVersion":"1.0"},
				{"url":"https://peer.example/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
				{"url":"/a2a/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3"},
				{"url":"../rpc","protocolBinding":"jsonrpc","protocolVersion":"1.0","tenant":"acme"},
				{"url":"https://other.example/","protocolBinding":"JSONRPC","protocolVersion":"1.1"}],
				"capabilities":{"streaming":true}}`,
			want: endpoint{URL: "https://peer.example:8443/agents/one/rpc", Version: v10, Tenant: "acme", Streaming: true},
		},
		{
			name: "v1.0: absolute URL used as it is, streaming off",
			card: `{"name":"p","supportedInterfaces":[{"url":"http://10.0.0.1:80/x","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":false}}`,
			want: endpoint{URL: "http://10.0.0.1:80/x", Version: v10},
		},
		{
			name: "v1.0: a patch number on the card is read",
			card: `{"name":"p","supportedInterfaces":[{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":"1.0.1"}]}`,
			want: endpoint{URL: "http://a/", Version: v10},
		},
		{
			name: "a card with only 0.3 interfaces speaks v0.3",
			card: `{"name":"p","supportedInterfaces":[
				{"url":"http://a/g","protocolBinding":"GRPC","protocolVersion":"1.0"},
				{"url":"http://a/old","protocolBinding":"JSONRPC","protocolVersion":"0.3","tenant":"t"}]}`,
			want: endpoint{URL: "http://a/old", Version: v03, Tenant: "t"},
		},
		{
			name:    "pin 1.0 on a 0.3-only card",
			card:    `{"name":"Old Peer","supportedInterfaces":[{"url":"http://a/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
			pin:     v10,
			wantErr: `"Old Peer" offers no JSON-RPC interface of version 1.0`,
		},
		{
			name:    "pin 1.0 on a v0.3 card",
			card:    `{"name":"Old Peer","url":"http://a/old"}`,
			pin:     v10,
			wantErr: `"Old Peer"`,
		},
		{
			name: "pin 0.3 on a card with both",
			card: `{"name":"p","supportedInterfaces":[
				{"url":"http://a/new","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
				{"url":"http://a/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
			pin:  v03,
			want: endpoint{URL: "http://a/old", Version: v03},
		},
		{
			name: "pin 1.0 on a card with both",
			card: `{"name":"p","supportedInterfaces":[
				{"url":"http://a/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},
				{"url":"http://a/new","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			pin:  v10,
			want: endpoint{URL: "http://a/new", Version: v10},
		},
		{
			name:    "only gRPC",
			card:    `{"name":"p","supportedInterfaces":[{"url":"http://a/","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`,
			wantErr: "gRPC and HTTP+JSON are not supported",
		},
		{
			name:    "unknown versions only",
			card:    `{"name":"p","supportedInterfaces":[{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":"2.0"},{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":""}]}`,
			wantErr: "offers no",
		},
		{
			name: "hybrid card: supportedInterfaces without JSON-RPC, then url",
			card: `{"name":"p","supportedInterfaces":[{"url":"http://a/g","protocolBinding":"GRPC","protocolVersion":"1.0"}],"url":"http://a/rpc","preferredTransport":"JSONRPC"}`,
			want: endpoint{URL: "http://a/rpc", Version: v03},
		},
		{
			name: "v0.3: url with preferredTransport JSONRPC",
			card: `{"name":"p","url":"http://a/rpc","preferredTransport":"JSONRPC","protocolVersion":"0.3.0","capabilities":{"streaming":true}}`,
			want: endpoint{URL: "http://a/rpc", Version: v03, Streaming: true},
		},
		{
			name: "v0.3: url without preferredTransport",
			card: `{"name":"p","url":"rpc"}`,
			want: endpoint{URL: "https://peer.example:8443/agents/one/.well-known/rpc", Version: v03},
		},
		{
			name: "v0.3: preferredTransport GRPC with a JSON-RPC additional interface",
			card: `{"name":"p","url":"http://a:50051","preferredTransport":"GRPC","additionalInterfaces":[
				{"url":"http://a:50051","transport":"GRPC"},{"url":"http://a/jsonrpc","transport":"JSONRPC"},{"url":"http://a/second","transport":"JSONRPC"}]}`,
			want: endpoint{URL: "http://a/jsonrpc", Version: v03},
		},
		{
			name:    "v0.3: preferredTransport GRPC and nothing else",
			card:    `{"name":"p","url":"http://a:50051","preferredTransport":"GRPC"}`,
			wantErr: `"p" offers no`,
		},
		{
			name:    "v0.3: pin 0.3 is fine",
			card:    `{"name":"p","url":"ftp://a/rpc"}`,
			pin:     v03,
			wantErr: "not an http or https URL",
		},
		{
			name:    "interface URL of another scheme",
			card:    `{"name":"p","supportedInterfaces":[{"url":"ws://a/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			wantErr: "not an http or https URL",
		},
		{
			name:    "interface URL without a host",
			card:    `{"name":"p","supportedInterfaces":[{"url":"http:rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			wantErr: "not an http or https URL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := decodeCard([]byte(tt.card))
			if err != nil {
				t.Fatalf("decodeCard: %v", err)
			}
			got, err := c.choose(testCardURL, tt.pin)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("choose: err = %v, want one with %q (endpoint %+v)", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("choose: %v", err)
			}
			if *got != tt.want {
				t.Errorf("endpoint = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestDecodeCardErrors(t *testing.T) {
	for _, tt := range []struct{ name, card, want string }{
		{"not JSON", `{"name":`, "agent card"},
		{"not an object", `[1]`, "agent card"},
		{"missing name", `{"supportedInterfaces":[{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, "name is missing"},
		{"blank name", `{"name":"  ","url":"http://a/"}`, "name is missing"},
		{"no interfaces", `{"name":"p","capabilities":{"streaming":true}}`, "neither supportedInterfaces"},
		{"empty interfaces", `{"name":"p","supportedInterfaces":[]}`, "neither supportedInterfaces"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCard([]byte(tt.card))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestDecodeCardFields(t *testing.T) {
	c, err := decodeCard([]byte(`{"name":"p","description":"d","version":"1.2","unknown":{"x":1},
		"supportedInterfaces":[{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
		"capabilities":{"streaming":true,"pushNotifications":false,"extendedAgentCard":true},
		"skills":[{"id":"s1","name":"Search","description":"Finds things.\nMore.","tags":["t"]},{"id":"s2","description":""}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Capabilities.Streaming == nil || !*c.Capabilities.Streaming || c.Capabilities.PushNotifications == nil || *c.Capabilities.PushNotifications {
		t.Errorf("capabilities = %+v", c.Capabilities)
	}
	if len(c.Skills) != 2 || c.Skills[0].ID != "s1" {
		t.Fatalf("skills = %+v", c.Skills)
	}
	if got, want := skillsText(c.Skills), "- Search: Finds things.\n- s2"; got != want {
		t.Errorf("skillsText = %q, want %q", got, want)
	}
	// No capabilities: no streaming.
	c, err = decodeCard([]byte(`{"name":"p","url":"http://a/"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ep, err := c.choose(testCardURL, version{}); err != nil || ep.Streaming {
		t.Errorf("endpoint = %+v, %v", ep, err)
	}
}

func TestCardURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/.well-known/agent-card.json"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/.well-known/agent-card.json"},
		{"  https://peer.example  ", "https://peer.example/.well-known/agent-card.json"},
		{"https://peer.example/agents/one", "https://peer.example/agents/one/.well-known/agent-card.json"},
		{"https://peer.example/agents/one/", "https://peer.example/agents/one/.well-known/agent-card.json"},
		{"https://peer.example/agents/one?k=v", "https://peer.example/agents/one/.well-known/agent-card.json?k=v"},
		{"https://peer.example/cards/one.json", "https://peer.example/cards/one.json"},
		{"http://peer.example/.well-known/agent.json", "http://peer.example/.well-known/agent.json"},
		{"http://peer.example/a%2Fb", "http://peer.example/a/b/.well-known/agent-card.json"},
	} {
		got, err := cardURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("cardURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "peer.example:8080", "/agents/one", "ftp://peer.example/", "file:///etc/passwd", "http://", "http:/x", "://x", "http://a b/"} {
		if got, err := cardURL(in); err == nil {
			t.Errorf("cardURL(%q) = %q, want an error", in, got)
		}
	}
}

func FuzzCardDecode(f *testing.F) {
	for _, s := range []string{
		`{"name":"p","supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0","tenant":"t"}],"capabilities":{"streaming":true}}`,
		`{"name":"p","supportedInterfaces":[{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
		`{"name":"p","url":"http://a/","preferredTransport":"GRPC","additionalInterfaces":[{"url":"rpc","transport":"JSONRPC"}]}`,
		`{"name":"p","url":"http:x"}`,
		`{"name":"p","url":"//other.example/rpc"}`,
		`{"name":"p","supportedInterfaces":[{"url":"http://[::1]:80/","protocolBinding":"JSONRPC","protocolVersion":"1.0.0"}]}`,
		`{"name":"p","supportedInterfaces":[{"url":"%zz","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
		`{"name":"p","supportedInterfaces":null,"url":" https://a "}`,
		`{"name":1}`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCard(b)
		if err != nil {
			return
		}
		for _, pin := range []version{{}, v10, v03} {
			ep, err := c.choose(testCardURL, pin)
			if err != nil {
				continue
			}
			u, err := url.Parse(ep.URL)
			if err != nil {
				t.Fatalf("chosen URL %q does not parse: %v", ep.URL, err)
			}
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !u.IsAbs() {
				t.Fatalf("chosen URL %q is not an absolute http(s) URL", ep.URL)
			}
			if pin != (version{}) && ep.Version != pin {
				t.Fatalf("pinned %v, chose %v", pin, ep.Version)
			}
			if ep.Version != v10 && ep.Version != v03 {
				t.Fatalf("chose version %v", ep.Version)
			}
		}
	})
}

// TestCardSecurity: the schemes a card declares, in v1.0's shape (one OAuth flow per scheme) and v0.3's (OpenAPI).
func TestCardSecurity(t *testing.T) {
	oauth := &OAuthScheme{MetadataURL: "https://idp.example.com/.well-known/oauth-authorization-server",
		AuthorizationURL: "https://idp.example.com/authorize", TokenURL: "https://idp.example.com/token",
		ClientCredentials: true, Scopes: []string{"agent:use"}}
	tests := []struct {
		name   string
		opts   ServerOptions
		legacy bool
		want   string
	}{
		{"none", ServerOptions{}, false, `null null`},
		{"token", ServerOptions{Authenticated: true}, false,
			`{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}} [{"schemes":{"bearer":{"list":[]}}}]`},
		{"token v0.3", ServerOptions{Authenticated: true}, true, `{"bearer":{"scheme":"bearer","type":"http"}} [{"bearer":[]}]`},
		{"oauth", ServerOptions{OAuth: oauth, Authenticated: true}, false,
			`{"oauth2":{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"https://idp.example.com/authorize",` +
				`"pkceRequired":true,"scopes":{"agent:use":"required to use the agent"},"tokenUrl":"https://idp.example.com/token"}},` +
				`"oauth2MetadataUrl":"https://idp.example.com/.well-known/oauth-authorization-server"}},` +
				`"oauth2_client_credentials":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"scopes":{"agent:use":"required to use the agent"},` +
				`"tokenUrl":"https://idp.example.com/token"}},"oauth2MetadataUrl":"https://idp.example.com/.well-known/oauth-authorization-server"}}} ` +
				`[{"schemes":{"oauth2":{"list":["agent:use"]}}},{"schemes":{"oauth2_client_credentials":{"list":["agent:use"]}}}]`},
		{"oauth v0.3", ServerOptions{OAuth: oauth}, true,
			`{"oauth2":{"flows":{"authorizationCode":{"authorizationUrl":"https://idp.example.com/authorize","scopes":{"agent:use":"required to use the agent"},` +
				`"tokenUrl":"https://idp.example.com/token"},"clientCredentials":{"scopes":{"agent:use":"required to use the agent"},` +
				`"tokenUrl":"https://idp.example.com/token"}},"oauth2MetadataUrl":"https://idp.example.com/.well-known/oauth-authorization-server","type":"oauth2"}} ` +
				`[{"oauth2":["agent:use"]}]`},
		{"oauth without endpoints", ServerOptions{OAuth: &OAuthScheme{Scopes: []string{"x"}}}, false,
			`{"bearer":{"httpAuthSecurityScheme":{"bearerFormat":"JWT","scheme":"Bearer"}}} [{"schemes":{"bearer":{"list":[]}}}]`},
		{"oauth without flows v0.3", ServerOptions{OAuth: &OAuthScheme{TokenURL: "https://idp.example.com/token"}}, true,
			`{"bearer":{"bearerFormat":"JWT","scheme":"bearer","type":"http"}} [{"bearer":[]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schemes, reqs := security(tt.opts, tt.legacy)
			if got := string(mustJSON(schemes)) + " " + string(mustJSON(reqs)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestServedCardToolNames: the card, served without a token, names the agent's tools only when ListTools says so.
func TestServedCardToolNames(t *testing.T) {
	for _, list := range []bool{false, true} {
		tm := host.NewToolManager([]host.Toolset{toolList{&guardedTool{}, docTool{}}}, nil)
		_, url := serveOrchestrator(t, host.New(nil, tm, nil), &ServerOptions{Description: "Tests.", ListTools: list})
		resp, err := http.Get(url + cardPath[1:])
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		c, err := decodeCard(raw)
		if err != nil || len(c.Skills) != 1 {
			t.Fatalf("card %s: %v", raw, err)
		}
		named := strings.Contains(string(raw), "danger") || strings.Contains(string(raw), `"docs"`)
		if named != list {
			t.Errorf("ListTools %v: the card names the tools: %v\n%s", list, named, raw)
		}
		if want := "Tests."; !list && c.Skills[0].Description != want {
			t.Errorf("ListTools false: skill description %q, want %q", c.Skills[0].Description, want)
		}
	}
}
