package mcpclients

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// This file holds the pure conversions between MCP SDK types and the host and llm types. Nothing here blocks or
// talks to a server, so every MCP-to-host mapping can be tested from wire JSON alone.

// maxExcerpt is how many runes of a resource's text a Reference keeps for the model.
const maxExcerpt = 2000

// objectSchema is the input schema of a tool that declares none.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// toolSpec converts an MCP tool into a host.ToolSpec named finalName.
//
// The input schema is passed through: the client side of the SDK decodes it into a map[string]any, which is
// re-encoded here with every keyword kept. Only a schema without any "type" gets "type":"object", because chat APIs
// reject function parameters that are not declared as objects. A schema that is not a JSON object is an error.
func toolSpec(finalName string, t *mcp.Tool) (host.ToolSpec, error) {
	if t == nil {
		return host.ToolSpec{}, errors.New("nil tool")
	}
	in, err := inputSchema(t.InputSchema)
	if err != nil {
		return host.ToolSpec{}, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
	}
	var out json.RawMessage
	if t.OutputSchema != nil {
		if out, err = encodeJSON(t.OutputSchema); err != nil {
			return host.ToolSpec{}, fmt.Errorf("tool %q: output schema: %w", t.Name, err)
		}
		if string(out) == "null" {
			out = nil
		}
	}
	spec := host.ToolSpec{
		Name:         finalName,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  in,
		OutputSchema: out,
	}
	if a := t.Annotations; a != nil {
		if spec.Title == "" {
			spec.Title = a.Title
		}
		spec.Annotations = &host.ToolAnnotations{
			// The SDK decodes readOnlyHint and idempotentHint into plain bools, so an absent hint and false look the
			// same. Both default to false in the spec: only a true value is a statement worth passing on.
			ReadOnlyHint:    trueOrNil(a.ReadOnlyHint),
			IdempotentHint:  trueOrNil(a.IdempotentHint),
			DestructiveHint: cloneBool(a.DestructiveHint),
			OpenWorldHint:   cloneBool(a.OpenWorldHint),
		}
	}
	return spec, nil
}

// inputSchema encodes a tool's input schema, adding "type":"object" when it has no "type" at all. Everything else
// is left as it was encoded: the type is spliced in rather than the object decoded and encoded again.
func inputSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return objectSchema, nil
	}
	raw, err := encodeJSON(v)
	if err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return objectSchema, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, fmt.Errorf("not a JSON object: %.40s", raw)
	}
	if _, ok := top["type"]; ok {
		return raw, nil
	}
	rest := bytes.TrimLeft(raw[1:], " \t\r\n") // raw is compact unless it came as a json.RawMessage
	if rest[0] == '}' {
		return objectSchema, nil
	}
	return append([]byte(`{"type":"object",`), rest...), nil
}

// toolResult converts a CallToolResult into what the model reads.
//
// Content items become lines of Text in order: text as it is, other kinds as a short placeholder, while their data
// go to Media and References. Structured content is kept in Structured and, when there is text, appended to it, unless
// the text already is that JSON (the SDK's typed handlers send structured output as text too). A failed call with
// nothing to show gets a generic message so that the model still learns it failed.
func toolResult(res *mcp.CallToolResult) *host.Result {
	r := &host.Result{}
	if res == nil {
		r.IsError = true
		r.Text = "the tool returned no result"
		return r
	}
	var lines []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			if c != nil && c.Text != "" {
				lines = append(lines, c.Text)
			}
		case *mcp.ImageContent:
			if c != nil {
				r.Media = append(r.Media, host.Media{Type: "image", MIMEType: c.MIMEType, Data: c.Data})
				lines = append(lines, host.Placeholder("image", c.MIMEType, len(c.Data)))
			}
		case *mcp.AudioContent:
			if c != nil {
				r.Media = append(r.Media, host.Media{Type: "audio", MIMEType: c.MIMEType, Data: c.Data})
				lines = append(lines, host.Placeholder("audio", c.MIMEType, len(c.Data)))
			}
		case *mcp.ResourceLink:
			if c != nil {
				r.References = append(r.References, host.Reference{
					URI:     c.URI,
					Title:   cmp.Or(c.Title, c.Name),
					Content: c.Description,
				})
				lines = append(lines, host.LinkPlaceholder(c.Name, c.URI))
			}
		case *mcp.EmbeddedResource:
			// The resource's text reaches the model through the reference, so it gets no line of its own.
			if c != nil && c.Resource != nil {
				r.References = append(r.References, host.Reference{
					URI:     c.Resource.URI,
					Title:   c.Resource.URI, // ResourceContents carries no name or title
					Content: resourceExcerpt(c.Resource),
				})
			}
		default:
			lines = append(lines, "[unsupported content: "+contentType(c)+"]")
		}
	}
	r.Text = strings.Join(lines, "\n")

	if res.StructuredContent != nil {
		// What the SDK decoded from JSON always encodes again; anything else is named rather than dropped.
		s, err := encodeJSON(res.StructuredContent)
		switch {
		case err != nil:
			r.Text = strings.TrimSpace(r.Text + "\n[structured content not encodable: " + err.Error() + "]")
		case string(s) != "null":
			r.Structured = s
		}
	}
	if r.Text != "" && r.Structured != nil && !sameJSON(r.Text, r.Structured) && !coveredBy(r.Text, r.Structured) {
		r.Text += "\n\n" + string(r.Structured)
	}

	r.IsError = res.IsError
	if r.IsError && r.Text == "" && r.Structured == nil {
		r.Text = "the tool reported an error"
	}
	r.Original = res // for a gateway: the content as the server sent it
	return r
}

