package host

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// ErrUnknownConversation is returned by a run asked to continue a conversation the host does not have (never
// started, or dropped for idleness or the count bound).
var ErrUnknownConversation = errors.New("unknown conversation id")

// ErrInvalidRequest is returned (wrapped) by a run whose request is wrong: an empty prompt, or tool names that are
// not tools the caller may choose. Front-ends report it as the caller's mistake.
var ErrInvalidRequest = errors.New("invalid request")

// HistoryOptions bounds a History. A nil *HistoryOptions means all defaults.
type HistoryOptions struct {
	// MaxConversations is how many conversations are kept; the least recently used goes first. 0 means 1000.
	MaxConversations int
	// IdleTTL is how long an unused conversation is kept. 0 means one hour.
	IdleTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NewID makes conversation ids; nil means 16 random bytes in hex.
	NewID func() string
}

// History keeps conversations in memory, bounded in count and idle time. It is safe for concurrent use.
type History struct {
	max   int
	ttl   time.Duration
	now   func() time.Time
	newID func() string

	mu    sync.Mutex
	convs map[string]*list.Element // of *conversation
	lru   list.List                // most recently used first
}

// conversation is one conversation. Its lock is held by the run using it, so two runs of one conversation take
// turns instead of interleaving their messages.
type conversation struct {
	id       string
	lock     chan struct{} // a one-slot semaphore: a run holds it, and waiting for it honours ctx
	lastUsed time.Time     // guarded by History.mu

	// Guarded by lock.
	messages []llm.Message
	sources  []source // every reference shown to the model in this conversation, by number
}

// source is a numbered reference shown to the model.
type source struct {
	Number int
	Ref    Reference
}

// NewHistory returns an empty History.
func NewHistory(opts *HistoryOptions) *History {
	if opts == nil {
		opts = &HistoryOptions{}
	}
	h := &History{max: opts.MaxConversations, ttl: opts.IdleTTL, now: opts.Now, newID: opts.NewID, convs: map[string]*list.Element{}}
	if h.max <= 0 {
		h.max = 1000
	}
	if h.ttl <= 0 {
		h.ttl = time.Hour
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.newID == nil {
		h.newID = randomID
	}
	return h
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Len returns how many conversations are kept.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expireLocked()
	return h.lru.Len()
}

// Messages returns a copy of a conversation's messages.
func (h *History) Messages(ctx context.Context, id string) ([]llm.Message, error) {
	c, err := h.acquire(ctx, id, false)
	if err != nil {
		return nil, err
	}
	defer h.release(c)
	return slices.Clone(c.messages), nil
}

// acquire returns the conversation id, locked for the caller; an empty id starts a new one, and so does an unknown
// one when create is set (then under that id). Release it with release.
func (h *History) acquire(ctx context.Context, id string, create bool) (*conversation, error) {
	h.mu.Lock()
	h.expireLocked()
	var c *conversation
	e, known := h.convs[id]
	switch {
	case known:
		c = e.Value.(*conversation)
		c.lastUsed = h.now()
		h.lru.MoveToFront(e)
	case id == "" || create:
		for id == "" {
			if id = h.newID(); h.convs[id] != nil {
				id = ""
			}
		}
		c = &conversation{id: id, lock: make(chan struct{}, 1), lastUsed: h.now()}
		h.convs[id] = h.lru.PushFront(c)
		h.evictLocked()
	default:
		h.mu.Unlock()
		return nil, fmt.Errorf("%w %q (it may have expired after %s idle; omit it to start a new conversation)", ErrUnknownConversation, id, h.ttl)
	}
	h.mu.Unlock()

	select {
	case c.lock <- struct{}{}:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *History) release(c *conversation) {
	h.mu.Lock()
	c.lastUsed = h.now()
	if e, ok := h.convs[c.id]; ok {
		h.lru.MoveToFront(e)
	}
	h.mu.Unlock()
	<-c.lock
}

// expireLocked drops the conversations idle for longer than the TTL. They are at the back of the list; one in use
// stays, whatever its age.
func (h *History) expireLocked() {
	cutoff := h.now().Add(-h.ttl)
	for e := h.lru.Back(); e != nil; {
		c := e.Value.(*conversation)
		if !c.lastUsed.Before(cutoff) {
			return
		}
		prev := e.Prev()
		if len(c.lock) == 0 {
			h.lru.Remove(e)
			delete(h.convs, c.id)
		}
		e = prev
	}
}

// evictLocked drops the least recently used conversations not in use while there are more than the bound. The
// newest, at the front, is never dropped.
func (h *History) evictLocked() {
	for e := h.lru.Back(); e != nil && e != h.lru.Front() && h.lru.Len() > h.max; {
		prev := e.Prev()
		if c := e.Value.(*conversation); len(c.lock) == 0 {
			h.lru.Remove(e)
			delete(h.convs, c.id)
		}
		e = prev
	}
}
