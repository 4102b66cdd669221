package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxEventSize bounds one server-sent event's data. A chunk is a few hundred bytes; a server that sends more than
// this in one event is broken.
const maxEventSize = 4 << 20

// eventReader reads the data of server-sent events (the text/event-stream format) from a response body. Only
// data lines matter to a chat completion stream: event names, ids, retry fields and comments are skipped.
type eventReader struct {
	r    *bufio.Reader
	data []byte // the event being read; reused between events
}

func newEventReader(r io.Reader) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(r, 4096)}
}

// next returns the data of the next event, without its final newline. The slice is valid until the following call.
// At the end of the body it returns io.EOF; an event cut off by the end of the body is discarded, as the format
// requires.
func (e *eventReader) next() ([]byte, error) {
	e.data = e.data[:0]
	hasData := false
	for {
		line, err := e.line()
		if err != nil {
			// At the end of the body, a last line without its newline belongs to an event never dispatched.
			return nil, err
		}
		if len(line) == 0 {
			if hasData {
				return e.data[:len(e.data)-1], nil
			}
			continue // an empty event, or the blank line after a comment
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue // comments (": ping"), event, id, retry
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if len(e.data)+len(value) > maxEventSize {
			return nil, fmt.Errorf("event larger than %d bytes", maxEventSize)
		}
		e.data = append(e.data, value...)
		e.data = append(e.data, '\n')
		hasData = true
	}
}

// line returns the next line without its line ending (LF or CRLF). It is valid until the next read.
func (e *eventReader) line() ([]byte, error) {
	line, err := e.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line: gather it in a buffer of its own.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long) > maxEventSize {
				return nil, fmt.Errorf("event larger than %d bytes", maxEventSize)
			}
			line, err = e.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// chunk is one streamed chat completion chunk: the members this package reads and nothing else. Servers that copy
// the API disagree on details, so decoding is lenient where they do: a null is the zero value, and tool-call
// arguments sent as a JSON object instead of a string are taken as their JSON text.
type chunk struct {
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage"`
	// Error is set by servers that report a failure in the stream, after the 200 status.
	Error json.RawMessage `json:"error"`
}

type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type chunkChoice struct {
	Index int64 `json:"index"`
	Delta struct {
		Content   string          `json:"content"`
		Refusal   string          `json:"refusal"`
		ToolCalls []chunkToolCall `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type chunkToolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string    `json:"name"`
		Arguments arguments `json:"arguments"`
	} `json:"function"`
}

// arguments is a tool call's arguments fragment: a JSON string, as the API defines it, or a whole JSON object,
// as some servers send it.
type arguments string

func (a *arguments) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = arguments(s)
	case string(b) == "null":
		*a = ""
	default:
		*a = arguments(b)
	}
	return nil
}

// decodeChunk decodes one event's data. An event that carries an error member is the server's report of a failure
// and becomes an error.
func decodeChunk(data []byte, c *chunk) error {
	*c = chunk{}
	if !scanChunk(data, c) {
		*c = chunk{}
		if err := json.Unmarshal(data, c); err != nil {
			return fmt.Errorf("malformed chunk: %w", err)
		}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return fmt.Errorf("error while streaming: %s", providerMessage(data))
	}
	return nil
}
