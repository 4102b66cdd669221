package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// cardPath is where an agent publishes its card, under its origin.
const cardPath = "/.well-known/agent-card.json"

// agentCard is an agent card as read from a peer: the v1.0 fields and the v0.3 ones that v1.0 moved, so that one
// type reads both. Unknown fields are ignored.
type agentCard struct {
	Name                string           `json:"name"`
	Description         string           `json:"description"`
	Version             string           `json:"version"`
	SupportedInterfaces []agentInterface `json:"supportedInterfaces,omitempty"`
	Capabilities        struct {
		Streaming         *bool `json:"streaming,omitempty"`
		PushNotifications *bool `json:"pushNotifications,omitempty"`
	} `json:"capabilities"`
	Skills []agentSkill `json:"skills,omitempty"`

	// v0.3.
	URL                  string `json:"url,omitempty"`
	PreferredTransport   string `json:"preferredTransport,omitempty"`
	ProtocolVersion      string `json:"protocolVersion,omitempty"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces,omitempty"`
}

type agentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
}

type agentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// endpoint is the interface chosen on a card: where to send requests and in which version.
type endpoint struct {
	URL       string
	Version   version
	Tenant    string
	Streaming bool
}

// decodeCard reads a card. It needs a name and either supportedInterfaces (v1.0) or url (v0.3).
func decodeCard(b []byte) (*agentCard, error) {
	var c agentCard
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	if strings.TrimSpace(c.Name) == "" {
		return nil, errors.New("agent card: name is missing")
	}
	if len(c.SupportedInterfaces) == 0 && c.URL == "" {
		return nil, errors.New("agent card: it has neither supportedInterfaces (v1.0) nor url (v0.3)")
	}
	return &c, nil
}

// choose picks the interface to talk to, as A2A.md recommends: among the JSON-RPC entries of supportedInterfaces
// (in the card's order of preference) the first of major version 1, else the first of version 0.3; on a card
// without them (v0.3), url when its transport is JSON-RPC, else the first JSON-RPC additional interface. pin, when
// not zero, allows only that version. Relative URLs are resolved against the card's own URL.
func (c *agentCard) choose(cardURL string, pin version) (*endpoint, error) {
	streaming := c.Capabilities.Streaming != nil && *c.Capabilities.Streaming
	var found *endpoint
	if len(c.SupportedInterfaces) > 0 {
		var first1, first03 *agentInterface
		for i := range c.SupportedInterfaces {
			in := &c.SupportedInterfaces[i]
			if !strings.EqualFold(in.ProtocolBinding, "JSONRPC") {
				continue
			}
			v, err := parseVersion(in.ProtocolVersion)
			if err != nil || in.ProtocolVersion == "" {
				continue
			}
			switch {
			case v.major == 1 && first1 == nil:
				first1 = in
			case v == v03 && first03 == nil:
				first03 = in
			}
		}
		switch {
		case first1 != nil && pin != v03:
			found = &endpoint{URL: first1.URL, Version: v10, Tenant: first1.Tenant}
		case first03 != nil && pin != v10:
			found = &endpoint{URL: first03.URL, Version: v03, Tenant: first03.Tenant}
		}
	}
	if found == nil && c.URL != "" && pin != v10 {
		if c.PreferredTransport == "" || strings.EqualFold(c.PreferredTransport, "JSONRPC") {
			found = &endpoint{URL: c.URL, Version: v03}
		} else {
			for _, in := range c.AdditionalInterfaces {
				if strings.EqualFold(in.Transport, "JSONRPC") {
					found = &endpoint{URL: in.URL, Version: v03}
					break
				}
			}
		}
	}
	if found == nil {
		want := "JSON-RPC interface of version 1.x or 0.3"
		if pin != (version{}) {
			want = "JSON-RPC interface of version " + pin.String()
		}
		return nil, fmt.Errorf("agent card of %q offers no %s (gRPC and HTTP+JSON are not supported)", c.Name, want)
	}
	u, err := resolveURL(cardURL, found.URL)
	if err != nil {
		return nil, fmt.Errorf("agent card of %q: interface url: %w", c.Name, err)
	}
	found.URL, found.Streaming = u, streaming
	return found, nil
}

func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", err
	}
	u := b.ResolveReference(r)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http or https URL", ref)
	}
	return u.String(), nil
}

// cardURL returns the URL of the card of an agent configured by url: url itself when it names a JSON document,
// else the well-known path under it.
func cardURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("url %q is not an absolute http or https URL", raw)
	}
	if strings.HasSuffix(u.Path, ".json") {
		return u.String(), nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + cardPath
	u.RawPath = ""
	return u.String(), nil
}

