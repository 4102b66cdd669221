package mcpauth

import (
	"errors"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/internal/origin"
)

// RoundTripper authorizes the requests of a transport that takes no OAuth handler (the legacy HTTP+SSE one) as the
// SDK's streamable transport does: each request to the server carries the handler's token, and a request answered
// 401 or 403 is sent again once after the handler's Authorize succeeds. A request to another origin than URL's (a
// redirect's, or a message endpoint the server named elsewhere) is sent as it is: no token, no authorization.
type RoundTripper struct {
	Handler auth.OAuthHandler
	// URL is the server's URL: its origin (scheme, host and port) is the only one the token goes to. An empty or
	// unusable URL sends the token nowhere. It is read at the first request: set it before.
	URL string
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	parse  sync.Once
	origin origin.Origin // URL's
	valid  bool          // URL has an origin; false sends the token nowhere
}

// tokenOrigin returns URL's origin, parsed once, and whether it has one.
func (t *RoundTripper) tokenOrigin() (origin.Origin, bool) {
	t.parse.Do(func() {
		o, err := origin.Parse(t.URL)
		t.origin, t.valid = o, err == nil
	})
	return t.origin, t.valid
}

func (t *RoundTripper) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// RoundTrip implements http.RoundTripper.
func (t *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if o, ok := t.tokenOrigin(); !ok || origin.Of(req.URL) != o {
		return t.base().RoundTrip(req)
	}
	first, err := t.authorized(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.base().RoundTrip(first)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // the body cannot be sent again
	}
	if err := t.Handler.Authorize(req.Context(), first, resp); err != nil {
		return nil, err
	}
	again, err := t.authorized(req)
	if err != nil {
		return nil, err
	}
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.base().RoundTrip(again)
}

// authorized returns a copy of req with the handler's token, if it has one.
func (t *RoundTripper) authorized(req *http.Request) (*http.Request, error) {
	ts, err := t.Handler.TokenSource(req.Context())
	if err != nil || ts == nil {
		return req, err
	}
	tok, err := ts.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return req, nil // the refresh token is dead: the server's 401 asks for a login
		}
		return nil, err
	}
	out := req.Clone(req.Context())
	if tok != nil && tok.AccessToken != "" {
		out.Header.Set("Authorization", tok.Type()+" "+tok.AccessToken)
	}
	return out, nil
}
