package fakellm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// These tests drive the fake with the real openai-go client: they prove that what the fake sends is what an
// OpenAI client parses.

func newClient(t *testing.T, s *fakellm.Server) openai.Client {
	t.Helper()
	return openai.NewClient(
		option.WithBaseURL(s.URL),
		option.WithAPIKey("test-key"),
		option.WithMaxRetries(0),
	)
}

func start(t *testing.T) (*fakellm.Server, openai.Client) {
	t.Helper()
	s := fakellm.New()
	t.Cleanup(s.Close)
	return s, newClient(t, s)
}

func params(includeUsage bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
	if includeUsage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

// drain reads a whole stream into an accumulator and counts the chunks.
func drain(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams) (*openai.ChatCompletionAccumulator, []openai.ChatCompletionChunk, error) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(t.Context(), p)
	defer stream.Close()
	acc := &openai.ChatCompletionAccumulator{}
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		c := stream.Current()
		chunks = append(chunks, c)
		acc.AddChunk(c)
	}
	return acc, chunks, stream.Err()
}

func TestStreamText(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		chunkSize int
		wantMin   int // text deltas at least
	}{
		{"default chunk size", "Hello, streaming world!", 0, 5},
		{"one rune per delta", "héllo wörld ✓", 1, 13},
		{"whole text in one delta", "short", 100, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := start(t)
			s.Enqueue(fakellm.Turn{Text: tt.text, ChunkSize: tt.chunkSize})

			acc, chunks, err := drain(t, client, params(false))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			var deltas []string
			for _, c := range chunks {
				if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
					deltas = append(deltas, c.Choices[0].Delta.Content)
				}
			}
			if got := strings.Join(deltas, ""); got != tt.text {
				t.Errorf("joined deltas = %q, want %q", got, tt.text)
			}
			if len(deltas) < tt.wantMin {
				t.Errorf("got %d text deltas, want at least %d", len(deltas), tt.wantMin)
			}
			if got := acc.Choices[0].Message.Content; got != tt.text {
				t.Errorf("accumulated content = %q, want %q", got, tt.text)
			}
			if got := acc.Choices[0].FinishReason; got != "stop" {
				t.Errorf("finish reason = %q, want stop", got)
			}
			if s.Unscripted() != 0 || s.Pending() != 0 {
				t.Errorf("unscripted = %d, pending = %d; want 0, 0", s.Unscripted(), s.Pending())
			}
		})
	}
}

func TestStreamToolCalls(t *testing.T) {
	tests := []struct {
		name       string
		interleave bool
	}{
		{"sequential", false},
		{"interleaved", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := start(t)
			s.Enqueue(fakellm.Turn{
				ToolCalls: []fakellm.ToolCall{
					{Name: "search", Arguments: `{"query":"go generics","limit":5}`},
					{ID: "call_custom", Name: "fetch_url", Arguments: `{"url":"https://example.com/a"}`},
				},
				InterleaveCalls: tt.interleave,
				ChunkSize:       4,
			})

			acc, chunks, err := drain(t, client, params(false))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			// The arguments really are split: more than one fragment per call.
			fragments := map[int64]int{}
			for _, c := range chunks {
				for _, choice := range c.Choices {
					for _, tc := range choice.Delta.ToolCalls {
						if tc.Function.Arguments != "" {
							fragments[tc.Index]++
						}
						if tc.ID == "" && tc.Function.Name != "" {
							t.Errorf("a later fragment of call %d repeats the name", tc.Index)
						}
					}
				}
			}
			if fragments[0] < 2 || fragments[1] < 2 {
				t.Errorf("argument fragments per call = %v, want at least 2 each", fragments)
			}

			calls := acc.Choices[0].Message.ToolCalls
			if len(calls) != 2 {
				t.Fatalf("got %d tool calls, want 2: %+v", len(calls), calls)
			}
			want := []struct{ id, name, args string }{
				{"call_1", "search", `{"query":"go generics","limit":5}`},
				{"call_custom", "fetch_url", `{"url":"https://example.com/a"}`},
			}
			for i, w := range want {
				if calls[i].ID != w.id || calls[i].Function.Name != w.name || calls[i].Function.Arguments != w.args {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i,
						calls[i].ID, calls[i].Function.Name, calls[i].Function.Arguments, w.id, w.name, w.args)
				}
			}
			if got := acc.Choices[0].FinishReason; got != "tool_calls" {
				t.Errorf("finish reason = %q, want tool_calls", got)
			}
		})
	}
}

