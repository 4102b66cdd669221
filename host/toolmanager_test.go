package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// funcTool is a tool whose behaviour is a function, for tests.
type funcTool struct {
	spec ToolSpec
	fn   func(ctx context.Context, args json.RawMessage, call *Call) (*Result, error)
}

func (t *funcTool) Spec() ToolSpec { return t.spec }
func (t *funcTool) Call(ctx context.Context, args json.RawMessage, call *Call) (*Result, error) {
	if t.fn == nil {
		return &Result{Text: t.spec.Name + " ok"}, nil
	}
	return t.fn(ctx, args, call)
}

// staticSet is a Toolset with a fixed list.
type staticSet struct {
	name  string
	tools []Tool
	err   error
}

func (s *staticSet) Name() string                          { return s.name }
func (s *staticSet) Tools(context.Context) ([]Tool, error) { return s.tools, s.err }

func named(names ...string) []Tool {
	out := make([]Tool, len(names))
	for i, n := range names {
		out[i] = &funcTool{spec: ToolSpec{Name: n}}
	}
	return out
}

func TestToolsCollisionsAndNames(t *testing.T) {
	m := NewToolManager([]Toolset{
		&staticSet{name: "builtin", tools: named("a", "b")},
		&staticSet{name: "mcp:x", tools: named("b", "c", "bad name")},
		&staticSet{name: "mcp:down", err: errors.New("connection refused")},
	}, nil)
	tools, err := m.Tools(t.Context())
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Source+"/"+tl.Spec.Name)
	}
	if want := []string{"builtin/a", "builtin/b", "mcp:x/c"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	for _, want := range []string{`"b" is used by both builtin and mcp:x`, `"bad name" of mcp:x: invalid name`, "tools of mcp:down: connection refused"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestOffer(t *testing.T) {
	sets := []Toolset{&staticSet{name: "s", tools: named("a", "b", "c", "d", "e")}}
	tests := []struct {
		name       string
		policies   map[string]ToolPolicy
		sel        Selection
		wantOffer  []string
		wantForced []string
	}{
		{name: "all", wantOffer: []string{"a", "b", "c", "d", "e"}},
		{name: "enabled false", policies: map[string]ToolPolicy{"b": {Disabled: true}}, wantOffer: []string{"a", "c", "d", "e"}},
		{name: "disabled_tools", sel: Selection{DisabledTools: []string{"a", "e"}}, wantOffer: []string{"b", "c", "d"}},
		{name: "tool_choices keep caller order and force", sel: Selection{ToolChoices: []string{"d", "b"}}, wantOffer: []string{"d", "b"}, wantForced: []string{"d", "b"}},
		{name: "forced flag", policies: map[string]ToolPolicy{"c": {Forced: true}, "a": {Forced: true}}, wantOffer: []string{"a", "b", "c", "d", "e"}, wantForced: []string{"a", "c"}},
		{name: "exclusive first in source order", policies: map[string]ToolPolicy{"d": {Exclusive: true}, "b": {Exclusive: true}}, wantOffer: []string{"b"}},
		{name: "exclusive caller's first chosen", policies: map[string]ToolPolicy{"d": {Exclusive: true}, "b": {Exclusive: true}}, sel: Selection{ToolChoices: []string{"a", "d", "b"}}, wantOffer: []string{"d"}, wantForced: []string{"d"}},
		{name: "disabled exclusive does not count", policies: map[string]ToolPolicy{"b": {Exclusive: true, Disabled: true}}, wantOffer: []string{"a", "c", "d", "e"}},
		{name: "exclusive forced", policies: map[string]ToolPolicy{"c": {Exclusive: true, Forced: true}, "a": {Forced: true}}, wantOffer: []string{"c"}, wantForced: []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewToolManager(sets, &ToolManagerOptions{Policies: tt.policies})
			tools, err := m.Tools(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := checkSelection(tools, tt.sel); err != nil {
				t.Fatal(err)
			}
			off := newOffer(tools, tt.sel)
			if got := off.names(); !slices.Equal(got, tt.wantOffer) {
				t.Errorf("offered %v, want %v", got, tt.wantOffer)
			}
			var forced []string
			for _, f := range off.forced {
				forced = append(forced, f.Spec.Name)
			}
			if !slices.Equal(forced, tt.wantForced) {
				t.Errorf("forced %v, want %v", forced, tt.wantForced)
			}
		})
	}
}

func TestCheckSelection(t *testing.T) {
	m := NewToolManager([]Toolset{&staticSet{name: "s", tools: named("a", "b", "off")}}, &ToolManagerOptions{Policies: map[string]ToolPolicy{"off": {Disabled: true}}})
	tools, _ := m.Tools(t.Context())
	err := checkSelection(tools, Selection{ToolChoices: []string{"a", "nope", "off"}, DisabledTools: []string{"zzz"}})
	for _, want := range []string{
		`tool_choices: unknown tool "nope"; available tools: a, b`,
		`tool_choices: tool "off" is disabled by the configuration`,
		`disabled_tools: unknown tool "zzz"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
	if got := m.UnknownPolicies(tools); len(got) != 0 {
		t.Errorf("UnknownPolicies = %v, want none", got)
	}
	m2 := NewToolManager(m.Toolsets(), &ToolManagerOptions{Policies: map[string]ToolPolicy{"typo": {}}})
	if got := m2.UnknownPolicies(tools); !slices.Equal(got, []string{"typo"}) {
		t.Errorf("UnknownPolicies = %v, want [typo]", got)
	}
}

func TestRestrictAndToolPrompt(t *testing.T) {
	set := &staticSet{name: "s", tools: []Tool{
		&funcTool{spec: ToolSpec{Name: "a", Prompt: "use a for A"}},
		&funcTool{spec: ToolSpec{Name: "b", Prompt: "use b for B"}},
		&funcTool{spec: ToolSpec{Name: "c"}},
	}}
	m := NewToolManager([]Toolset{set}, &ToolManagerOptions{Policies: map[string]ToolPolicy{"b": {Prompt: "the admin's b", RequireApproval: true}}})
	all, err := m.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if all[0].Policy.Prompt != "use a for A" || all[1].Policy.Prompt != "the admin's b" {
		t.Errorf("prompts %q, %q", all[0].Policy.Prompt, all[1].Policy.Prompt)
	}
	r := m.Restrict([]string{"c", "b", "missing"})
	got, err := r.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Spec.Name != "b" || got[1].Spec.Name != "c" || !got[0].Policy.RequireApproval {
		t.Fatalf("restricted tools %v", got)
	}
	again, _ := r.Tools(t.Context())
	if &again[0] != &got[0] {
		t.Error("an unchanged list was rebuilt")
	}
	set.tools = append(slices.Clip(set.tools), &funcTool{spec: ToolSpec{Name: "missing"}})
	if now, _ := r.Tools(t.Context()); len(now) != 3 || now[2].Spec.Name != "missing" {
		t.Errorf("a tool that came later did not join: %v", now)
	}
}

// signalSet is a Toolset that says when its list changes.
type signalSet struct {
	name   string
	signal Signal
}

func (s *signalSet) Name() string                          { return s.name }
func (s *signalSet) Tools(context.Context) ([]Tool, error) { return nil, nil }

// watched reports whether someone waits for the next change.
func (s *signalSet) watched() bool {
	s.signal.mu.Lock()
	defer s.signal.mu.Unlock()
	return s.signal.ch != nil
}

func (s *signalSet) Changed() <-chan struct{} { return s.signal.Changed() }

// TestToolManagerWatch: Watch calls back once per source as it begins, then on each notified change of any source,
// also of a restricted view's parent, and returns once ctx ends; Notifies says whether every source notifies.
func TestToolManagerWatch(t *testing.T) {
	a, b := &signalSet{name: "a"}, &signalSet{name: "b"}
	tm := NewToolManager([]Toolset{a, b}, nil)
	if !tm.Notifies() {
		t.Error("Notifies = false with every source a Notifier")
	}
	if NewToolManager([]Toolset{a, &staticSet{name: "static"}}, nil).Notifies() {
		t.Error("Notifies = true with a source that is not a Notifier")
	}
	view := tm.Restrict([]string{"x"})
	calls := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(t.Context())
	returned := make(chan struct{})
	go func() {
		view.Watch(ctx, func() { calls <- struct{}{} })
		close(returned)
	}()
	for i := range 2 { // one call per source as its watch begins
		select {
		case <-calls:
		case <-time.After(30 * time.Second):
			t.Fatalf("initial call %d did not come", i)
		}
	}
	for i, set := range []*signalSet{a, b, a} {
		for deadline := time.Now().Add(30 * time.Second); !set.watched(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("change %d: Watch does not wait on %s", i, set.name)
			}
		}
		set.signal.Notify()
		select {
		case <-calls:
		case <-time.After(30 * time.Second):
			t.Fatalf("change %d of %s: no call", i, set.name)
		}
		select {
		case <-calls:
			t.Fatalf("change %d of %s: two calls", i, set.name)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not return after ctx ended")
	}
}
