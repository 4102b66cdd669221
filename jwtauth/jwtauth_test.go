package jwtauth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agenthost/agenthost/internal/testkit/testservers/jwtissuer"
	"github.com/agenthost/agenthost/jwtauth"
)

const audience = "https://agent.example.com/mcp"

// protected starts the issuer and a resource behind a verifier for it that requires the scope "agent:use". The
// resource answers with the token information it was handed.
func protected(t *testing.T, cfg jwtauth.Config) (*jwtissuer.Server, *jwtauth.Verifier, *httptest.Server) {
	t.Helper()
	is := jwtissuer.New()
	t.Cleanup(is.Close)
	if cfg.Issuer == "" {
		cfg.Issuer = is.Issuer
	}
	cfg.Audience = audience
	cfg.RequiredScopes = []string{"agent:use"}
	v, err := jwtauth.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	resource := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(auth.TokenInfoFromContext(r.Context()))
	}))
	mux := http.NewServeMux()
	for path, h := range v.Documents() {
		mux.Handle(path, h)
	}
	mux.Handle("/mcp", resource)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return is, v, srv
}

// call sends a request with token ("" for none) and returns the status, the challenge and the body.
func call(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
}

// challenge parses a WWW-Authenticate header as go-sdk's client does and returns the Bearer challenge's parameters.
func challenge(t *testing.T, header string) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate([]string{header})
	if err != nil || len(cs) != 1 || !strings.EqualFold(cs[0].Scheme, "bearer") {
		t.Fatalf("challenge %q: %v %+v", header, err, cs)
	}
	return cs[0].Params
}

func TestVerifier(t *testing.T) {
	is, _, srv := protected(t, jwtauth.Config{})
	url := srv.URL + "/mcp"
	good := func() jwt.MapClaims { return is.Claims("alice", audience, []string{"agent:use", "other"}, time.Hour) }
	with := func(k string, v any) string {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return is.Sign(c)
	}

	t.Run("valid", func(t *testing.T) {
		code, _, body := call(t, url, is.Sign(good()))
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		var info auth.TokenInfo
		if err := json.Unmarshal([]byte(body), &info); err != nil {
			t.Fatal(err)
		}
		if info.UserID != "alice" || !slices.Equal(info.Scopes, []string{"agent:use", "other"}) || info.Extra["client_id"] != "alice" ||
			time.Until(info.Expiration) < 50*time.Minute {
			t.Errorf("token info %+v", info)
		}
	})
	t.Run("scp list", func(t *testing.T) {
		c := good()
		delete(c, "scope")
		c["scp"] = []string{"agent:use"}
		if code, _, body := call(t, url, is.Sign(c)); code != http.StatusOK {
			t.Errorf("status %d: %s", code, body)
		}
	})
	t.Run("audience with a trailing slash", func(t *testing.T) {
		if code, _, body := call(t, url, with("aud", []string{"other", audience + "/"})); code != http.StatusOK {
			t.Errorf("status %d: %s", code, body)
		}
	})

	t.Run("no token", func(t *testing.T) {
		code, header, _ := call(t, url, "")
		p := challenge(t, header)
		if code != http.StatusUnauthorized || p["resource_metadata"] != "https://agent.example.com/.well-known/oauth-protected-resource/mcp" ||
			p["scope"] != "agent:use" || p["error"] != "" {
			t.Errorf("status %d, challenge %q", code, header)
		}
	})

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	header, payload, _ := strings.Cut(is.Sign(good()), ".")
	payload, _, _ = strings.Cut(payload, ".")
	claims, _ := base64.RawURLEncoding.DecodeString(payload)
	tampered := strings.Replace(string(claims), `"sub":"alice"`, `"sub":"admin"`, 1)
	if tampered == string(claims) {
		t.Fatalf("claims %s have no sub to tamper with", claims)
	}
	sig := is.Sign(good())[strings.LastIndex(is.Sign(good()), ".")+1:]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + "."
	hmac := jwt.NewWithClaims(jwt.SigningMethodHS256, good())
	hmac.Header["kid"] = is.CurrentKID()
	hs256, _ := hmac.SignedString([]byte("a secret anyone could guess"))

	refused := []struct {
		name, token, reason string
	}{
		{"expired", is.Sign(is.Claims("alice", audience, []string{"agent:use"}, -time.Hour)), "expired"},
		{"wrong audience", with("aud", "https://other.example.com/mcp"), "not for this resource"},
		{"no audience", with("aud", nil), "not for this resource"},
		{"wrong issuer", with("iss", "https://evil.example.com"), "another issuer"},
		{"no expiry", with("exp", nil), "no expiry"},
		{"not yet valid", with("nbf", time.Now().Add(time.Hour).Unix()), "not valid yet"},
		{"no subject", with("sub", nil), "no subject"},
		{"unsigned", none, "algorithm is not accepted"},
		{"tampered", header + "." + base64.RawURLEncoding.EncodeToString([]byte(tampered)) + "." + sig, "signature is not valid"},
		{"foreign key", jwtissuer.SignWith(is.CurrentKID(), other, good()), "signature is not valid"},
		{"hmac", hs256, "algorithm is not accepted"},
		{"unknown key", jwtissuer.SignWith("no-such-key", other, good()), "not signed by a key of the issuer"},
		{"garbage", "not-a-jwt", "not a JWT"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			code, header, body := call(t, url, tt.token)
			p := challenge(t, header)
			if code != http.StatusUnauthorized || p["error"] != "invalid_token" || !strings.Contains(p["error_description"], tt.reason) ||
				p["resource_metadata"] == "" || !strings.Contains(body, tt.reason) {
				t.Errorf("status %d, challenge %q, body %q; want 401 invalid_token with %q", code, header, body, tt.reason)
			}
		})
	}

	t.Run("insufficient scope", func(t *testing.T) {
		code, header, body := call(t, url, is.Sign(is.Claims("alice", audience, []string{"other"}, time.Hour)))
		p := challenge(t, header)
		if code != http.StatusForbidden || p["error"] != "insufficient_scope" || p["scope"] != "agent:use" || !strings.Contains(body, "agent:use") {
			t.Errorf("status %d, challenge %q, body %q", code, header, body)
		}
	})

	t.Run("metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			var md oauthex.ProtectedResourceMetadata
			err = json.NewDecoder(resp.Body).Decode(&md)
			resp.Body.Close()
			if err != nil || md.Resource != audience || !slices.Equal(md.AuthorizationServers, []string{is.Issuer}) ||
				!slices.Equal(md.ScopesSupported, []string{"agent:use"}) || !slices.Equal(md.BearerMethodsSupported, []string{"header"}) {
				t.Errorf("%s: %v %+v", path, err, md)
			}
		}
	})
}

