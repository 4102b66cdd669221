package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/llm"
)

func TestMemoryStoreBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	n := 0
	s := NewMemoryStore(&MemoryStoreOptions{MaxConversations: 2, IdleTTL: time.Minute, Now: func() time.Time { return now }, NewID: func() string { n++; return fmt.Sprint("c", n) }})
	ctx := t.Context()
	create := func() string {
		id, err := s.Create(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := create()
	now = now.Add(time.Second)
	b := create()
	now = now.Add(time.Second)
	create() // evicts a, the least recently used
	if _, err := s.Load(ctx, a); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("evicted conversation: err = %v, want ErrUnknownConversation", err)
	}
	if _, err := s.Load(ctx, b); err != nil {
		t.Fatalf("kept conversation: %v", err)
	}
	if _, err := s.Create(ctx, b); !errors.Is(err, ErrConversationExists) {
		t.Errorf("Create of a kept id: err = %v, want ErrConversationExists", err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.Load(ctx, b); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("idle conversation: err = %v, want ErrUnknownConversation", err)
	}
	if s.Len() != 0 {
		t.Errorf("Len = %d after everything expired", s.Len())
	}
}

func TestMemoryStoreAppend(t *testing.T) {
	ctx := t.Context()
	s := NewMemoryStore(nil)
	id, err := s.Create(ctx, "chosen")
	if err != nil || id != "chosen" {
		t.Fatalf("Create(chosen) = %q, %v", id, err)
	}
	user := llm.Message{Role: llm.RoleUser, Content: "hi"}
	if err := s.Append(ctx, id, 0, []llm.Message{user}, []Reference{{Title: "a", URI: "u:a"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, id, 0, []llm.Message{user}, nil, nil); !errors.Is(err, ErrConversationConflict) {
		t.Errorf("Append from a stale version: err = %v, want ErrConversationConflict", err)
	}
	if err := s.Append(ctx, "missing", 1, []llm.Message{user}, nil, nil); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("Append to a missing conversation: err = %v, want ErrUnknownConversation", err)
	}
	if err := s.Append(ctx, "new", 0, []llm.Message{user}, nil, nil); err != nil {
		t.Errorf("Append at version 0 to a conversation not started: %v, want it started", err)
	}
	if c, err := s.Load(ctx, "new"); err != nil || len(c.Messages) != 1 {
		t.Errorf("the conversation started by Append: %+v, %v", c, err)
	}
	c, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 1 || len(c.Sources) != 1 || c.Sources[0].URI != "u:a" {
		t.Fatalf("loaded %+v", c)
	}
	c.Messages[0].Content = "changed" // the copy shares nothing with the store
	if c2, _ := s.Load(ctx, id); c2.Messages[0].Content != "hi" {
		t.Errorf("a loaded copy changed the store: %q", c2.Messages[0].Content)
	}
}

func TestTurnsOneRunAtATime(t *testing.T) {
	var ts turns
	done, err := ts.take(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := ts.take(ctx, "c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second take while held: err = %v, want it to wait until ctx ends", err)
	}
	other, err := ts.take(t.Context(), "d")
	if err != nil {
		t.Fatalf("another conversation's turn: %v", err)
	}
	other()
	done()
	done2, err := ts.take(t.Context(), "c")
	if err != nil {
		t.Fatalf("take after the turn ended: %v", err)
	}
	done2()
	if len(ts.locks) != 0 {
		t.Errorf("%d turns left after every run ended", len(ts.locks))
	}
}

func TestOwnedConversationID(t *testing.T) {
	alices := OwnedConversationID("ctx@home", "alice")
	if alices == "ctx@home" || !strings.HasPrefix(alices, "ctx@home@") {
		t.Fatalf("alice's id %q", alices)
	}
	for _, tc := range []struct {
		id, subject string
		want        bool
	}{
		{alices, "alice", true},
		{alices, "bob", false},
		{"ctx@home", "alice", false},
		{"plain", "alice", false},
		{"plain", "", true},
		{alices, "", true},
		{OwnedConversationID("x", "bob"), "bob", true},
	} {
		if got := OwnsConversation(tc.id, tc.subject); got != tc.want {
			t.Errorf("OwnsConversation(%q, %q) = %v, want %v", tc.id, tc.subject, got, tc.want)
		}
	}
	if OwnedConversationID("x", "") != "x" {
		t.Error("an id of no subject changed")
	}
}
