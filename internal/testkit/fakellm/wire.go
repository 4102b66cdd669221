package fakellm

import (
	"encoding/json"
	"net/http"
)

// created is the fixed creation time every response reports, so recorded transcripts are deterministic.
const created = 1700000000

const systemFingerprint = "fp_fakellm"

// chunk is one chat.completion.chunk event.
type chunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"` // null on every chunk but the last when usage is asked for
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []deltaToolCall `json:"tool_calls,omitempty"`
}

type deltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function deltaFunction `json:"function"`
}

type deltaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// completion is a whole chat.completion object.
type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *Usage             `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	Logprobs     *struct{}         `json:"logprobs"`
	FinishReason string            `json:"finish_reason"`
}

type completionMessage struct {
	Role      string               `json:"role"`
	Content   *string              `json:"content"`
	Refusal   *string              `json:"refusal"`
	ToolCalls []completionToolCall `json:"tool_calls,omitempty"`
}

type completionToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function deltaFunction `json:"function"`
}

// chunks builds the data events of a streamed answer, in order, without the [DONE] marker.
func (p prepared) chunks(t Turn, includeUsage bool) []chunk {
	size := t.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	var usageNull json.RawMessage
	if includeUsage {
		usageNull = json.RawMessage("null")
	}
	one := func(d delta, finish *string) chunk {
		return chunk{
			ID: p.id, Object: "chat.completion.chunk", Created: created, Model: p.model,
			SystemFingerprint: systemFingerprint,
			Choices:           []chunkChoice{{Delta: d, FinishReason: finish}},
			Usage:             usageNull,
		}
	}

	empty := ""
	out := []chunk{one(delta{Role: "assistant", Content: &empty}, nil)}
	for _, piece := range split(t.Text, size) {
		out = append(out, one(delta{Content: &piece}, nil))
	}

	// Per call: the opening delta (id, type, name, empty arguments), then the argument fragments.
	perCall := make([][]deltaToolCall, len(p.calls))
	for i, c := range p.calls {
		perCall[i] = append(perCall[i], deltaToolCall{
			Index: i, ID: c.ID, Type: "function", Function: deltaFunction{Name: c.Name},
		})
		for _, frag := range split(c.Arguments, size) {
			perCall[i] = append(perCall[i], deltaToolCall{Index: i, Function: deltaFunction{Arguments: frag}})
		}
	}
	if t.InterleaveCalls {
		for more := true; more; {
			more = false
			for i := range perCall {
				if len(perCall[i]) > 0 {
					out = append(out, one(delta{ToolCalls: perCall[i][:1]}, nil))
					perCall[i] = perCall[i][1:]
					more = true
				}
			}
		}
	} else {
		for _, ds := range perCall {
			for j := range ds {
				out = append(out, one(delta{ToolCalls: ds[j : j+1]}, nil))
			}
		}
	}

	finish := p.finishReason
	out = append(out, one(delta{}, &finish))
	if includeUsage && p.usage != nil {
		u, _ := json.Marshal(p.usage)
		out = append(out, chunk{
			ID: p.id, Object: "chat.completion.chunk", Created: created, Model: p.model,
			SystemFingerprint: systemFingerprint, Choices: []chunkChoice{}, Usage: u,
		})
	}
	return out
}

// split cuts s into pieces of at most size runes, so no piece splits a UTF-8 sequence.
func split(s string, size int) []string {
	var out []string
	runes := []rune(s)
	for len(runes) > 0 {
		n := min(size, len(runes))
		out = append(out, string(runes[:n]))
		runes = runes[n:]
	}
	return out
}

// stopAt turns a HangAfter or CutAfter value into the number of chunks to send first, or -1 for never.
func stopAt(n, total int) int {
	switch {
	case n == 0:
		return -1
	case n < 0:
		return 0
	default:
		return min(n, total)
	}
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *Request, t Turn, p prepared) {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	events := p.chunks(t, includeUsage)
	hangAt := stopAt(t.HangAfter, len(events))
	cutAt := stopAt(t.CutAfter, len(events))

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	for i := 0; ; i++ {
		switch i {
		case hangAt:
			s.hang(w, r)
			return
		case cutAt:
			_ = rc.Flush()
			cut(w)
			return
		}
		if i == len(events) {
			_, _ = w.Write([]byte("data: [DONE]\n\n"))
			_ = rc.Flush()
			return
		}
		if t.ChunkDelay > 0 && i > 0 && !s.wait(r.Context(), t.ChunkDelay) {
			return // the client went away, or the server closes
		}
		data, _ := json.Marshal(events[i])
		_, _ = w.Write([]byte("data: "))
		_, _ = w.Write(data)
		_, _ = w.Write([]byte("\n\n"))
		if rc.Flush() != nil || r.Context().Err() != nil {
			return // the client went away
		}
	}
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, t Turn, p prepared) {
	if t.HangAfter != 0 {
		s.hang(w, r)
		return
	}
	if t.CutAfter != 0 {
		cut(w)
		return
	}
	msg := completionMessage{Role: "assistant"}
	if t.Text != "" || len(p.calls) == 0 {
		text := t.Text
		msg.Content = &text
	}
	for _, c := range p.calls {
		msg.ToolCalls = append(msg.ToolCalls, completionToolCall{
			ID: c.ID, Type: "function", Function: deltaFunction{Name: c.Name, Arguments: c.Arguments},
		})
	}
	body := completion{
		ID: p.id, Object: "chat.completion", Created: created, Model: p.model,
		SystemFingerprint: systemFingerprint,
		Choices:           []completionChoice{{Message: msg, FinishReason: p.finishReason}},
		Usage:             p.usage,
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}
