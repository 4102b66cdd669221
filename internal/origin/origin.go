// Package origin keeps the credentials agenthost sends as a client with the origin they were configured for. The
// headers configured for an MCP server or an A2A peer (an API key, a bearer token) and the OAuth tokens of a server
// go only to requests whose origin, scheme, host and port, is the configured URL's: Transport adds them there and
// removes them, and any Authorization, Cookie or Referer header, from requests to any other origin; CheckRedirect
// refuses a redirect that leaves the origin of the request redirected.
//
// net/http alone is not enough: its client copies custom headers to any redirect target, keeps Authorization and
// Cookie when only the port or the scheme changes or the target is a subdomain, and sets Referer to the URL
// redirected from, query included.
//
// It imports only the standard library.
package origin

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Origin is a URL's scheme, host and port, as RFC 6454 compares them: lower-case, an IP address in its usual form,
// the port the scheme implies when the URL has none. The zero Origin is no origin: no URL has it.
type Origin struct {
	scheme, host, port string
}

// Of returns the origin of u.
func Of(u *url.URL) Origin {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
	}
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	return Origin{scheme: scheme, host: host, port: port}
}

// Parse returns the origin of an absolute URL with a host name or an IP address.
func Parse(raw string) (Origin, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Origin{}, err
	}
	h := u.Hostname()
	if _, err := netip.ParseAddr(h); u.Scheme == "" || h == "" || strings.Contains(h, ":") && err != nil {
		return Origin{}, fmt.Errorf("%q is not an absolute URL with a host", raw)
	}
	return Of(u), nil
}

// String is the origin as scheme://host:port.
func (o Origin) String() string {
	if o == (Origin{}) {
		return "no origin"
	}
	host := o.host
	if strings.Contains(host, ":") {
		host = "[" + strings.Replace(host, "%", "%25", 1) + "]" // a zone's % is escaped in a URL
	}
	return o.scheme + "://" + host + ":" + o.port
}

// privateHeaders are removed from every request to another origin, whoever set them: the SDK's OAuth bearer token,
// say, or the Referer net/http sets on a redirect, which may hold a secret in its query.
var privateHeaders = []string{"Authorization", "Cookie", "Referer"}

// Transport adds Header to the requests to Origin and sends every request through Base. A request to another
// origin carries none of Header's names, nor Authorization, Cookie or Referer. It is safe for concurrent use if
// Base is.
type Transport struct {
	Origin Origin
	// Header is added to the requests to Origin, replacing what they had under the same names.
	Header map[string]string
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if Of(req.URL) == t.Origin {
		if len(t.Header) > 0 {
			req = req.Clone(req.Context()) // a RoundTripper must not change its request
			for k, v := range t.Header {
				req.Header.Set(k, v)
			}
		}
		return base.RoundTrip(req)
	}
	if carries(req.Header, t.Header) {
		req = req.Clone(req.Context())
		for k := range t.Header {
			req.Header.Del(k)
		}
		for _, k := range privateHeaders {
			req.Header.Del(k)
		}
	}
	return base.RoundTrip(req)
}

// carries reports whether h has one of configured's names or a private header.
func carries(h http.Header, configured map[string]string) bool {
	for k := range configured {
		if _, ok := h[http.CanonicalHeaderKey(k)]; ok {
			return true
		}
	}
	for _, k := range privateHeaders {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// maxRedirects is net/http's own limit.
const maxRedirects = 10

// ErrCrossOrigin is the error of a redirect refused by CheckRedirect, wrapped with the target's origin.
var ErrCrossOrigin = errors.New("redirect to another origin refused")

// CheckRedirect returns an http.Client CheckRedirect that follows redirects within the origin of the first request,
// at most 10 as net/http does, and refuses any that leave it. That origin is o, where the credentials go, unless the
// server named another for a request (an SSE message endpoint, an A2A interface elsewhere): Transport sends no
// credentials there, so redirects within that other origin are followed as well, but not one that leads from it to
// o or anywhere else, which would let an origin without the credentials steer a request that carries them.
func CheckRedirect(o Origin) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := o
		if len(via) > 0 {
			from = Of(via[0].URL)
		}
		if to := Of(req.URL); to != from {
			return fmt.Errorf("%w: %s redirected to %s", ErrCrossOrigin, from, to)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
}

// Client returns a copy of base (nil means a zero http.Client) whose requests carry header only to o and whose
// redirects stay within o. base's Transport is kept under the new one; its CheckRedirect is replaced.
func Client(base *http.Client, o Origin, header map[string]string) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	c.Transport = &Transport{Origin: o, Header: header, Base: c.Transport}
	c.CheckRedirect = CheckRedirect(o)
	return c
}