func TestStreamUsage(t *testing.T) {
	tests := []struct {
		name         string
		includeUsage bool
		turn         fakellm.Turn
		want         *fakellm.Usage
	}{
		{"default usage", true, fakellm.Turn{Text: "x"}, ptr(fakellm.DefaultUsage())},
		{"scripted usage", true, fakellm.Turn{Text: "x", Usage: &fakellm.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}},
			&fakellm.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}},
		{"not asked for", false, fakellm.Turn{Text: "x"}, nil},
		{"omitted by the server", true, fakellm.Turn{Text: "x", OmitUsage: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := start(t)
			s.Enqueue(tt.turn)
			_, chunks, err := drain(t, client, params(tt.includeUsage))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			var usageChunks []openai.ChatCompletionChunk
			for _, c := range chunks {
				if c.JSON.Usage.Valid() {
					usageChunks = append(usageChunks, c)
				}
			}
			if tt.want == nil {
				if len(usageChunks) != 0 {
					t.Fatalf("got %d usage chunks, want none", len(usageChunks))
				}
				return
			}
			if len(usageChunks) != 1 {
				t.Fatalf("got %d usage chunks, want 1", len(usageChunks))
			}
			last := chunks[len(chunks)-1]
			if len(last.Choices) != 0 || !last.JSON.Usage.Valid() {
				t.Errorf("the usage chunk is not the last one with empty choices: %s", last.RawJSON())
			}
			u := last.Usage
			if u.PromptTokens != tt.want.PromptTokens || u.CompletionTokens != tt.want.CompletionTokens ||
				u.TotalTokens != tt.want.TotalTokens {
				t.Errorf("usage = %+v, want %+v", u, *tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestNonStreaming(t *testing.T) {
	s, client := start(t)
	s.Enqueue(
		fakellm.Turn{Text: "plain answer"},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "calc", Arguments: `{"x":1}`}}},
	)

	res, err := client.Chat.Completions.New(t.Context(), params(false))
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	if got := res.Choices[0].Message.Content; got != "plain answer" {
		t.Errorf("content = %q", got)
	}
	if res.Usage.TotalTokens != fakellm.DefaultUsage().TotalTokens {
		t.Errorf("usage = %+v", res.Usage)
	}

	res, err = client.Chat.Completions.New(t.Context(), params(false))
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	calls := res.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Function.Name != "calc" || calls[0].Function.Arguments != `{"x":1}` {
		t.Errorf("tool calls = %+v", calls)
	}
	if res.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish reason = %q", res.Choices[0].FinishReason)
	}
	if s.LastRequest().Stream {
		t.Error("recorded a non-streamed request as streamed")
	}
}

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		name           string
		turn           fakellm.Turn
		wantStatus     int
		wantMessage    string
		wantRetryAfter string
	}{
		{"rate limited", fakellm.Turn{Status: 429, ErrorMessage: "slow down", RetryAfter: 1500 * time.Millisecond},
			429, "slow down", "2"},
		{"server error with default message", fakellm.Turn{Status: 500}, 500, "Internal Server Error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := start(t)
			s.Enqueue(tt.turn)
			_, _, err := drain(t, client, params(false))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error = %v, want *openai.Error", err)
			}
			if apiErr.StatusCode != tt.wantStatus || apiErr.Message != tt.wantMessage {
				t.Errorf("status %d message %q, want %d %q", apiErr.StatusCode, apiErr.Message, tt.wantStatus, tt.wantMessage)
			}
			if got := apiErr.Response.Header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetryAfter)
			}
		})
	}
}

func TestCutMidStream(t *testing.T) {
	tests := []struct {
		name     string
		cutAfter int
		want     int
	}{
		{"after three chunks", 3, 3},
		{"before the first chunk", fakellm.Immediately, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := start(t)
			s.Enqueue(fakellm.Turn{Text: "this answer never finishes", ChunkSize: 2, CutAfter: tt.cutAfter})
			_, chunks, err := drain(t, client, params(false))
			if err == nil {
				t.Fatal("a cut stream ended without an error")
			}
			if len(chunks) != tt.want {
				t.Errorf("got %d chunks before the cut, want %d", len(chunks), tt.want)
			}
		})
	}
}

func TestHangUnblocks(t *testing.T) {
	tests := []struct {
		name    string
		unblock func(cancel context.CancelFunc, s *fakellm.Server)
	}{
		{"client cancels", func(cancel context.CancelFunc, _ *fakellm.Server) { cancel() }},
		{"server closes", func(_ context.CancelFunc, s *fakellm.Server) { s.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := start(t)
			s.Enqueue(fakellm.Turn{Text: "abcdefghijklmnop", ChunkSize: 1, HangAfter: 2})
			// The deadline only turns a hang that is never unblocked into a failure.
			ctx, cancel := context.WithTimeout(t.Context(), bound)
			defer cancel()
			stream := client.Chat.Completions.NewStreaming(ctx, params(false))
			defer stream.Close()
			n := 0
			for stream.Next() {
				n++
				if n == 2 {
					// The third chunk never comes: unblock the hang from the side under test.
					within(t, "unblocking the hang", func() { tt.unblock(cancel, s) })
				}
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatal("the hang was never unblocked")
			}
			if stream.Err() == nil {
				t.Error("a hung stream ended without an error")
			}
			if n != 2 {
				t.Errorf("got %d chunks, want 2", n)
			}
		})
	}
}

