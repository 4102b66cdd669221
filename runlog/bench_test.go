package runlog_test

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/runlog"
)

// BenchmarkRecorderEvent measures what recording one event costs a run: a text delta and a tool's progress, with
// and without content, with and without a Watch.
func BenchmarkRecorderEvent(b *testing.B) {
	events := map[string]*host.Event{
		"text":     {Kind: host.EventTextDelta, Iteration: 1, Text: "a piece of text"},
		"progress": {Kind: host.EventToolProgress, Iteration: 1, ToolCall: &host.ToolEvent{ID: "c1", Name: "t", Progress: &host.Progress{Progress: 1}}},
	}
	for _, name := range []string{"text", "progress"} {
		for _, origin := range []string{"console", "mcp"} {
			for _, watched := range []bool{false, true} {
				label := name + "/" + origin
				if watched {
					label += "/watched"
				}
				b.Run(label, func(b *testing.B) {
					rec := runlog.New(&runlog.Options{MaxEntries: 1 << 30})
					ctx, cancel := context.WithCancel(b.Context())
					defer cancel()
					if watched {
						go rec.Watch(ctx, func(runlog.Summary) {})
					}
					runCtx, end := rec.StartRun(host.WithOrigin(ctx, origin), &host.RunStart{Agent: "a", Prompt: "p", Origin: origin})
					ev := events[name]
					b.ReportAllocs()
					for b.Loop() {
						rec.ObserveEvent(runCtx, ev)
					}
					b.StopTimer()
					end(&host.Answer{StoppedBy: host.StopAnswered}, nil)
				})
			}
		}
	}
}
