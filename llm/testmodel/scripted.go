package testmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/llm"
)

// ErrScriptExhausted is returned by Scripted.Generate once every scripted response was used.
var ErrScriptExhausted = errors.New("testmodel: script exhausted")

// Scripted replays scripted responses, one per Generate call, in order. It is safe for concurrent use: concurrent
// calls take the next responses in the order they get them, unless the responses say whose they are (match).
//
// A script is JSON lines, one response per line; blank lines and lines starting with "#" are ignored:
//
//	{"text": "...", "tool_calls": [{"id": "c1", "name": "x", "arguments": {"a": 1}}], "usage": {...}, "finish_reason": "stop"}
//
// Every field may be left out:
//   - text is streamed word by word through onDelta;
//   - tool_calls[].id defaults to "call_N", N counting the calls without an id through the whole script;
//     arguments is a JSON value sent as its compact text, or a JSON string sent as it is (so a script can send
//     invalid JSON), and defaults to {};
//   - usage has the llm.Usage fields (requests, prompt_tokens, completion_tokens, total_tokens); requests defaults
//     to 1 and total_tokens to the sum; without usage, it is estimated like Model does;
//   - finish_reason defaults to "tool_calls" when there are tool calls and "stop" otherwise;
//   - error, a string, makes that call fail with it instead of responding;
//   - match, a string, keeps the response for a request one of whose user messages contains it: a call takes the
//     first unused response whose match it has (or that has none), so that concurrent runs with different prompts
//     (the cases of an eval dataset) each get their own responses, deterministically.
type Scripted struct {
	mu        sync.Mutex
	responses []scriptedResponse
	used      []bool
	left      int
	requests  []llm.Request
}

var _ llm.Model = (*Scripted)(nil)

type scriptedResponse struct {
	line  int
	msg   llm.Message
	usage *llm.Usage
	stop  llm.FinishReason
	err   string
	match string
}

// scriptLine is the wire form of one script line.
type scriptLine struct {
	Text         string           `json:"text"`
	ToolCalls    []scriptCall     `json:"tool_calls"`
	Usage        *llm.Usage       `json:"usage"`
	FinishReason llm.FinishReason `json:"finish_reason"`
	Error        string           `json:"error"`
	Match        string           `json:"match"`
}

type scriptCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// maxScriptLine bounds one script line.
const maxScriptLine = 16 << 20

// NewScripted reads a script from r. Errors name the line they are on.
func NewScripted(r io.Reader) (*Scripted, error) {
	return readScript(r, "script")
}

// LoadScript reads a script from a file.
func LoadScript(path string) (*Scripted, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("testmodel: %w", err)
	}
	defer f.Close()
	return readScript(f, path)
}

// readScript reads a script; name says where it comes from in errors.
func readScript(r io.Reader, name string) (*Scripted, error) {
	s := &Scripted{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxScriptLine)
	autoID := 0
	lineNo := 1
	for ; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		resp, err := parseScriptLine(line, lineNo, &autoID)
		if err != nil {
			return nil, fmt.Errorf("testmodel: %s line %d: %w", name, lineNo, err)
		}
		s.responses = append(s.responses, resp)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("testmodel: %s line %d: %w", name, lineNo, err)
	}
	if len(s.responses) == 0 {
		return nil, fmt.Errorf("testmodel: %s has no responses", name)
	}
	s.used, s.left = make([]bool, len(s.responses)), len(s.responses)
	return s, nil
}