func TestLatencyInterruptedByClose(t *testing.T) {
	s, client := start(t)
	arrived := make(chan struct{})
	s.SetResponder(func(*fakellm.Request) fakellm.Turn {
		close(arrived)
		return fakellm.Turn{Text: "late", Latency: 24 * time.Hour}
	})
	done := make(chan error, 1)
	go func() {
		_, err := client.Chat.Completions.New(t.Context(), params(false))
		done <- err
	}()
	within(t, "the request reaching the server", func() { <-arrived })
	within(t, "Close", s.Close) // it must not wait for the latency to pass
	within(t, "the interrupted request", func() {
		if err := <-done; err == nil {
			t.Error("a request interrupted by Close succeeded")
		}
	})
}

// bound is how long a test waits for what should happen at once, generous for any machine: a regression then fails
// the test instead of hanging it.
const bound = 30 * time.Second

// within runs f and fails the test if it has not returned within bound.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	testwait.Within(t, bound, what, f)
}

func TestScriptRanOut(t *testing.T) {
	s, client := start(t)
	_, err := client.Chat.Completions.New(t.Context(), params(false))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "script ran out") {
		t.Fatalf("error = %v, want a 500 saying the script ran out", err)
	}
	if got := s.Unscripted(); got != 1 {
		t.Errorf("Unscripted() = %d, want 1", got)
	}
}

func TestRecordedRequest(t *testing.T) {
	s, client := start(t)
	s.Enqueue(fakellm.Turn{Text: "ok"})
	p := openai.ChatCompletionNewParams{
		Model: "m1",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage("hi"),
			{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
				ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       "call_9",
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "calc", Arguments: `{"x":1}`},
					},
				}},
			}},
			openai.ToolMessage("2", "call_9"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
				Name: "calc", Description: openai.String("adds"),
				Parameters: openai.FunctionParameters{"type": "object"},
			}),
		},
		ToolChoice:    openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "calc"}),
		Temperature:   openai.Float(0.25),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if _, _, err := drain(t, client, p); err != nil {
		t.Fatalf("stream: %v", err)
	}

	r := s.LastRequest()
	if r.Seq != 1 || r.Path != "/v1/chat/completions" || r.Model != "m1" || !r.Stream ||
		r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("request = seq %d path %q model %q stream %v options %+v", r.Seq, r.Path, r.Model, r.Stream, r.StreamOptions)
	}
	if r.Temperature == nil || *r.Temperature != 0.25 {
		t.Errorf("temperature = %v", r.Temperature)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	if got, want := strings.Join(roles, ","), "system:be brief,user:hi,assistant:,tool:2"; got != want {
		t.Errorf("messages = %s, want %s", got, want)
	}
	if tc := r.Messages[2].ToolCalls; len(tc) != 1 || tc[0].ID != "call_9" || tc[0].Function.Arguments != `{"x":1}` {
		t.Errorf("assistant tool calls = %+v", tc)
	}
	if r.Messages[3].ToolCallID != "call_9" {
		t.Errorf("tool_call_id = %q", r.Messages[3].ToolCallID)
	}
	if got := r.ToolNames(); len(got) != 1 || got[0] != "calc" || r.Tools[0].Function.Description != "adds" {
		t.Errorf("tools = %+v", r.Tools)
	}
	if r.ToolChoiceMode() != "function" || r.ForcedTool() != "calc" {
		t.Errorf("tool choice = %s (mode %q, forced %q)", r.ToolChoice, r.ToolChoiceMode(), r.ForcedTool())
	}
	if _, ok := r.Fields["temperature"]; !ok {
		t.Errorf("Fields lacks temperature: %v", r.Fields)
	}
	if !strings.Contains(string(r.Body), `"tool_call_id":"call_9"`) {
		t.Errorf("raw body lacks the tool_call_id: %s", r.Body)
	}
}