// readResourceResult converts a resources/read result: the text of every text content, a placeholder for every
// blob, and one Reference per content titled name (or the content's URI when name is empty).
func readResourceResult(uri, name string, res *mcp.ReadResourceResult) *host.Result {
	r := &host.Result{}
	var parts []string
	if res != nil {
		for _, rc := range res.Contents {
			if rc == nil {
				continue
			}
			refURI := cmp.Or(rc.URI, uri)
			r.References = append(r.References, host.Reference{
				URI:     refURI,
				Title:   cmp.Or(name, refURI),
				Content: resourceExcerpt(rc),
			})
			if rc.Blob != nil {
				parts = append(parts, host.Placeholder("blob", rc.MIMEType, len(rc.Blob)))
			} else if rc.Text != "" {
				parts = append(parts, rc.Text)
			}
		}
	}
	if len(r.References) == 0 {
		r.Text = fmt.Sprintf("the resource %s has no contents", uri)
		return r
	}
	r.Text = strings.Join(parts, "\n")
	return r
}

// samplingRequest converts a server's sampling/createMessage into a model request. The server's model preferences,
// stop sequences and includeContext are hints the spec lets a client ignore, and they are ignored. No tools are
// offered: a sampling request must not trigger tool calls on the host's side.
//
// Temperature is on the wire with omitempty, so a server asking for 0 cannot be told apart from one asking for
// nothing; both get the provider's default.
func samplingRequest(p *mcp.CreateMessageParams, capTokens int) (*llm.Request, error) {
	if p == nil || len(p.Messages) == 0 {
		return nil, errors.New("sampling request has no messages")
	}
	req := &llm.Request{Messages: make([]llm.Message, 0, len(p.Messages)+1)}
	if p.SystemPrompt != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: p.SystemPrompt})
	}
	for i, m := range p.Messages {
		if m == nil {
			return nil, fmt.Errorf("sampling message %d is empty", i)
		}
		var role llm.Role
		switch m.Role {
		case "user":
			role = llm.RoleUser
		case "assistant":
			role = llm.RoleAssistant
		default:
			return nil, fmt.Errorf("sampling message %d has unsupported role %q", i, m.Role)
		}
		var text string
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			if c == nil {
				return nil, fmt.Errorf("sampling message %d has no content", i)
			}
			text = c.Text
		case nil:
			return nil, fmt.Errorf("sampling message %d has no content", i)
		default:
			text = "[" + contentType(c) + " omitted]"
		}
		req.Messages = append(req.Messages, llm.Message{Role: role, Content: text})
	}
	req.MaxTokens = max(int(p.MaxTokens), 0)
	if capTokens > 0 && (req.MaxTokens == 0 || req.MaxTokens > capTokens) {
		req.MaxTokens = capTokens
	}
	if p.Temperature != 0 {
		t := p.Temperature
		req.Temperature = &t
	}
	return req, nil
}