func parseScriptLine(line []byte, lineNo int, autoID *int) (scriptedResponse, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var sl scriptLine
	if err := dec.Decode(&sl); err != nil {
		return scriptedResponse{}, err
	}
	if dec.More() {
		return scriptedResponse{}, errors.New("unexpected data after the JSON object")
	}
	resp := scriptedResponse{
		line:  lineNo,
		msg:   llm.Message{Role: llm.RoleAssistant, Content: sl.Text},
		usage: sl.Usage,
		stop:  sl.FinishReason,
		err:   sl.Error,
		match: sl.Match,
	}
	for i, c := range sl.ToolCalls {
		if c.Name == "" {
			return scriptedResponse{}, fmt.Errorf("tool call %d has no name", i+1)
		}
		args, err := scriptArguments(c.Arguments)
		if err != nil {
			return scriptedResponse{}, fmt.Errorf("tool call %d (%s): %w", i+1, c.Name, err)
		}
		id := c.ID
		if id == "" {
			*autoID++
			id = "call_" + strconv.Itoa(*autoID)
		}
		resp.msg.ToolCalls = append(resp.msg.ToolCalls, llm.ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	if resp.stop == "" {
		resp.stop = llm.FinishStop
		if len(resp.msg.ToolCalls) > 0 {
			resp.stop = llm.FinishToolCalls
		}
	}
	return resp, nil
}

// scriptArguments turns a script's arguments into the text the model sends: a JSON string is sent as it is, any
// other value as its compact JSON.
func scriptArguments(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
		return s, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	return b.String(), nil
}

// Generate returns the next scripted response. It records the request (see Requests), streams the text through
// onDelta and returns an error wrapping ErrScriptExhausted when no response is left.
func (s *Scripted) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("testmodel: %w", err)
	}
	if req == nil {
		return nil, fmt.Errorf("testmodel: nil request")
	}
	s.mu.Lock()
	s.requests = append(s.requests, cloneRequest(req))
	i := -1
	for j, r := range s.responses {
		if !s.used[j] && (r.match == "" || asks(req, r.match)) {
			i = j
			break
		}
	}
	if i < 0 {
		n := len(s.responses)
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: all %d scripted responses were used (or kept for other prompts)", ErrScriptExhausted, n)
	}
	resp := s.responses[i]
	s.used[i] = true
	s.left--
	s.mu.Unlock()

	if resp.err != "" {
		return nil, fmt.Errorf("testmodel: scripted error (script line %d): %s", resp.line, resp.err)
	}
	if err := stream(ctx, resp.msg.Content, onDelta); err != nil {
		return nil, err
	}
	msg := resp.msg
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	var usage llm.Usage
	if resp.usage != nil {
		usage = *resp.usage
		if usage.Requests == 0 {
			usage.Requests = 1
		}
		if usage.TotalTokens == 0 {
			usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
		}
	} else {
		usage = estimateUsage(req, msg.Content, msg.ToolCalls)
	}
	return &llm.Response{Message: msg, Usage: usage, FinishReason: resp.stop, Model: "scripted"}, nil
}

// Requests returns copies of the requests Generate received, in order, including those it failed.
func (s *Scripted) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]llm.Request, len(s.requests))
	for i := range s.requests {
		out[i] = cloneRequest(&s.requests[i])
	}
	return out
}

// Remaining returns how many scripted responses are left.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.left
}

// asks reports whether one of req's user messages contains text.
func asks(req *llm.Request, text string) bool {
	return slices.ContainsFunc(req.Messages, func(m llm.Message) bool { return m.Role == llm.RoleUser && strings.Contains(m.Content, text) })
}

// cloneRequest copies the slices of a request, so that a caller reusing its own cannot change the record.
func cloneRequest(req *llm.Request) llm.Request {
	c := *req
	c.Messages = slices.Clone(req.Messages)
	for i := range c.Messages {
		c.Messages[i].ToolCalls = slices.Clone(c.Messages[i].ToolCalls)
	}
	c.Tools = slices.Clone(req.Tools)
	for i := range c.Tools {
		c.Tools[i].Parameters = bytes.Clone(c.Tools[i].Parameters)
	}
	if req.Temperature != nil {
		t := *req.Temperature
		c.Temperature = &t
	}
	if req.Extra != nil {
		c.Extra = make(map[string]any, len(req.Extra))
		for k, v := range req.Extra {
			c.Extra[k] = v
		}
	}
	return c
}
