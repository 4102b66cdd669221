package deps

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayout reads the module's import graph, as a plain `go build` or `go install` sees it (no build tags), and
// checks it against the rules.
func TestLayout(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f",
		`{{.ImportPath}} {{.Standard}} {{join .Deps " "}}`, Module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs, standard := parse(t, out)
	var checked []string
	for _, p := range pkgs {
		for _, r := range Rules {
			if p.Path == r.Package {
				checked = append(checked, p.Path)
			}
		}
	}
	if len(checked) != len(Rules) {
		t.Fatalf("go list named %d of the %d packages the rules are for (%v)", len(checked), len(Rules), checked)
	}
	// A confinement whose patterns name nothing the module links would hold whatever the imports were.
	for _, c := range Confinements {
		if !slices.ContainsFunc(pkgs, func(p Package) bool {
			return matches(p.Path, c.Owners) && slices.ContainsFunc(p.Deps, func(d string) bool { return matches(d, c.Linked) })
		}) {
			t.Errorf("no package of the module links %v: the confinement (%s) checks nothing", c.Linked, c.Why)
		}
	}
	for _, b := range Check(pkgs, standard) {
		t.Error(b)
	}
}

// TestCheckFindsBrokenRules: a graph that breaks each rule is reported, naming the import; one that keeps them is
// not.
func TestCheckFindsBrokenRules(t *testing.T) {
	std := func(p string) bool { return !strings.Contains(p, ".") }
	m := Module
	good := []Package{
		{Path: m + "/host", Deps: []string{"context", m + "/llm", m + "/host/internal/cite"}},
		{Path: m + "/llm", Deps: []string{"context"}},
		{Path: m + "/config", Deps: []string{"github.com/BurntSushi/toml", "github.com/BurntSushi/toml/internal"}},
		{Path: m + "/mcpclients", Deps: []string{m + "/host", "github.com/modelcontextprotocol/go-sdk/mcp"}},
		{Path: m + "/internal/bench/loadtest", Deps: []string{m + "/internal/testkit/fakellm", "go.opentelemetry.io/otel/sdk/trace"}},
		{Path: m + "/telemetry", Deps: []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/semconv/v1.41.0"}},
		{Path: m + "/telemetry/otlp", Deps: []string{m + "/telemetry", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/sdk/trace",
			"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc", "google.golang.org/grpc"}},
		{Path: m + "/telemetry/mcptrace", Deps: []string{m + "/telemetry", "github.com/modelcontextprotocol/go-sdk/mcp"}},
		{Path: m + "/a2a", Deps: []string{m + "/telemetry", "go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/metric"}},
		{Path: m + "/jwtauth", Deps: []string{"github.com/modelcontextprotocol/go-sdk/auth"}},
		{Path: m + "/internal/wiring", Deps: []string{m + "/telemetry/otlp", "google.golang.org/grpc", "github.com/modelcontextprotocol/go-sdk/mcp"}},
		{Path: m + "/cmd/agenthost", Deps: []string{"go.opentelemetry.io/otel/sdk/metric", "github.com/modelcontextprotocol/go-sdk/mcp",
			"text/tabwriter", "google.golang.org/protobuf_not"}},
		{Path: m + "/internal/testkit/otlpsink", Deps: []string{"google.golang.org/grpc", "google.golang.org/protobuf/proto"}},
		{Path: m + "/internal/testkit/browser", Deps: []string{"github.com/chromedp/chromedp", "github.com/chromedp/cdproto/runtime"}},
		{Path: "context", Standard: true},
	}
	if got := Check(good, std); len(got) != 0 {
		t.Errorf("a graph that keeps the rules was reported: %q", got)
	}
	bad := []Package{
		{Path: m + "/host", Deps: []string{m + "/llm", m + "/config", "github.com/modelcontextprotocol/go-sdk/mcp"}},
		{Path: m + "/llm", Deps: []string{m + "/host"}},
		{Path: m + "/config", Deps: []string{"github.com/BurntSushi/toml", "gopkg.in/yaml.v3"}},
		{Path: m + "/a2a", Deps: []string{m + "/internal/testkit/fakellm"}},
		{Path: m + "/cmd/agenthost", Deps: []string{m + "/internal/bench/procstat"}},
		{Path: m + "/durable", Deps: []string{m + "/telemetry", "go.opentelemetry.io/otel/sdk/trace", "google.golang.org/grpc/codes"}},
		{Path: m + "/mcpserver", Deps: []string{"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"}},
		{Path: m + "/telemetry", Deps: []string{"github.com/modelcontextprotocol/go-sdk/mcp"}},
		{Path: m + "/telemetry/mcptrace", Deps: []string{"go.opentelemetry.io/otel/sdk/metric"}},
		{Path: m + "/telemetry/otlp", Deps: []string{"github.com/modelcontextprotocol/go-sdk/jsonrpc"}},
		{Path: m + "/cmd/agenthost", Deps: []string{"google.golang.org/protobuf/internal/descfmt", "html/template",
			"text/template/parse", "github.com/openai/openai-go/v3", "github.com/chromedp/cdproto/cdp"}},
		{Path: m + "/internal/testkit/peers", Deps: []string{"github.com/chromedp/chromedp"}},
	}
	got := Check(bad, std)
	for _, want := range []string{
		m + "/host imports " + m + "/config",
		m + "/host imports github.com/modelcontextprotocol/go-sdk/mcp",
		m + "/llm imports " + m + "/host",
		m + "/config imports gopkg.in/yaml.v3",
		m + "/a2a imports " + m + "/internal/testkit/fakellm",
		m + "/cmd/agenthost imports " + m + "/internal/bench/procstat",
		// The OpenTelemetry SDK, its exporters and gRPC, outside the composition root and telemetry/otlp.
		m + "/durable imports go.opentelemetry.io/otel/sdk/trace",
		m + "/durable imports google.golang.org/grpc/codes",
		m + "/mcpserver imports go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp",
		m + "/telemetry/mcptrace imports go.opentelemetry.io/otel/sdk/metric",
		// The MCP SDK outside the MCP edges.
		m + "/telemetry imports github.com/modelcontextprotocol/go-sdk/mcp",
		m + "/telemetry/otlp imports github.com/modelcontextprotocol/go-sdk/jsonrpc",
		// What the binary must not link at all.
		m + "/cmd/agenthost links google.golang.org/protobuf/internal/descfmt",
		m + "/cmd/agenthost links html/template",
		m + "/cmd/agenthost links text/template/parse",
		m + "/cmd/agenthost links github.com/openai/openai-go/v3",
		m + "/cmd/agenthost links github.com/chromedp/cdproto/cdp",
		// The browser driver outside the browser harness, test support included.
		m + "/internal/testkit/peers imports github.com/chromedp/chromedp",
		m + "/cmd/agenthost imports github.com/chromedp/cdproto/cdp",
	} {
		if !slices.ContainsFunc(got, func(line string) bool { return strings.HasPrefix(line, want+" (") }) {
			t.Errorf("not reported: %s\ngot: %q", want, got)
		}
	}
	// host's import of the MCP SDK breaks two rules, host's and the MCP SDK's confinement; the binary's link of
	// cdproto two too, chromedp's confinement and what the binary must not link.
	if len(got) != 20 {
		t.Errorf("%d reports, want 20: %q", len(got), got)
	}
}

// parse reads go list's lines: path, whether it is standard, then its dependencies.
func parse(t *testing.T, out []byte) ([]Package, func(string) bool) {
	t.Helper()
	std := map[string]bool{}
	var pkgs []Package
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			t.Fatalf("go list line %q", sc.Text())
		}
		p := Package{Path: f[0], Standard: f[1] == "true", Deps: f[2:]}
		std[p.Path] = p.Standard
		pkgs = append(pkgs, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pkgs, func(path string) bool { return std[path] }
}
