package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/otlpsink"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// collectorKey is the export header's value, which check must not print.
const collectorKey = "collector-secret-7f3a9c"

// telemetryConfig is the [telemetry] table that sends to sink as service.
func telemetryConfig(sink *otlpsink.Sink, service string) string {
	return fmt.Sprintf("\n[telemetry]\nexporter = \"otlp\"\nendpoint = %q\nservice_name = %q\nheaders = { x-collector-key = \"%s\" }\n", sink.URL, service, collectorKey)
}

// TestTelemetryChained runs agent A, whose model calls two tools at once: agent B's agent tool over MCP (streamable
// HTTP) and agent B as an A2A peer. Both processes export to one OTLP/HTTP receiver, which must get one trace: A's
// invoke_agent span, its chat and execute_tool spans, the MCP and A2A client spans under the tool calls, and B's
// server spans under those, each with B's run under it.
func TestTelemetryChained(t *testing.T) {
	sink := otlpsink.New()
	t.Cleanup(sink.Close)
	llmA, llmB := fakellm.New(), fakellm.New()
	t.Cleanup(llmA.Close)
	t.Cleanup(llmB.Close)
	dir := t.TempDir()
	// B exports soon after each span ends; A exports as it exits.
	fast := []string{"TEST_KEY=sk-b", "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_METRIC_EXPORT_INTERVAL=200"}
	b := startServeA2A(t, fast, "serve", "--config", a2aConfig(t, dir, "b", llmB.URL, telemetryConfig(sink, "agent-b")),
		"--a2a", "127.0.0.1:0", "--http", "127.0.0.1:0")
	configA := a2aConfig(t, dir, "a", llmA.URL, telemetryConfig(sink, "agent-a")+fmt.Sprintf(`
[mcp.servers.bm]
url = %q
required = true

[a2a.peers.b]
url = %q
required = true
`, b.mcpURL, b.base))

	llmA.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "call-mcp", Name: "bm_ask_b", Arguments: `{"prompt":"Over MCP: what time is it?"}`},
			{ID: "call-a2a", Name: "b", Arguments: `{"message":"Over A2A: what time is it?"}`},
		}},
		fakellm.Turn{Text: "B says it is noon, twice."},
	)
	llmB.Enqueue(fakellm.Turn{Text: "It is noon."}, fakellm.Turn{Text: "It is noon."})
	r := agenthost(t, dir, "", []string{"TEST_KEY=sk-a"}, "run", "--json", "--config", configA, "What time is it, says B?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(ans.ToolCalls) != 2 || !ans.ToolCalls[0].OK || !ans.ToolCalls[1].OK {
		t.Fatalf("A's tool calls: %+v", ans.ToolCalls)
	}

	// B's spans arrive as its batches are exported; its two runs each end with an invoke_agent span.
	testwait.Until(t, a2aWait, "B's spans reach the receiver", func() bool {
		n := 0
		for _, s := range sink.Spans() {
			if s.Service == "agent-b" && s.Name == "invoke_agent b" {
				n++
			}
		}
		return n == 2
	})
	spans := sink.Spans()
	byID := map[string]otlpsink.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	find := func(service, name string, attr string, want any) otlpsink.Span {
		t.Helper()
		var found []otlpsink.Span
		for _, s := range spans {
			if s.Service == service && s.Name == name && (attr == "" || s.Attrs[attr] == want) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans %q from %s with %s = %v, want 1; all spans:\n%s", len(found), name, service, attr, want, dumpSpans(spans))
		}
		return found[0]
	}
	parentOf := func(child, parent otlpsink.Span) {
		t.Helper()
		if child.ParentID != parent.SpanID {
			t.Errorf("the parent of %s's %q is %s's %q, want %s's %q", child.Service, child.Name,
				byID[child.ParentID].Service, byID[child.ParentID].Name, parent.Service, parent.Name)
		}
	}

	// A: the run, its two model calls and its two tool calls.
	runA := find("agent-a", "invoke_agent a", "", nil)
	if runA.ParentID != "" {
		t.Errorf("A's run has a parent span %s: want it to start the trace", runA.ParentID)
	}
	checkAttrs(t, runA, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
		"gen_ai.provider.name": "openai", "gen_ai.request.model": "fake-model", "gen_ai.conversation.id": ans.ConversationID,
		"agenthost.stop_reason": "answered"})
	chat0 := find("agent-a", "chat fake-model", "agenthost.iteration", int64(0))
	chat1 := find("agent-a", "chat fake-model", "agenthost.iteration", int64(1))
	for _, c := range []otlpsink.Span{chat0, chat1} {
		parentOf(c, runA)
		if c.Kind != "client" || c.Attrs["server.address"] != "127.0.0.1" {
			t.Errorf("chat span: kind %s, server.address %v", c.Kind, c.Attrs["server.address"])
		}
		for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
			if _, ok := c.Attrs[k].(int64); !ok {
				t.Errorf("chat span has no %s: %v", k, c.Attrs)
			}
		}
		if _, ok := c.Attrs["gen_ai.input.messages"]; ok {
			t.Errorf("chat span records the messages without capture_content: %v", c.Attrs)
		}
	}
	checkAttrs(t, chat0, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"tool_calls"}})
	checkAttrs(t, chat1, map[string]any{"gen_ai.response.finish_reasons": []any{"stop"}})

	toolMCP := find("agent-a", "execute_tool bm_ask_b", "", nil)
	toolA2A := find("agent-a", "execute_tool b", "", nil)
	parentOf(toolMCP, runA)
	parentOf(toolA2A, runA)
	checkAttrs(t, toolMCP, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bm_ask_b",
		"gen_ai.tool.call.id": "call-mcp", "agenthost.tool.source": "mcp:bm"})
	checkAttrs(t, toolA2A, map[string]any{"gen_ai.tool.name": "b", "gen_ai.tool.call.id": "call-a2a", "agenthost.tool.source": "a2a:b"})

	// A's client spans, and B's server spans under them, each over a run of B's.
	mcpClient := find("agent-a", "tools/call ask_b", "", nil)
	parentOf(mcpClient, toolMCP)
	checkAttrs(t, mcpClient, map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "ask_b", "network.transport": "tcp"})
	if mcpClient.Kind != "client" || mcpClient.Attrs["mcp.session.id"] == nil {
		t.Errorf("MCP client span: kind %s, attributes %v", mcpClient.Kind, mcpClient.Attrs)
	}
	mcpServer := find("agent-b", "tools/call ask_b", "", nil)
	parentOf(mcpServer, mcpClient)
	if mcpServer.Kind != "server" || mcpServer.Attrs["mcp.session.id"] != mcpClient.Attrs["mcp.session.id"] {
		t.Errorf("MCP server span: kind %s, session %v (client's %v)", mcpServer.Kind, mcpServer.Attrs["mcp.session.id"], mcpClient.Attrs["mcp.session.id"])
	}

	a2aClient := find("agent-a", "a2a SendStreamingMessage", "", nil)
	parentOf(a2aClient, toolA2A)
	checkAttrs(t, a2aClient, map[string]any{"rpc.system.name": "jsonrpc", "rpc.method": "SendStreamingMessage", "a2a.protocol.version": "1.0"})
	a2aServer := find("agent-b", "a2a SendStreamingMessage", "", nil)
	parentOf(a2aServer, a2aClient)

	var runsB []otlpsink.Span
	for _, s := range spans {
		if s.Service == "agent-b" && s.Name == "invoke_agent b" {
			runsB = append(runsB, s)
		}
	}
	parents := []string{runsB[0].ParentID, runsB[1].ParentID}
	slices.Sort(parents)
	want := []string{mcpServer.SpanID, a2aServer.SpanID}
	slices.Sort(want)
	if !slices.Equal(parents, want) {
		t.Errorf("B's runs are under %v, want one under the MCP server span and one under the A2A server span (%v)", parents, want)
	}
	for _, run := range runsB {
		n := 0
		for _, s := range spans {
			if s.Name == "chat fake-model" && s.ParentID == run.SpanID {
				n++
			}
		}
		if n != 1 {
			t.Errorf("B's run %s has %d chat spans, want 1", run.SpanID, n)
		}
	}

	// One trace: every span but B's answers to A's connecting (initialize, tools/list), which no call started.
	for _, s := range spans {
		if s.Service == "agent-b" && s.ParentID == "" && s.Kind == "server" {
			continue
		}
		if s.TraceID != runA.TraceID {
			t.Errorf("%s's span %q is in trace %s, want A's trace %s", s.Service, s.Name, s.TraceID, runA.TraceID)
		}
	}
	// The model requests carried the trace context.
	for _, req := range append(llmA.Requests(), llmB.Requests()...) {
		if tp := req.Header.Get("Traceparent"); !strings.Contains(tp, runA.TraceID) {
			t.Errorf("a model request's traceparent is %q, want one in trace %s", tp, runA.TraceID)
		}
	}
	// A flushed its metrics as it exited.
	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "agenthost.tool.calls",
		"agenthost.tool.duration", "agenthost.runs.active", "mcp.client.operation.duration"} {
		if !sink.Metric(m, "agent-a") {
			t.Errorf("agent-a did not export the metric %s", m)
		}
	}
	testwait.Until(t, a2aWait, "B's metrics reach the receiver", func() bool { return sink.Metric("mcp.server.operation.duration", "agent-b") })
	for _, h := range sink.Headers() {
		if h.Get("X-Collector-Key") != collectorKey {
			t.Errorf("an export came without the configured header: %v", h)
			break
		}
	}
	if llmA.Unscripted() != 0 || llmA.Pending() != 0 || llmB.Unscripted() != 0 || llmB.Pending() != 0 {
		t.Errorf("model scripts: A %d unscripted, %d unused; B %d unscripted, %d unused", llmA.Unscripted(), llmA.Pending(), llmB.Unscripted(), llmB.Pending())
	}
}

