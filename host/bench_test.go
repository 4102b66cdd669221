package host

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/llm/testmodel"
)

// BenchmarkOrchestratorOverhead measures the loop's own cost: 50 tools offered, 10 tool calls per round, 3 rounds
// and an answer (4 iterations), with a model and tools that take no time.
func BenchmarkOrchestratorOverhead(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer"}},"required":["query"]}`)
	var tools []Tool
	for i := range 50 {
		name := fmt.Sprintf("tool_%02d", i)
		tools = append(tools, &funcTool{spec: ToolSpec{Name: name, Description: "Looks things up in source " + name + ".", InputSchema: schema},
			fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
				return &Result{Text: "result of " + name, References: []Reference{{Title: name, URI: "https://example.test/" + name, Content: "excerpt"}}}, nil
			}})
	}
	const rounds, iterations = 3, 4
	// Every run starts a conversation. With the default bound, the history fills up to 1000 conversations of
	// about 60 messages each, and the garbage collector scans them all: that is the steady state of a busy server.
	// With a bound of 1, the figures show the loop alone.
	for _, kept := range []int{1000, 1} {
		b.Run(fmt.Sprintf("history=%d", kept), func(b *testing.B) {
			o := New(testmodel.NewRounds(rounds, 10, 50), NewToolManager([]Toolset{&staticSet{name: "bench", tools: tools}}, nil),
				&Options{Conversations: NewMemoryStore(&MemoryStoreOptions{MaxConversations: kept})})
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				ans, err := o.Ask(ctx, &Request{Prompt: "benchmark the loop"}, func(*Event) {})
				if err != nil || ans.StoppedBy != StopAnswered || len(ans.ToolCalls) != rounds*10 {
					b.Fatalf("unexpected run: %v %+v", err, ans)
				}
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/iterations, "ns/iteration")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/iterations, "cpu-ns/iteration")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used, garbage collection included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