// skillsText lists skills as "name: description" lines for a tool's description.
func skillsText(skills []agentSkill) string {
	var lines []string
	for _, s := range skills {
		name := s.Name
		if name == "" {
			name = s.ID
		}
		line := "- " + name
		if d := strings.TrimSpace(s.Description); d != "" {
			line += ": " + firstLine(d)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// serveCard serves the agent card: v1.0's to a request that asks for 1.x, and to one without A2A-Version (a v0.3
// client) the v0.3 fields as well, in the shape v0.3 reads (its security schemes are OpenAPI's).
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	v, err := parseVersion(r.Header.Get("A2A-Version"))
	legacy := err == nil && v.major == 0
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=60")
	w.Header().Set("Vary", "A2A-Version")
	_, _ = w.Write(mustJSON(s.card(r.Context(), legacy)))
}

// card builds the agent card. legacy adds the v0.3 fields for clients of that version.
func (s *Server) card(ctx context.Context, legacy bool) map[string]any {
	o := s.opts
	modes := []string{"text/plain", "application/json"}
	card := map[string]any{
		"name":        o.Name,
		"description": o.Description,
		"version":     o.Version,
		"supportedInterfaces": []agentInterface{
			{URL: o.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: o.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		},
		"capabilities":       map[string]any{"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
		"defaultInputModes":  modes,
		"defaultOutputModes": modes,
		"skills":             s.skills(ctx),
	}
	if schemes, requirements := security(o, legacy); schemes != nil {
		card["securitySchemes"] = schemes
		if legacy {
			card["security"] = requirements
		} else {
			card["securityRequirements"] = requirements
		}
	}
	if legacy {
		card["url"] = o.URL
		card["preferredTransport"] = "JSONRPC"
		card["protocolVersion"] = "0.3.0"
		card["capabilities"] = map[string]any{"streaming": true, "pushNotifications": false, "stateTransitionHistory": false}
		card["supportsAuthenticatedExtendedCard"] = false
	}
	return card
}

// security returns the card's security schemes and the requirements that name them, in v1.0's ProtoJSON shape or,
// for legacy, v0.3's OpenAPI one; nil when requests need no credentials. v1.0 holds one OAuth flow per scheme, so
// each flow offered is a scheme of its own, and any one of them satisfies the requirements.
func security(o ServerOptions, legacy bool) (schemes map[string]any, requirements []any) {
	switch {
	case o.OAuth != nil && o.OAuth.TokenURL != "" && (o.OAuth.AuthorizationURL != "" || o.OAuth.ClientCredentials):
		oa := o.OAuth
		scopes := map[string]string{}
		for _, s := range oa.Scopes {
			scopes[s] = "required to use the agent"
		}
		list := append([]string{}, oa.Scopes...)
		code := oa.AuthorizationURL != ""
		if legacy {
			flows := map[string]any{}
			if code {
				flows["authorizationCode"] = map[string]any{"authorizationUrl": oa.AuthorizationURL, "tokenUrl": oa.TokenURL, "scopes": scopes}
			}
			if oa.ClientCredentials {
				flows["clientCredentials"] = map[string]any{"tokenUrl": oa.TokenURL, "scopes": scopes}
			}
			scheme := map[string]any{"type": "oauth2", "flows": flows}
			if oa.MetadataURL != "" {
				scheme["oauth2MetadataUrl"] = oa.MetadataURL
			}
			return map[string]any{"oauth2": scheme}, []any{map[string][]string{"oauth2": list}}
		}
		schemes = map[string]any{}
		add := func(name, flow string, spec map[string]any) {
			scheme := map[string]any{"flows": map[string]any{flow: spec}}
			if oa.MetadataURL != "" {
				scheme["oauth2MetadataUrl"] = oa.MetadataURL
			}
			schemes[name] = map[string]any{"oauth2SecurityScheme": scheme}
			requirements = append(requirements, map[string]any{"schemes": map[string]any{name: map[string]any{"list": list}}})
		}
		if code {
			add("oauth2", "authorizationCode", map[string]any{"authorizationUrl": oa.AuthorizationURL, "tokenUrl": oa.TokenURL,
				"scopes": scopes, "pkceRequired": true})
		}
		if oa.ClientCredentials {
			add("oauth2_client_credentials", "clientCredentials", map[string]any{"tokenUrl": oa.TokenURL, "scopes": scopes})
		}
		return schemes, requirements
	case o.OAuth != nil: // the authorization server is unknown, or offers neither flow: a bearer JWT is all the card can say
		if legacy {
			return map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
				[]any{map[string][]string{"bearer": {}}}
		}
		return map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "bearerFormat": "JWT"}}},
			[]any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
	case o.Authenticated:
		if legacy {
			return map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}, []any{map[string][]string{"bearer": {}}}
		}
		return map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer"}}},
			[]any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
	}
	return nil, nil
}

// skills returns the configured skills, or one derived from the agent, naming the tools it has now when ListTools
// says so.
func (s *Server) skills(ctx context.Context) []agentSkill {
	if len(s.opts.Skills) > 0 {
		out := make([]agentSkill, len(s.opts.Skills))
		for i, sk := range s.opts.Skills {
			tags := sk.Tags
			if len(tags) == 0 {
				tags = []string{"agent"}
			}
			out[i] = agentSkill{ID: sk.ID, Name: sk.Name, Description: sk.Description, Tags: tags, Examples: sk.Examples}
		}
		return out
	}
	var names []string
	if s.opts.ListTools {
		tools, _ := s.orch.Tools().Tools(ctx)
		for _, t := range tools {
			if !t.Policy.Disabled {
				names = append(names, t.Spec.Name)
			}
		}
	}
	desc := s.opts.Description
	if len(names) > 0 {
		desc += " It can use: " + strings.Join(names, ", ") + "."
	}
	return []agentSkill{{ID: "ask", Name: s.opts.Name, Description: desc, Tags: append([]string{"agent"}, names...)}}
}