func checkAttrs(t *testing.T, s otlpsink.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, _ := json.Marshal(s.Attrs[k])
		w, _ := json.Marshal(v)
		if string(got) != string(w) {
			t.Errorf("%s's span %q: %s = %s, want %s", s.Service, s.Name, k, got, w)
		}
	}
}

func dumpSpans(spans []otlpsink.Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s %s %q (%s) span %s parent %s\n", s.Service, s.Kind, s.Name, s.TraceID[:8], s.SpanID, s.ParentID)
	}
	return b.String()
}

// TestTelemetryCheck: `agenthost check` says where telemetry goes, from [telemetry] or the OTEL_* variables, and
// whether the collector listens, without the export headers and without exporting anything itself.
func TestTelemetryCheck(t *testing.T) {
	sink := otlpsink.New()
	t.Cleanup(sink.Close)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "agent.toml", "[model]\nprovider = \"test\"\n"+telemetryConfig(sink, "checked")+"capture_content = true\n")
	r := agenthost(t, dir, "", nil, "check", "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "TELEMETRY") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	line := lineWith(r.stdout, sink.URL)
	for _, want := range []string{"otlp", "http/protobuf", "checked", "yes", "reachable"} {
		if !strings.Contains(line, want) {
			t.Errorf("the telemetry line %q lacks %q", line, want)
		}
	}
	if strings.Contains(r.stdout, collectorKey) {
		t.Errorf("check printed an export header's value:\n%s", r.stdout)
	}

	// Telemetry from the environment alone, to a collector that is down: reported, not an error.
	closed := otlpsink.New()
	closedURL := closed.URL
	closed.Close()
	plain := writeFile(t, dir, "plain.toml", "[model]\nprovider = \"test\"\n")
	r = agenthost(t, dir, "", []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_ENDPOINT=" + closedURL, "OTEL_SERVICE_NAME=env-svc"},
		"check", "--config", plain)
	line = lineWith(r.stdout, closedURL)
	if r.code != 0 || !strings.Contains(line, "grpc") || !strings.Contains(line, "env-svc") || !strings.Contains(line, "unreachable") {
		t.Errorf("exit %d, telemetry line %q\n%s", r.code, line, r.stderr)
	}
	// Off: no table.
	r = agenthost(t, dir, "", nil, "check", "--config", plain)
	if r.code != 0 || strings.Contains(r.stdout, "TELEMETRY") {
		t.Errorf("check with telemetry off: exit %d\n%s", r.code, r.stdout)
	}
	// A bad variable fails the check.
	r = agenthost(t, dir, "", []string{"OTEL_TRACES_EXPORTER=zipkin"}, "check", "--config", plain)
	if r.code == 0 || !strings.Contains(r.stderr, `"zipkin" is not supported`) {
		t.Errorf("check with OTEL_TRACES_EXPORTER=zipkin: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(sink.Spans()); n != 0 {
		t.Errorf("check exported %d spans", n)
	}
}

func lineWith(text, s string) string {
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
