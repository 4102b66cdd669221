package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm"
)

const testKey = "sk-test-secret-0123456789"

// newModel returns a Model against s with short backoffs; edit adjusts the options first.
func newModel(t *testing.T, s *fakellm.Server, edit func(*Options)) *Model {
	t.Helper()
	opts := &Options{BaseURL: s.URL, APIKey: testKey, Model: "test-model"}
	if edit != nil {
		edit(opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.backoff = time.Millisecond
	return m
}

func startServer(t *testing.T) *fakellm.Server {
	t.Helper()
	s := fakellm.New()
	t.Cleanup(s.Close)
	return s
}

func userRequest(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// collect returns an onDelta that records the deltas.
func collect() (*[]string, func(llm.Delta)) {
	var got []string
	return &got, func(d llm.Delta) { got = append(got, d.Text) }
}

func TestGenerateText(t *testing.T) {
	s := startServer(t)
	const text = "Streaming, one small piece after another — ünïcode too."
	s.Enqueue(fakellm.Turn{Text: text, ChunkSize: 4})
	m := newModel(t, s, nil)

	deltas, onDelta := collect()
	res, err := m.Generate(t.Context(), userRequest("hi"), onDelta)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(*deltas) < 10 {
		t.Errorf("got %d deltas, want the text in many pieces: %q", len(*deltas), *deltas)
	}
	if got := strings.Join(*deltas, ""); got != text {
		t.Errorf("deltas joined = %q, want %q", got, text)
	}
	want := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: text},
		Usage:        llm.Usage{Requests: 1, PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30},
		FinishReason: llm.FinishStop,
		Model:        "test-model",
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v\nwant %+v", res, want)
	}
	r := s.LastRequest()
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("request stream = %v, stream_options = %+v; want streaming with usage", r.Stream, r.StreamOptions)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
}

func TestGenerateToolCalls(t *testing.T) {
	calls := []fakellm.ToolCall{
		{ID: "call_a", Name: "search", Arguments: `{"query":"parallel calls","limit":3}`},
		{ID: "call_b", Name: "fetch_url", Arguments: `{"url":"https://example.com/x"}`},
	}
	want := []llm.ToolCall{
		{ID: "call_a", Name: "search", Arguments: `{"query":"parallel calls","limit":3}`},
		{ID: "call_b", Name: "fetch_url", Arguments: `{"url":"https://example.com/x"}`},
	}
	tests := []struct {
		name     string
		turn     fakellm.Turn
		wantText string
		want     []llm.ToolCall
	}{
		{"two calls one after the other", fakellm.Turn{ToolCalls: calls, ChunkSize: 3}, "", want},
		{"two calls interleaved", fakellm.Turn{ToolCalls: calls, ChunkSize: 2, InterleaveCalls: true}, "", want},
		{"text then a call", fakellm.Turn{Text: "Let me look.", ToolCalls: calls[:1]}, "Let me look.", want[:1]},
		{"malformed arguments pass through", fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c", Name: "f", Arguments: `{"a": 1,, "b`}}},
			"", []llm.ToolCall{{ID: "c", Name: "f", Arguments: `{"a": 1,, "b`}}},
		{"server says stop after calls", fakellm.Turn{ToolCalls: calls[:1], FinishReason: "stop"}, "", want[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			s.Enqueue(tt.turn)
			deltas, onDelta := collect()
			res, err := newModel(t, s, nil).Generate(t.Context(), userRequest("go"), onDelta)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if !reflect.DeepEqual(res.Message.ToolCalls, tt.want) {
				t.Errorf("tool calls = %+v\nwant %+v", res.Message.ToolCalls, tt.want)
			}
			if res.Message.Content != tt.wantText || strings.Join(*deltas, "") != tt.wantText {
				t.Errorf("text = %q, deltas = %q; want %q", res.Message.Content, *deltas, tt.wantText)
			}
			if res.FinishReason != llm.FinishToolCalls {
				t.Errorf("finish reason = %q, want tool_calls", res.FinishReason)
			}
		})
	}
}

// jsonEqual reports whether two JSON texts encode the same value.
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func TestRequestBody(t *testing.T) {
	temp := 0.3
	zero := 0.0
	tools := []llm.ToolSpec{
		{Name: "calc", Description: "Adds numbers.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"x":{"type":"number","maximum":1e3}},"required":["x"]}`)},
		{Name: "now"},
	}
	conversation := []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "Add 1."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "calc", Arguments: `{"x":1}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "calc", Content: "2"},
		{Role: llm.RoleAssistant, Content: "It is 2.", ToolCalls: []llm.ToolCall{{ID: "c2", Name: "now"}}},
		{Role: llm.RoleTool, ToolCallID: "c2", Content: `{"time":"noon"}`},
		{Role: llm.RoleAssistant, Content: "Done."},
	}
	const conversationJSON = `[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":"Add 1."},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"calc","arguments":"{\"x\":1}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"2"},
		{"role":"assistant","content":"It is 2.","tool_calls":[{"id":"c2","type":"function","function":{"name":"now","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c2","content":"{\"time\":\"noon\"}"},
		{"role":"assistant","content":"Done."}]`
	const toolsJSON = `[
		{"type":"function","function":{"name":"calc","description":"Adds numbers.",
			"parameters":{"type":"object","properties":{"x":{"type":"number","maximum":1e3}},"required":["x"]}}},
		{"type":"function","function":{"name":"now","parameters":{"type":"object"}}}]`

	tests := []struct {
		name   string
		req    *llm.Request
		want   map[string]string // top-level field → its JSON; "" means the field must be absent
		inBody string            // a substring of the raw body, when set
	}{
		{
			name: "conversation and tools with the zero tool choice",
			req:  &llm.Request{Messages: conversation, Tools: tools},
			want: map[string]string{
				"model": `"test-model"`, "messages": conversationJSON, "tools": toolsJSON, "tool_choice": `"auto"`,
				"stream": `true`, "stream_options": `{"include_usage":true}`,
				"temperature": "", "max_tokens": "", "max_completion_tokens": "",
			},
			// The schema reaches the server as written, number spelling included.
			inBody: `"maximum":1e3`,
		},
		{
			name: "no tools: no tool_choice even when one is set",
			req:  &llm.Request{Messages: conversation[:2], ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}},
			want: map[string]string{"tools": "", "tool_choice": ""},
		},
		{
			name: "auto",
			req:  &llm.Request{Messages: conversation[:2], Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAuto}},
			want: map[string]string{"tool_choice": `"auto"`},
		},
		{
			name: "none",
			req:  &llm.Request{Messages: conversation[:2], Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
			want: map[string]string{"tool_choice": `"none"`},
		},
		{
			name: "required",
			req:  &llm.Request{Messages: conversation[:2], Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}},
			want: map[string]string{"tool_choice": `"required"`},
		},
		{
			name: "named function",
			req: &llm.Request{Messages: conversation[:2], Tools: tools,
				ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: "now"}},
			want: map[string]string{"tool_choice": `{"type":"function","function":{"name":"now"}}`},
		},
		{
			name: "temperature and max tokens",
			req:  &llm.Request{Messages: conversation[:2], Temperature: &temp, MaxTokens: 256},
			want: map[string]string{"temperature": `0.3`, "max_tokens": `256`, "max_completion_tokens": ""},
		},
		{
			name: "an output schema as response_format",
			req: &llm.Request{Messages: conversation[:2], Tools: tools, Output: &llm.OutputFormat{Name: "answer",
				Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
			want: map[string]string{"response_format": `{"type":"json_schema","json_schema":{"name":"answer",
				"schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":false}}`, "tool_choice": `"auto"`},
		},
		{
			name: "no output schema: no response_format",
			req:  &llm.Request{Messages: conversation[:2]},
			want: map[string]string{"response_format": ""},
		},
		{
			name: "temperature zero is sent",
			req:  &llm.Request{Messages: conversation[:2], Temperature: &zero},
			want: map[string]string{"temperature": `0`},
		},
		{
			name: "extra fields merged, overriding ours but never stream",
			req: &llm.Request{Messages: conversation[:2], Temperature: &temp, Extra: map[string]any{
				"top_p":           0.9,
				"response_format": map[string]any{"type": "json_object"},
				"a.b*c":           "dotted",
				"temperature":     1.5,
				"stream":          false,
				"seed":            json.RawMessage(`42`),
			}},
			want: map[string]string{
				"top_p": `0.9`, "response_format": `{"type":"json_object"}`, "a.b*c": `"dotted"`,
				"temperature": `1.5`, "stream": `true`, "seed": `42`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			s.Enqueue(fakellm.Turn{Text: "ok"})
			if _, err := newModel(t, s, nil).Generate(t.Context(), tt.req, nil); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			r := s.LastRequest()
			for field, want := range tt.want {
				got, ok := r.Fields[field]
				switch {
				case want == "" && ok:
					t.Errorf("%s = %s, want it absent", field, got)
				case want == "":
				case !ok:
					t.Errorf("%s is absent, want %s", field, want)
				case !jsonEqual(t, got, want):
					t.Errorf("%s = %s\nwant %s", field, got, want)
				}
			}
			if tt.inBody != "" && !bytes.Contains(r.Body, []byte(tt.inBody)) {
				t.Errorf("body lacks %s: %s", tt.inBody, r.Body)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "narrator", Content: "x"}}}, `message 0: unknown role "narrator"`},
		{"tool message without id", &llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}}, "without a tool_call_id"},
		{"schema not an object", &llm.Request{Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
			`tool "t": parameters are not a JSON object`},
		{"forced tool not offered", &llm.Request{Tools: []llm.ToolSpec{{Name: "t"}},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: "u"}}, `names "u"`},
		{"unknown tool choice", &llm.Request{Tools: []llm.ToolSpec{{Name: "t"}}, ToolChoice: llm.ToolChoice{Mode: "sometimes"}},
			`unknown tool choice mode "sometimes"`},
		{"empty extra name", &llm.Request{Extra: map[string]any{"": 1}}, "empty name"},
		{"extra field that is not JSON", &llm.Request{Extra: map[string]any{"x": make(chan int)}}, `extra field "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			_, err := newModel(t, s, nil).Generate(t.Context(), tt.req, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), `openai: model "test-model": `) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
			if s.RequestCount() != 0 {
				t.Errorf("an invalid request was sent")
			}
		})
	}
}

func TestMaxCompletionTokensForOpenAI(t *testing.T) {
	tests := []struct {
		baseURL        string
		wantCompletion bool
	}{
		{"", true},
		{"https://api.openai.com/v1", true},
		{"http://localhost:11434/v1", false},
		{"https://openrouter.ai/api/v1", false},
	}
	for _, tt := range tests {
		t.Run(tt.baseURL, func(t *testing.T) {
			m, err := New(&Options{BaseURL: tt.baseURL, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			body, err := m.body(&llm.Request{MaxTokens: 100})
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(body, &fields); err != nil {
				t.Fatal(err)
			}
			if got := string(fields["max_completion_tokens"]) == "100"; got != tt.wantCompletion {
				t.Errorf("max_completion_tokens set = %v, want %v: %s", got, tt.wantCompletion, body)
			}
			if got := string(fields["max_tokens"]) == "100"; got == tt.wantCompletion {
				t.Errorf("max_tokens set = %v, want %v: %s", got, !tt.wantCompletion, body)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	ok := fakellm.Turn{Text: "finally"}
	tests := []struct {
		name         string
		maxRetries   int
		turns        []fakellm.Turn
		wantRequests int
		wantErr      string // "" for success
	}{
		{"429 then success", 0, []fakellm.Turn{{Status: 429, RetryAfter: time.Millisecond}, ok}, 2, ""},
		{"500 then success", 0, []fakellm.Turn{{Status: 500}, ok}, 2, ""},
		{"503 twice then success", 0, []fakellm.Turn{{Status: 503}, {Status: 503}, ok}, 3, ""},
		{"connection cut before the first chunk, then success", 0,
			[]fakellm.Turn{{Text: "lost", CutAfter: fakellm.Immediately}, ok}, 2, ""},
		{"retries exhausted", 2,
			[]fakellm.Turn{
				{Status: 429, ErrorMessage: "rate limited", RetryAfter: time.Millisecond},
				{Status: 429, ErrorMessage: "rate limited", RetryAfter: time.Millisecond},
				{Status: 429, ErrorMessage: "rate limited", RetryAfter: time.Millisecond},
			}, 3, `openai: model "test-model": 429 Too Many Requests: rate limited (3 attempts)`},
		{"retries disabled", -1, []fakellm.Turn{{Status: 500, ErrorMessage: "boom"}}, 1,
			`openai: model "test-model": 500 Internal Server Error: boom`},
		{"one retry allowed", 1, []fakellm.Turn{{Status: 502}, {Status: 502}}, 2, "502 Bad Gateway"},
		{"400 is not retried", 0, []fakellm.Turn{{Status: 400, ErrorMessage: "bad schema"}}, 1,
			`openai: model "test-model": 400 Bad Request: bad schema`},
		{"401 is not retried", 0, []fakellm.Turn{{Status: 401, ErrorMessage: "bad key"}}, 1, "401 Unauthorized: bad key"},
		{"Retry-After beyond the limit is not waited for", 0,
			[]fakellm.Turn{{Status: 429, ErrorMessage: "come back later", RetryAfter: 10 * time.Minute}}, 1,
			"429 Too Many Requests: come back later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			s.Enqueue(tt.turns...)
			m := newModel(t, s, func(o *Options) { o.MaxRetries = tt.maxRetries })
			deltas, onDelta := collect()
			res, err := m.Generate(t.Context(), userRequest("hi"), onDelta)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if res.Message.Content != "finally" || strings.Join(*deltas, "") != "finally" {
					t.Errorf("content %q deltas %q, want only the successful attempt's text", res.Message.Content, *deltas)
				}
				if res.Usage.Requests != 1 {
					t.Errorf("Usage.Requests = %d, want 1", res.Usage.Requests)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := s.RequestCount(); got != tt.wantRequests {
				t.Errorf("requests = %d, want %d", got, tt.wantRequests)
			}
			if s.Unscripted() != 0 {
				t.Errorf("%d unscripted requests", s.Unscripted())
			}
		})
	}
}

func TestOutOfScriptIsNotRetried(t *testing.T) {
	s := startServer(t)
	_, err := newModel(t, s, nil).Generate(t.Context(), userRequest("hi"), nil)
	if err == nil || !strings.Contains(err.Error(), "script ran out") {
		t.Fatalf("error = %v, want the fake's message", err)
	}
	if s.RequestCount() != 1 {
		t.Errorf("requests = %d, want 1 (x-should-retry: false)", s.RequestCount())
	}
}

func TestBrokenStreams(t *testing.T) {
	tests := []struct {
		name    string
		turn    fakellm.Turn
		edit    func(*Options)
		want    string
		notWant error
	}{
		{"cut mid-stream", fakellm.Turn{Text: "abcdefghijkl", ChunkSize: 2, CutAfter: 3}, nil,
			"stream broken after 3 chunks", nil},
		{"hang mid-stream", fakellm.Turn{Text: "abcdefghijkl", ChunkSize: 2, HangAfter: 2},
			func(o *Options) { o.IdleTimeout = 200 * time.Millisecond }, "stream idle for 200ms", context.Canceled},
		{"hang before the first chunk", fakellm.Turn{Text: "abc", HangAfter: fakellm.Immediately},
			func(o *Options) { o.IdleTimeout = 200 * time.Millisecond }, "stream idle for 200ms", context.Canceled},
		{"no headers at all", fakellm.Turn{Text: "abc", Latency: time.Hour},
			func(o *Options) { o.IdleTimeout = 200 * time.Millisecond }, "stream idle for 200ms", context.Canceled},
		{"whole call bounded", fakellm.Turn{Text: "abc", HangAfter: 2},
			func(o *Options) { o.RequestTimeout = 200 * time.Millisecond; o.IdleTimeout = -1 },
			"request timed out after 200ms", context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			s.Enqueue(tt.turn)
			// The limit under test ends the call; this outer one only turns a regression into a failure.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := newModel(t, s, tt.edit).Generate(ctx, userRequest("hi"), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if tt.notWant != nil && errors.Is(err, tt.notWant) {
				t.Errorf("error %v wraps %v, though the caller cancelled nothing", err, tt.notWant)
			}
			if got := s.RequestCount(); got != 1 {
				t.Errorf("requests = %d, want 1 (no retry)", got)
			}
		})
	}
	t.Run("request timeout wraps DeadlineExceeded", func(t *testing.T) {
		s := startServer(t)
		s.Enqueue(fakellm.Turn{Text: "abc", HangAfter: 2})
		m := newModel(t, s, func(o *Options) { o.RequestTimeout = 100 * time.Millisecond })
		_, err := m.Generate(t.Context(), userRequest("hi"), nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want context.DeadlineExceeded in the chain", err)
		}
	})
}

func TestCancel(t *testing.T) {
	t.Run("during a hanging stream", func(t *testing.T) {
		s := startServer(t)
		s.Enqueue(fakellm.Turn{Text: "abcdefghijkl", ChunkSize: 2, HangAfter: 3})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		n := 0
		// The default idle timeout (60s) is far away: only the cancellation can end this call in time.
		_, err := newModel(t, s, nil).Generate(ctx, userRequest("hi"), func(llm.Delta) {
			if n++; n == 2 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled in the chain", err)
		}
		if s.RequestCount() != 1 {
			t.Errorf("requests = %d, want 1", s.RequestCount())
		}
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		s := startServer(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s.SetResponder(func(*fakellm.Request) fakellm.Turn {
			cancel()
			return fakellm.Turn{Status: 429, RetryAfter: 50 * time.Second}
		})
		_, err := newModel(t, s, nil).Generate(ctx, userRequest("hi"), nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled in the chain", err)
		}
		if s.RequestCount() != 1 {
			t.Errorf("requests = %d, want 1", s.RequestCount())
		}
	})
}

func TestConcurrentForcedCalls(t *testing.T) {
	s := startServer(t)
	s.SetResponder(func(r *fakellm.Request) fakellm.Turn {
		name := r.ForcedTool()
		return fakellm.Turn{Text: "using " + name, ToolCalls: []fakellm.ToolCall{{ID: "id_" + name, Name: name, Arguments: `{}`}}}
	})
	m := newModel(t, s, nil)
	names := []string{"alpha", "beta", "gamma", "delta"}
	var tools []llm.ToolSpec
	for _, n := range names {
		tools = append(tools, llm.ToolSpec{Name: n})
	}
	got := make([]*llm.Response, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			req := userRequest("go")
			req.Tools = tools
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: name}
			var text strings.Builder
			got[i], errs[i] = m.Generate(t.Context(), req, func(d llm.Delta) { text.WriteString(d.Text) })
			if errs[i] == nil && text.String() != got[i].Message.Content {
				errs[i] = errors.New("deltas do not add up to the content: " + text.String())
			}
		})
	}
	wg.Wait()
	for i, name := range names {
		if errs[i] != nil {
			t.Errorf("%s: %v", name, errs[i])
			continue
		}
		calls := got[i].Message.ToolCalls
		if len(calls) != 1 || calls[0].Name != name || calls[0].ID != "id_"+name || got[i].Message.Content != "using "+name {
			t.Errorf("%s: response %+v", name, got[i].Message)
		}
	}
}

func TestSecrets(t *testing.T) {
	s := startServer(t)
	s.Enqueue(
		fakellm.Turn{Status: 500, ErrorMessage: "upstream rejected key " + testKey},
		fakellm.Turn{Status: 401, ErrorMessage: "Incorrect API key provided: " + testKey},
	)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := newModel(t, s, func(o *Options) { o.Logger = logger }).Generate(t.Context(), userRequest("hi"), nil)
	if err == nil {
		t.Fatal("Generate succeeded against a 401")
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the error carries the API key: %v", err)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("the retry was not logged: %s", logs.String())
	}
	if strings.Contains(logs.String(), testKey) {
		t.Errorf("the log carries the API key: %s", logs.String())
	}
}

// TestRedirectRefused: an API that redirects, here to another port of the same host (where net/http would keep the
// Authorization header), gets no request of the Model's to its target: the key and the conversation stay put, and
// the error says where the redirect led.
func TestRedirectRefused(t *testing.T) {
	var reached sync.Mutex
	var got []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Lock()
		got = append(got, r.Header.Get("Authorization"))
		reached.Unlock()
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer target.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer api.Close()

	// The Model's own client, and a client of the caller's that would follow redirects.
	for _, client := range []*http.Client{nil, {}} {
		m, err := New(&Options{BaseURL: api.URL + "/v1", APIKey: testKey, Model: "test-model", MaxRetries: -1, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(t.Context(), userRequest("the secret plan"), nil)
		if err == nil {
			t.Fatal("Generate succeeded through a redirect")
		}
		if !strings.Contains(err.Error(), "redirected to "+target.URL) {
			t.Errorf("the error does not say where the redirect led: %v", err)
		}
	}
	reached.Lock()
	defer reached.Unlock()
	if len(got) > 0 {
		t.Errorf("the redirect target got %d requests (Authorization %q)", len(got), got)
	}
}

func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "env-org")
	s := startServer(t)
	s.Enqueue(fakellm.Turn{Text: "ok"})
	m := newModel(t, s, func(o *Options) { o.APIKey = "" })
	if _, err := m.Generate(t.Context(), userRequest("hi"), nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := s.LastRequest().Header
	if got := h.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
	if got := h.Get("OpenAI-Organization"); got != "" {
		t.Errorf("OpenAI-Organization = %q, want none", got)
	}
}

func TestJSONAnswerRejected(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	m, err := New(&Options{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(t.Context(), userRequest("hi"), nil)
	if err == nil || !strings.Contains(err.Error(), "instead of an event stream") {
		t.Errorf("error = %v, want one saying the answer was not streamed", err)
	}
}

// TestStreamedShapes sends streams as compatible servers write them, beyond what the fake server produces.
func TestStreamedShapes(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantText string
		wantArgs string
		wantErr  string
	}{
		{
			name: "comments, CRLF and no [DONE]",
			body: ": keep-alive\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"he\"}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"llo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n",
			wantText: "hello",
		},
		{
			name:     "arguments as an object",
			body:     `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n",
			wantArgs: `{"a":1}`,
		},
		{
			name: "an error event after a chunk",
			body: `data: {"choices":[{"index":0,"delta":{"content":"he"}}]}` + "\n\n" +
				`data: {"error":{"message":"model overloaded"}}` + "\n\n",
			wantErr: "stream broken after 1 chunks: error while streaming: model overloaded",
		},
		{
			name:    "a malformed chunk",
			body:    "data: {\"choices\":[\n\n",
			wantErr: "malformed chunk",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			m, err := New(&Options{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Generate(t.Context(), userRequest("hi"), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Content != tt.wantText {
				t.Errorf("text = %q, want %q", res.Message.Content, tt.wantText)
			}
			if tt.wantArgs != "" && (len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Arguments != tt.wantArgs) {
				t.Errorf("calls = %+v, want one with arguments %s", res.Message.ToolCalls, tt.wantArgs)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		opts *Options
		want string
	}{
		{"nil options", nil, "no model name"},
		{"no model", &Options{BaseURL: "http://localhost/v1"}, "no model name"},
		{"not a URL", &Options{Model: "m", BaseURL: "localhost:11434"}, "not an http(s) URL"},
		{"no host", &Options{Model: "m", BaseURL: "http:///v1"}, "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}

	m, err := New(&Options{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "m" || m.maxRetries != DefaultMaxRetries || m.idle != DefaultIdleTimeout || m.timeout != 0 {
		t.Errorf("defaults: name %q retries %d idle %s timeout %s", m.Name(), m.maxRetries, m.idle, m.timeout)
	}
	m, err = New(&Options{Model: "m", MaxRetries: -1, IdleTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if m.maxRetries != 0 || m.idle != 0 {
		t.Errorf("negative options: retries %d idle %s, want 0 and 0", m.maxRetries, m.idle)
	}
}

// TestRequestLine checks what goes on the wire besides the body: the endpoint under a base URL with a path (with or
// without a trailing slash, with a query), the headers, the Headers hook, and no Authorization without a key.
func TestRequestLine(t *testing.T) {
	type seen struct {
		method, path string
		header       http.Header
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Clone()}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		base, key, wantPath, wantAuth string
	}{
		{srv.URL + "/api/v1", testKey, "/api/v1/chat/completions", "Bearer " + testKey},
		{srv.URL + "/api/v1/", "", "/api/v1/chat/completions", ""},
		{srv.URL, "", "/chat/completions", ""},
		{srv.URL + "/openai/deployments/d?api-version=2024-10-21", "", "/openai/deployments/d/chat/completions?api-version=2024-10-21", ""},
	} {
		m, err := New(&Options{BaseURL: tt.base, APIKey: tt.key, Model: "m", Headers: func(ctx context.Context, h http.Header) {
			h.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(t.Context(), userRequest("hi"), nil); err != nil {
			t.Fatalf("base %s: Generate: %v", tt.base, err)
		}
		r := <-got
		if r.method != http.MethodPost || r.path != tt.wantPath {
			t.Errorf("base %s: request %s %s, want POST %s", tt.base, r.method, r.path, tt.wantPath)
		}
		for name, want := range map[string]string{
			"Content-Type":  "application/json",
			"Accept":        "text/event-stream",
			"User-Agent":    "agenthost",
			"Authorization": tt.wantAuth,
			"Traceparent":   "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		} {
			if v := r.header.Get(name); v != want {
				t.Errorf("base %s: %s = %q, want %q", tt.base, name, v, want)
			}
		}
	}
}