func TestToolChoiceHelpers(t *testing.T) {
	tests := []struct {
		choice     string
		wantMode   string
		wantForced string
	}{
		{``, "", ""},
		{`"auto"`, "auto", ""},
		{`"none"`, "none", ""},
		{`"required"`, "required", ""},
		{`{"type":"function","function":{"name":"search"}}`, "function", "search"},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`, "allowed_tools", ""},
	}
	for _, tt := range tests {
		t.Run(tt.choice, func(t *testing.T) {
			r := &fakellm.Request{ToolChoice: []byte(tt.choice)}
			if got := r.ToolChoiceMode(); got != tt.wantMode {
				t.Errorf("ToolChoiceMode() = %q, want %q", got, tt.wantMode)
			}
			if got := r.ForcedTool(); got != tt.wantForced {
				t.Errorf("ForcedTool() = %q, want %q", got, tt.wantForced)
			}
		})
	}
}

func TestResponderConcurrent(t *testing.T) {
	s, client := start(t)
	s.SetResponder(func(r *fakellm.Request) fakellm.Turn {
		name := r.ForcedTool()
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_" + name, Name: name, Arguments: `{}`}}}
	})
	names := []string{"a", "b", "c", "d", "e", "f"}
	results := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			p := params(false)
			p.Tools = []openai.ChatCompletionToolUnionParam{
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: name}),
			}
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: name})
			acc, _, err := drain(t, client, p)
			if err != nil {
				errs[i] = err
				return
			}
			c := acc.Choices[0].Message.ToolCalls[0]
			results[i] = c.ID + "/" + c.Function.Name
		})
	}
	wg.Wait()
	for i, name := range names {
		if errs[i] != nil {
			t.Errorf("request for %s: %v", name, errs[i])
		} else if want := "call_" + name + "/" + name; results[i] != want {
			t.Errorf("request for %s answered %q, want %q", name, results[i], want)
		}
	}
	if got := s.RequestCount(); got != len(names) {
		t.Errorf("RequestCount() = %d, want %d", got, len(names))
	}
}

func TestBarePathAndUnknownRoute(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	base := strings.TrimSuffix(s.URL, "/v1")
	s.Enqueue(fakellm.Turn{Text: "bare"})

	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("k"), option.WithMaxRetries(0))
	res, err := client.Chat.Completions.New(t.Context(), params(false))
	if err != nil {
		t.Fatalf("POST /chat/completions: %v", err)
	}
	if res.Choices[0].Message.Content != "bare" || s.LastRequest().Path != "/chat/completions" {
		t.Errorf("content %q path %q", res.Choices[0].Message.Content, s.LastRequest().Path)
	}

	resp, err := http.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/models = %d, want 404", resp.StatusCode)
	}
	if s.RequestCount() != 1 {
		t.Errorf("RequestCount() = %d, want 1 (unknown routes are not chat requests)", s.RequestCount())
	}
}

func TestInvalidBody(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
	if r := s.LastRequest(); r == nil || string(r.Body) != "{not json" {
		t.Errorf("the invalid request was not recorded raw: %+v", r)
	}
	if s.Unscripted() != 0 {
		t.Errorf("an invalid body counted as unscripted")
	}
}

func Example() {
	s := fakellm.New()
	defer s.Close()
	s.Enqueue(fakellm.Turn{Text: "Hello!"})

	client := openai.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("k"))
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "any",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Choices[0].Message.Content, s.RequestCount())
	// Output: Hello! 1
}

func TestModelsList(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	get := func() (int, string) {
		res, err := http.Get(s.URL + "/models")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get(); code != http.StatusNotFound {
		t.Errorf("GET /models before SetModels = %d, want 404", code)
	}
	s.SetModels("a", "b")
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, `"data":[{"id":"a","object":"model","owned_by":"fakellm"},{"id":"b"`) {
		t.Errorf("GET /models = %d %s", code, body)
	}
	if s.RequestCount() != 0 {
		t.Errorf("listing was recorded as %d requests", s.RequestCount())
	}
}

// TestChunkDelay: a delayed stream carries the same chunks and text; before each chunk after the first it waits,
// a wait the client going away ends.
func TestChunkDelay(t *testing.T) {
	s, client := start(t)
	s.Enqueue(fakellm.Turn{Text: "abcdefghij", ChunkSize: 2}, fakellm.Turn{Text: "abcdefghij", ChunkSize: 2, ChunkDelay: time.Millisecond})
	_, plain, err := drain(t, client, params(false))
	if err != nil {
		t.Fatal(err)
	}
	acc, delayed, err := drain(t, client, params(false))
	if err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "abcdefghij" || len(delayed) != len(plain) {
		t.Errorf("delayed stream: %q in %d chunks, want %q in %d", got, len(delayed), "abcdefghij", len(plain))
	}

	s.Enqueue(fakellm.Turn{Text: "abcdefghij", ChunkSize: 2, ChunkDelay: 24 * time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream := client.Chat.Completions.NewStreaming(ctx, params(false))
	defer stream.Close()
	within(t, "the first chunk", func() {
		if !stream.Next() {
			t.Fatalf("no first chunk: %v", stream.Err())
		}
	})
	cancel()
	within(t, "the stream ended by the client", func() {
		n := 0
		for stream.Next() {
			n++
		}
		if n != 0 || stream.Err() == nil {
			t.Errorf("%d more chunks after the first and error %v, want none and an error", n, stream.Err())
		}
	})
	within(t, "Close", s.Close)
}
