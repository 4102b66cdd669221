package host

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestHistoryBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	n := 0
	h := NewHistory(&HistoryOptions{MaxConversations: 2, IdleTTL: time.Minute, Now: func() time.Time { return now }, NewID: func() string { n++; return fmt.Sprint("c", n) }})
	ctx := t.Context()
	open := func() string {
		c, err := h.acquire(ctx, "", false)
		if err != nil {
			t.Fatal(err)
		}
		h.release(c)
		return c.id
	}
	a := open()
	now = now.Add(time.Second)
	b := open()
	now = now.Add(time.Second)
	open() // evicts a, the least recently used
	if _, err := h.acquire(ctx, a, false); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("evicted conversation: err = %v, want ErrUnknownConversation", err)
	}
	c, err := h.acquire(ctx, b, false)
	if err != nil {
		t.Fatalf("kept conversation: %v", err)
	}
	h.release(c)
	now = now.Add(2 * time.Minute)
	if _, err := h.acquire(ctx, b, false); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("idle conversation: err = %v, want ErrUnknownConversation", err)
	}
	if h.Len() != 0 {
		t.Errorf("Len = %d after everything expired", h.Len())
	}
}

func TestHistoryOneRunAtATime(t *testing.T) {
	h := NewHistory(nil)
	c, err := h.acquire(t.Context(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.acquire(ctx, c.id, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second acquire while held: err = %v, want it to wait until ctx ends", err)
	}
	h.release(c)
	c2, err := h.acquire(t.Context(), c.id, false)
	if err != nil || c2 != c {
		t.Fatalf("acquire after release: %v", err)
	}
	h.release(c2)
}
