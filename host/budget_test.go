package host

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/llm"
)

func TestFitBudget(t *testing.T) {
	past := []llm.Message{
		{Role: llm.RoleUser, Content: strings.Repeat("old question ", 100)},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "p1", Name: "t", Arguments: "{}"}}},
		{Role: llm.RoleTool, ToolCallID: "p1", Content: strings.Repeat("x", 4000)},
		{Role: llm.RoleAssistant, Content: "old answer"},
		{Role: llm.RoleUser, Content: "second question"},
		{Role: llm.RoleAssistant, Content: "second answer"},
	}
	current := []llm.Message{
		{Role: llm.RoleUser, Content: "now"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "t", Arguments: "{}"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "é" + strings.Repeat("y", 20000)},
	}
	total := func(msgs []llm.Message) int {
		n := 0
		for _, m := range msgs {
			n += estimateTokens(m)
		}
		return n
	}

	t.Run("fits", func(t *testing.T) {
		msgs, dropped, cut := fitBudget("sys", past, current, 1<<20)
		if len(msgs) != 1+len(past)+len(current) || dropped != 0 || cut != nil {
			t.Errorf("got %d messages, dropped %d, cut %v; want everything kept", len(msgs), dropped, cut)
		}
	})
	t.Run("drops whole old turns first", func(t *testing.T) {
		budget := total(current) + total(past[4:]) + 20
		msgs, dropped, cut := fitBudget("sys", past, current, budget)
		if dropped != 4 || len(cut) != 0 {
			t.Fatalf("dropped %d, cut %v; want the first turn (4 messages) dropped and nothing cut", dropped, cut)
		}
		if msgs[1].Content != "second question" {
			t.Errorf("first kept message %q, want the second turn's question", msgs[1].Content)
		}
	})
	t.Run("then shortens tool results", func(t *testing.T) {
		msgs, dropped, cut := fitBudget("sys", past, current, 1000)
		if dropped != len(past) {
			t.Errorf("dropped %d, want all %d past messages", dropped, len(past))
		}
		if len(cut) != 1 || cut[0] != "c1" {
			t.Fatalf("cut %v, want [c1]", cut)
		}
		last := msgs[len(msgs)-1].Content
		if !strings.Contains(last, "characters cut to fit the context budget") || len(last) < minResultChars || len(last) > 4200 {
			t.Errorf("shortened result has %d characters: %.80q...", len(last), last)
		}
		if current[2].Content[0:2] != "é" || len(current[2].Content) != 20002 {
			t.Error("the input messages were modified")
		}
	})
	t.Run("never below the minimum", func(t *testing.T) {
		msgs, _, _ := fitBudget("sys", nil, current, 10)
		if got := len(msgs[len(msgs)-1].Content); got < minResultChars {
			t.Errorf("result shortened to %d characters, below %d", got, minResultChars)
		}
	})
}
