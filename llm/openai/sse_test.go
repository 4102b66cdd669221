package openai

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEventReader(t *testing.T) {
	long := strings.Repeat("x", 10000) // longer than the reader's buffer
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"plain", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"no space after the colon", "data:a\n\n", []string{"a"}},
		{"only the first space is dropped", "data:  a\n\n", []string{" a"}},
		{"comments, names, ids and retry skipped", ": ping\n\nevent: chunk\nid: 7\nretry: 100\ndata: a\n\n", []string{"a"}},
		{"data lines joined by newlines", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"blank lines between events", "\n\n\ndata: a\n\n\n\ndata: b\n\n", []string{"a", "b"}},
		{"an empty data line", "data:\n\n", []string{""}},
		{"a long line", "data: " + long + "\n\n", []string{long}},
		{"an event cut off by the end is discarded", "data: a\n\ndata: b\n", []string{"a"}},
		{"a last line without a newline is discarded", "data: a\n\ndata: b", []string{"a"}},
		{"empty body", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per read, so that lines span reads.
			r := newEventReader(iotest.OneByteReader(strings.NewReader(tt.body)))
			var got []string
			for {
				data, err := r.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("next: %v", err)
				}
				got = append(got, string(data))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEventReaderErrors(t *testing.T) {
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		r := newEventReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
		if data, err := r.next(); err != nil || string(data) != "a" {
			t.Fatalf("first event = %q, %v", data, err)
		}
		if _, err := r.next(); !errors.Is(err, boom) {
			t.Errorf("error = %v, want %v", err, boom)
		}
	})
	t.Run("oversized event", func(t *testing.T) {
		line := "data: " + strings.Repeat("x", 1<<20) + "\n"
		r := newEventReader(strings.NewReader(strings.Repeat(line, 5) + "\n"))
		if _, err := r.next(); err == nil || !strings.Contains(err.Error(), "event larger than") {
			t.Errorf("error = %v, want one about the event's size", err)
		}
	})
}

func TestDecodeChunk(t *testing.T) {
	t.Run("arguments as an object", func(t *testing.T) {
		var c chunk
		err := decodeChunk([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":{"x": 1}}}]}}]}`), &c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Choices[0].Delta.ToolCalls[0].Function.Arguments; got != `{"x": 1}` {
			t.Errorf("arguments = %q", got)
		}
	})
	t.Run("nulls", func(t *testing.T) {
		var c chunk
		err := decodeChunk([]byte(`{"model":null,"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":null}}]},"finish_reason":null}],"usage":null,"error":null}`), &c)
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Delta.Content != "" || c.Choices[0].Delta.ToolCalls[0].Function.Arguments != "" || c.Usage != nil {
			t.Errorf("chunk = %+v", c)
		}
	})
	t.Run("error member", func(t *testing.T) {
		var c chunk
		err := decodeChunk([]byte(`{"error":{"message":"overloaded","code":503}}`), &c)
		if err == nil || !strings.Contains(err.Error(), "error while streaming: overloaded") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		var c chunk
		for _, data := range []string{`{"choices":`, `{"choices":[{"index":"zero"}]}`, `not json`} {
			if err := decodeChunk([]byte(data), &c); err == nil || !strings.Contains(err.Error(), "malformed chunk") {
				t.Errorf("%s: error = %v", data, err)
			}
		}
	})
}

func FuzzEventReader(f *testing.F) {
	f.Add("data: a\n\ndata: b\r\n\r\n: c\n")
	f.Add("data:\ndata: x\n\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		r := newEventReader(strings.NewReader(body))
		total := 0
		for {
			data, err := r.next()
			if err != nil {
				break
			}
			// An event's data is made of the body's bytes: it can never be longer.
			if total += len(data); total > len(body) {
				t.Fatalf("%d bytes of data from a body of %d", total, len(body))
			}
		}
	})
}

// FuzzScanChunk checks that when scanChunk decodes a chunk, encoding/json decodes the same one.
func FuzzScanChunk(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"It "},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":\"\u00e9\ud83d\ude00\"}"}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7},"error":null}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":{"a":[1,2.5e3,true,null]}}}]}}]}`,
		`{"Model":"m","choices":null}`,
		`{"model":"a","model":"b"}`,
		`{"usage":{"total_tokens":1},"usage":{"prompt_tokens":2}}`,
		`{"other":{"a":1,"a":2},"model":"m"}`,
		`{"error":{"message":"x"}}`,
		`{"model":"\ud800"}`,
		` {"model" : "x\n\t\/"} `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast chunk
		if !scanChunk(data, &fast) {
			return
		}
		var std chunk
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("scanChunk accepted %q, which encoding/json rejects: %v", data, err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("%q:\nscanChunk     %#v\nencoding/json %#v", data, fast, std)
		}
	})
}

func TestScanChunkHandlesTheUsualShapes(t *testing.T) {
	// Chunks as servers send them must take the fast path; the fuzz target checks what it then decodes.
	for _, data := range []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"It "},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}`,
		// OpenAI's own, with more members than the scanner reads, nested ones included.
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1","extra_a":1,"extra_b":{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k1":0}}`,
	} {
		var c chunk
		if !scanChunk([]byte(data), &c) {
			t.Errorf("scanChunk declined %s", data)
		}
	}
}