// samplingResult converts the model's answer to a sampling request. model names the model that answered; when it
// is empty, the name the provider reported is used.
func samplingResult(resp *llm.Response, model string) *mcp.CreateMessageResult {
	res := &mcp.CreateMessageResult{Role: "assistant", Model: model, Content: &mcp.TextContent{}}
	if resp == nil {
		return res
	}
	res.Content = &mcp.TextContent{Text: resp.Message.Content}
	res.Model = cmp.Or(model, resp.Model)
	switch resp.FinishReason {
	case llm.FinishStop:
		res.StopReason = "endTurn"
	case llm.FinishLength:
		res.StopReason = "maxTokens"
	case llm.FinishToolCalls:
		res.StopReason = "toolUse"
	default:
		res.StopReason = string(resp.FinishReason)
	}
	return res
}

// elicitRequest converts a server's elicitation into a question for whoever called the orchestrator. source names
// the asker. A URL-mode elicitation has no schema: its URL is added to the message, since the person answering must
// see it to decide.
func elicitRequest(p *mcp.ElicitParams, source string) *host.ElicitRequest {
	req := &host.ElicitRequest{Source: source}
	if p == nil {
		return req
	}
	req.Message = p.Message
	if p.URL != "" {
		req.Message = strings.TrimSpace(p.Message + "\n\n" + p.URL)
	}
	if p.RequestedSchema != nil {
		// The SDK decodes the schema from JSON into a map[string]any, which always encodes again.
		if s, err := encodeJSON(p.RequestedSchema); err == nil && string(s) != "null" {
			req.Schema = s
		}
	}
	return req
}

// elicitResult converts the answer back. Content goes with accept only, as the spec requires; an unknown action or
// no answer at all is a cancel, so a server never reads consent that was not given.
func elicitResult(r *host.ElicitResult) *mcp.ElicitResult {
	if r == nil {
		return &mcp.ElicitResult{Action: string(host.ElicitCancel)}
	}
	switch r.Action {
	case host.ElicitAccept:
		return &mcp.ElicitResult{Action: string(host.ElicitAccept), Content: r.Content}
	case host.ElicitDecline:
		return &mcp.ElicitResult{Action: string(host.ElicitDecline)}
	default:
		return &mcp.ElicitResult{Action: string(host.ElicitCancel)}
	}
}

// resourceExcerpt is what a Reference shows of a resource: its text cut to maxExcerpt runes, or a blob placeholder.
func resourceExcerpt(rc *mcp.ResourceContents) string {
	if rc.Blob != nil {
		return host.Placeholder("blob", rc.MIMEType, len(rc.Blob))
	}
	return excerpt(rc.Text)
}

// excerpt cuts s to maxExcerpt runes, marking the cut with an ellipsis.
func excerpt(s string) string {
	n := 0
	for i := range s {
		if n == maxExcerpt {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// contentType names a content item by its wire type ("tool_use"), falling back to its Go type.
func contentType(c mcp.Content) string {
	if v := reflect.ValueOf(c); c == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return "empty"
	}
	if b, err := c.MarshalJSON(); err == nil {
		var w struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &w) == nil && w.Type != "" {
			return w.Type
		}
	}
	return fmt.Sprintf("%T", c)
}

// encodeJSON encodes v compactly without HTML escaping, so that "<" in a description stays readable. A
// json.RawMessage is checked and kept as it is.
func encodeJSON(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		raw = bytes.TrimSpace(raw)
		if !json.Valid(raw) {
			return nil, errors.New("invalid JSON")
		}
		return raw, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// coveredBy reports whether every value in structured (every string, number and boolean, at any depth) already
// appears in text: then the structured content adds nothing for the model, and showing it would repeat the text (a
// server that returns a file as text and as {"content": "<the same text>"} would send the model every file twice).
func coveredBy(text string, structured json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(structured))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return false
	}
	leaves := 0
	var covered func(v any) bool
	covered = func(v any) bool {
		if leaves++; leaves > maxCoveredLeaves {
			return false // too large to be sure: show it
		}
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				if !covered(x) {
					return false
				}
			}
			return true
		case []any:
			for _, x := range v {
				if !covered(x) {
					return false
				}
			}
			return true
		case string:
			return strings.Contains(text, strings.TrimSpace(v))
		case json.Number:
			return strings.Contains(text, v.String())
		case bool:
			return strings.Contains(text, strconv.FormatBool(v))
		}
		return true // null
	}
	return covered(v)
}

const maxCoveredLeaves = 1000

// sameJSON reports whether text is JSON equal to structured, ignoring key order and spacing.
func sameJSON(text string, structured json.RawMessage) bool {
	var a, b any
	if json.Unmarshal([]byte(text), &a) != nil || json.Unmarshal(structured, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

func trueOrNil(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}
