// Package deps checks that imports point the way the design says: the core (host, llm, config) depends on almost
// nothing, no product package links test support or the load tools, only the composition root links the
// OpenTelemetry SDK, only the MCP edges link the MCP SDK, and the binary links nothing that makes it fat. Its test
// reads the module's import graph with `go list -deps` and fails naming each import that breaks a rule.
package deps

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the module path the rules speak of.
const Module = "github.com/agenthost/agenthost"

// Rule constrains what one package links: every package in its transitive imports that is neither in the standard
// library nor its own must match one of Allowed (a package path, or a prefix ending in "/..."). A nil Allowed is
// not a rule of this kind.
type Rule struct {
	Package string
	Allowed []string
	Why     string
}

// Rules are the design's rules that hold for single packages.
var Rules = []Rule{
	{Package: Module + "/host", Allowed: []string{Module + "/host/...", Module + "/llm", "github.com/kljensen/snowball/..."},
		Why: "host is the core: it imports llm, the standard library and (for tool search) the Snowball stemmer only"},
	{Package: Module + "/llm", Allowed: []string{},
		Why: "llm is a leaf: model types and the Model interface, no project package"},
	{Package: Module + "/config", Allowed: []string{"github.com/BurntSushi/toml/..."},
		Why: "config is the agent.toml schema: it imports only the TOML decoder"},
	{Package: Module + "/runlog", Allowed: []string{Module + "/host/...", Module + "/llm", "github.com/kljensen/snowball/..."},
		Why: "runlog is fed by host's observer: it imports host, llm and the standard library only (host's own imports aside)"},
}

// Support is what no product package may link: test support and the load and benchmark tools.
var Support = []string{Module + "/internal/testkit/...", Module + "/internal/bench/..."}

// Confinement keeps a set of packages to a few of the module's: a package of the module outside Owners that links
// one of Linked (a package path, or a prefix ending in "/...") breaks it.
type Confinement struct {
	Linked []string
	Owners []string
	Why    string
}

// root is the composition root, which builds everything, with the load tools and the test support, which stand in
// for it.
var root = []string{Module + "/cmd/agenthost", Module + "/internal/wiring", Module + "/internal/bench/...",
	Module + "/internal/testkit/..."}

// Confinements are the design's rules of what only some packages may link.
var Confinements = []Confinement{
	{Linked: []string{"go.opentelemetry.io/otel/sdk/...", "go.opentelemetry.io/otel/exporters/...",
		"google.golang.org/grpc/..."},
		Owners: append([]string{Module + "/telemetry/otlp"}, root...),
		Why: "the edges take OpenTelemetry's API; the SDK, the OTLP exporters and gRPC are telemetry/otlp's, " +
			"for the composition root"},
	{Linked: []string{"github.com/modelcontextprotocol/go-sdk/..."},
		Owners: append([]string{Module + "/mcpclients/...", Module + "/mcpserver/...", Module + "/mcpauth/...",
			Module + "/jwtauth/...", Module + "/telemetry/mcptrace"}, root...),
		Why: "only the MCP edges link the MCP SDK"},
	{Linked: []string{"modernc.org/quickjs/...", "modernc.org/libquickjs/..."},
		Owners: append([]string{Module + "/codemode/..."}, root...),
		Why:    "the JavaScript engine is code mode's sandbox: only codemode runs scripts"},
}

// Binary is the package whose build is the shipped binary.
const Binary = Module + "/cmd/agenthost"

// Unlinked are the packages the binary must not link at all, with the reason. Their code is not needed and costs far
// more than its size: a call of a method by a computed name (reflect.Value.MethodByName, as in text/template and
// protobuf's descriptor printing) makes the linker keep every exported method of every type the binary has, and a
// package that registers its types at initialisation keeps them all in, and resident.
var Unlinked = []Confinement{
	{Linked: []string{"google.golang.org/protobuf/...", "google.golang.org/grpc/...", "go.opentelemetry.io/proto/...",
		"go.opentelemetry.io/otel/exporters/..."},
		Why: "OTLP is encoded and sent by telemetry/otlp itself: protobuf's reflection keeps every exported method in the binary"},
	{Linked: []string{"text/template/...", "html/template"},
		Why: "templates call methods by name, which keeps every exported method in the binary"},
	{Linked: []string{"github.com/openai/openai-go/..."},
		Why: "llm/openai speaks the API with net/http: the SDK registers every type of every endpoint at start-up (26 MB of binary, 9 MB resident)"},
}

// Package is one package of the graph: its path, whether it is in the standard library, and every package it links
// (its transitive imports).
type Package struct {
	Path     string
	Standard bool
	Deps     []string
}

// Check returns every import in pkgs that breaks Rules, Support, Confinements or Unlinked, one line each; none means
// the layout holds.
// standard reports whether a path is in the standard library.
func Check(pkgs []Package, standard func(string) bool) []string {
	var broken []string
	for _, p := range pkgs {
		if p.Standard {
			continue
		}
		for _, r := range Rules {
			if p.Path != r.Package {
				continue
			}
			for _, d := range p.Deps {
				if standard(d) || matches(d, r.Allowed) {
					continue
				}
				broken = append(broken, fmt.Sprintf("%s imports %s (%s)", p.Path, d, r.Why))
			}
		}
		if !strings.HasPrefix(p.Path, Module) {
			continue
		}
		for _, c := range Confinements {
			if matches(p.Path, c.Owners) {
				continue
			}
			for _, d := range p.Deps {
				if matches(d, c.Linked) {
					broken = append(broken, fmt.Sprintf("%s imports %s (%s)", p.Path, d, c.Why))
				}
			}
		}
		if p.Path == Binary {
			for _, u := range Unlinked {
				for _, d := range p.Deps {
					if matches(d, u.Linked) {
						broken = append(broken, fmt.Sprintf("%s links %s (%s)", p.Path, d, u.Why))
					}
				}
			}
		}
		if matches(p.Path, Support) {
			continue
		}
		for _, d := range p.Deps {
			if matches(d, Support) {
				broken = append(broken, fmt.Sprintf("%s imports %s (no product package links test support or the load tools)", p.Path, d))
			}
		}
	}
	slices.Sort(broken)
	return broken
}

// matches reports whether path is one of patterns: a path, or a prefix followed by "/...", which matches the prefix
// itself too.
func matches(path string, patterns []string) bool {
	for _, pat := range patterns {
		if prefix, ok := strings.CutSuffix(pat, "/..."); ok {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return true
			}
		} else if path == pat {
			return true
		}
	}
	return false
}