// TestKeyRotation: a token signed with a key the verifier has not seen makes it fetch the keys again, once; a burst
// of tokens naming unknown keys does not make it fetch them for each.
func TestKeyRotation(t *testing.T) {
	is, _, srv := protected(t, jwtauth.Config{})
	url := srv.URL + "/mcp"
	token := func() string { return is.Sign(is.Claims("bob", audience, []string{"agent:use"}, time.Hour)) }
	if code, _, body := call(t, url, token()); code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	before := is.JWKSFetches()
	is.RotateKey()
	if code, _, body := call(t, url, token()); code != http.StatusOK {
		t.Fatalf("after the rotation: status %d: %s", code, body)
	}
	if got := is.JWKSFetches(); got != before+1 {
		t.Errorf("the keys were fetched %d times for the new key, want once", got-before)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for i := range 5 {
		forged := jwtissuer.SignWith("unknown-"+string(rune('a'+i)), other, is.Claims("bob", audience, []string{"agent:use"}, time.Hour))
		if code, _, _ := call(t, url, forged); code != http.StatusUnauthorized {
			t.Errorf("a token with an unknown key: status %d", code)
		}
	}
	if got := is.JWKSFetches(); got != before+1 {
		t.Errorf("5 tokens with unknown keys right after a refresh made %d more fetches, want none", got-before-1)
	}
}

// TestDiscovery: the keys are found through the issuer's metadata; an issuer without metadata needs jwks_url.
func TestDiscovery(t *testing.T) {
	is := jwtissuer.New()
	defer is.Close()
	v, err := jwtauth.New(t.Context(), jwtauth.Config{Issuer: is.Issuer, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	meta, metaURL := v.Metadata()
	if meta == nil || meta.TokenEndpoint != is.Issuer+"/token" || metaURL != is.Issuer+"/.well-known/oauth-authorization-server" {
		t.Errorf("metadata %+v from %q", meta, metaURL)
	}
	if _, err := v.Verify(t.Context(), is.Sign(is.Claims("carol", audience, nil, time.Hour))); err != nil {
		t.Errorf("a token verified with discovered keys: %v", err)
	}

	bare := httptest.NewServer(http.NotFoundHandler()) // an issuer that publishes no metadata
	defer bare.Close()
	if _, err := jwtauth.New(t.Context(), jwtauth.Config{Issuer: bare.URL, Audience: audience}); err == nil ||
		!strings.Contains(err.Error(), "no metadata for the issuer "+bare.URL) || !strings.Contains(err.Error(), "jwks_url") {
		t.Errorf("an issuer without metadata and no jwks_url: %v", err)
	}
	v2, err := jwtauth.New(t.Context(), jwtauth.Config{Issuer: bare.URL, Audience: audience, JWKSURL: is.JWKSURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if meta, _ := v2.Metadata(); meta != nil {
		t.Errorf("metadata %+v from an issuer that has none", meta)
	}
	c := is.Claims("carol", audience, nil, time.Hour)
	c["iss"] = bare.URL
	if _, err := v2.Verify(t.Context(), is.Sign(c)); err != nil {
		t.Errorf("a token verified with the keys at jwks_url: %v", err)
	}

	// The keys' server is down at start-up: tokens are refused until it is back.
	down := jwtissuer.New()
	jwks := down.JWKSURL()
	down.Close()
	v3, err := jwtauth.New(t.Context(), jwtauth.Config{Issuer: is.Issuer, Audience: audience, JWKSURL: jwks})
	if err != nil {
		t.Fatalf("start-up with the keys unreachable: %v", err)
	}
	defer v3.Close()
	if _, err := v3.Verify(t.Context(), is.Sign(is.Claims("carol", audience, nil, time.Hour))); err == nil {
		t.Error("a token was accepted without the issuer's keys")
	}
}

// slowTransport delays every request, as an issuer across a network does.
type slowTransport struct{ delay time.Duration }

func (s slowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(s.delay)
	return http.DefaultTransport.RoundTrip(r)
}

// TestKeyRotationSlowIssuer: the keys are fetched again for a rotated key even when the issuer takes its time to
// answer (here 50 ms a request).
func TestKeyRotationSlowIssuer(t *testing.T) {
	is, _, srv := protected(t, jwtauth.Config{HTTPClient: &http.Client{Transport: slowTransport{50 * time.Millisecond}}})
	url := srv.URL + "/mcp"
	is.RotateKey()
	if code, _, body := call(t, url, is.Sign(is.Claims("bob", audience, []string{"agent:use"}, time.Hour))); code != http.StatusOK {
		t.Fatalf("after the rotation: status %d: %s", code, body)
	}
}
