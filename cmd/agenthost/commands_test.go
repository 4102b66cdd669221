package main

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

func TestAnswerWriter(t *testing.T) {
	tests := []struct {
		name   string
		events []*host.Event
		want   string
	}{
		{
			name: "streamed answer, then its sources",
			events: []*host.Event{
				{Kind: host.EventIteration},
				{Kind: host.EventTextDelta, Text: "Go is fast "},
				{Kind: host.EventTextDelta, Text: "[1]."},
				{Kind: host.EventAnswer, Answer: &host.Answer{Text: "Go is fast [1].\n\nSources:\n[1] Go — https://go.dev"}},
			},
			want: "Go is fast [1].\n\nSources:\n[1] Go — https://go.dev\n",
		},
		{
			name: "text before tool calls stays on its own line",
			events: []*host.Event{
				{Kind: host.EventIteration},
				{Kind: host.EventTextDelta, Text: "Let me look."},
				{Kind: host.EventIteration, Iteration: 1},
				{Kind: host.EventTextDelta, Text: "Found it."},
				{Kind: host.EventAnswer, Answer: &host.Answer{Text: "Found it."}},
			},
			want: "Let me look.\nFound it.\n",
		},
		{
			name: "an answer that was not streamed",
			events: []*host.Event{
				{Kind: host.EventIteration},
				{Kind: host.EventAnswer, Answer: &host.Answer{Text: "The run stopped: the limit of 2 model requests per run was reached."}},
			},
			want: "The run stopped: the limit of 2 model requests per run was reached.\n",
		},
		{
			name: "an answer that differs from what was streamed is printed whole",
			events: []*host.Event{
				{Kind: host.EventIteration},
				{Kind: host.EventTextDelta, Text: "partial"},
				{Kind: host.EventAnswer, Answer: &host.Answer{Text: "something else"}},
			},
			want: "partial\n\nsomething else\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			w := &answerWriter{w: &out}
			for _, ev := range tt.events {
				w.event(ev)
			}
			if out.String() != tt.want {
				t.Errorf("stdout:\n%q\nwant:\n%q", out.String(), tt.want)
			}
		})
	}
}

func TestPrintProgress(t *testing.T) {
	var out strings.Builder
	for _, ev := range []*host.Event{
		{Kind: host.EventToolStart, ToolCall: &host.ToolEvent{Name: "search", Arguments: []byte(`{"q":"go"}`)}},
		{Kind: host.EventToolProgress, ToolCall: &host.ToolEvent{Name: "search", Progress: &host.Progress{Progress: 1, Total: 4, Message: "page 1"}}},
		{Kind: host.EventToolEnd, ToolCall: &host.ToolEvent{Name: "search", Info: &host.ToolCallInfo{Name: "search", OK: true}}},
		{Kind: host.EventToolEnd, ToolCall: &host.ToolEvent{Name: "fetch", Info: &host.ToolCallInfo{Name: "fetch", Error: "timeout"}}},
	} {
		printProgress(&out, ev)
	}
	want := "· search {\"q\":\"go\"}\n  search: 1/4 page 1\n✗ fetch: timeout\n"
	if out.String() != want {
		t.Errorf("progress:\n%q\nwant:\n%q", out.String(), want)
	}
}
