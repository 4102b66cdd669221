package host

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// ErrUnknownConversation is returned by a run asked to continue a conversation the host does not have (never
// started, or dropped for idleness or the count bound).
var ErrUnknownConversation = errors.New("unknown conversation id")

// ErrConversationConflict is returned by ConversationStore.Append when the conversation grew since it was loaded:
// another run of it finished first, on another replica.
var ErrConversationConflict = errors.New("the conversation was continued by another run at the same time")

// ErrConversationExists is returned by ConversationStore.Create for an id the store already has.
var ErrConversationExists = errors.New("conversation id already in use")

// ErrInvalidRequest is returned (wrapped) by a run whose request is wrong: an empty prompt, or tool names that are
// not tools the caller may choose. Front-ends report it as the caller's mistake.
var ErrInvalidRequest = errors.New("invalid request")

// Conversation is a conversation as a ConversationStore keeps it: an append-only log of messages, every reference
// shown to the model in it, numbered from 1 in order, and the tools its searches loaded, in load order (see
// ToolSearchOptions), which its next runs offer from their first request.
type Conversation struct {
	ID       string        `json:"id"`
	Messages []llm.Message `json:"messages"`
	Sources  []Reference   `json:"sources"`
	Tools    []string      `json:"tools,omitempty"`
	Created  time.Time     `json:"created"`
	Updated  time.Time     `json:"updated"`
}

// ConversationStore keeps conversations, bounded in count and idle time. The orchestrator loads a conversation at
// the start of a run and appends the run's messages at its end; runs of one conversation in one process take turns,
// and Append's version check catches two runs of one conversation on different replicas.
//
// Implementations must be safe for concurrent use. The memory store is NewMemoryStore; the durable ones are at the
// edge (package store).
type ConversationStore interface {
	// Create starts an empty conversation under id, or under a new id when id is "", and returns the id. It fails
	// with ErrConversationExists when id is taken. The store makes room by its bounds. For a new id, a store may
	// only draw it: the conversation then exists from its first Append.
	Create(ctx context.Context, id string) (string, error)
	// Load returns the conversation id, or ErrUnknownConversation when the store does not have it (never started,
	// expired or dropped). Loading counts as a use for the idle expiry.
	Load(ctx context.Context, id string) (*Conversation, error)
	// Append adds messages and sources to the end of the conversation id, which had version messages when it was
	// loaded; the sources are numbered after those it had. tools are the names of the tools the run loaded, none of
	// them among those the conversation had loaded: they go after those. An Append at version 0 starts the
	// conversation when the store does not have it. It fails with ErrConversationConflict when the conversation has
	// more messages by now, and with ErrUnknownConversation when it is gone.
	Append(ctx context.Context, id string, version int, messages []llm.Message, sources []Reference, tools []string) error
}

// MemoryStoreOptions bounds a memory store. A nil *MemoryStoreOptions means all defaults.
type MemoryStoreOptions struct {
	// MaxConversations is how many conversations are kept; the least recently used goes first. 0 means
	// DefaultMaxConversations.
	MaxConversations int
	// IdleTTL is how long an unused conversation is kept. 0 means DefaultConversationTTL.
	IdleTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NewID makes conversation ids; nil means NewConversationID.
	NewID func() string
}

// Default bounds of a conversation store.
const (
	DefaultMaxConversations = 1000
	DefaultConversationTTL  = time.Hour
)

// OwnedConversationID returns the id of a conversation that belongs to subject: id itself when subject is "" (callers
// are not told apart), else id marked with a digest of the subject, so that two subjects never share a
// conversation, whatever ids they choose.
func OwnedConversationID(id, subject string) string {
	if subject == "" {
		return id
	}
	sum := sha256.Sum256([]byte(subject))
	return id + "@" + hex.EncodeToString(sum[:8])
}

// OwnsConversation reports whether the conversation id belongs to subject (see OwnedConversationID): any id does
// when subject is "".
func OwnsConversation(id, subject string) bool {
	if subject == "" {
		return true
	}
	i := strings.LastIndexByte(id, '@')
	return i >= 0 && OwnedConversationID(id[:i], subject) == id
}

// NewConversationID returns 16 random bytes in hex.
func NewConversationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// MemoryStore keeps conversations in memory: they end with the process.
type MemoryStore struct {
	max   int
	ttl   time.Duration
	now   func() time.Time
	newID func() string

	mu    sync.Mutex
	convs map[string]*list.Element // of *Conversation
	lru   list.List                // most recently used first
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(opts *MemoryStoreOptions) *MemoryStore {
	if opts == nil {
		opts = &MemoryStoreOptions{}
	}
	s := &MemoryStore{max: opts.MaxConversations, ttl: opts.IdleTTL, now: opts.Now, newID: opts.NewID, convs: map[string]*list.Element{}}
	if s.max <= 0 {
		s.max = DefaultMaxConversations
	}
	if s.ttl <= 0 {
		s.ttl = DefaultConversationTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = NewConversationID
	}
	return s
}

// Len returns how many conversations are kept.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return s.lru.Len()
}

// Create implements ConversationStore.
func (s *MemoryStore) Create(_ context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if id != "" && s.convs[id] != nil {
		return "", fmt.Errorf("%w: %q", ErrConversationExists, id)
	}
	for id == "" {
		if id = s.newID(); s.convs[id] != nil {
			id = ""
		}
	}
	s.addLocked(id)
	return id, nil
}

// addLocked adds the empty conversation id, making room by the bound.
func (s *MemoryStore) addLocked(id string) {
	now := s.now()
	s.convs[id] = s.lru.PushFront(&Conversation{ID: id, Created: now, Updated: now})
	for s.lru.Len() > s.max {
		c := s.lru.Remove(s.lru.Back()).(*Conversation)
		delete(s.convs, c.ID)
	}
}

// Load implements ConversationStore. The copy it returns shares nothing with the store.
func (s *MemoryStore) Load(_ context.Context, id string) (*Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.useLocked(id)
	if err != nil {
		return nil, err
	}
	out := *c
	out.Messages, out.Sources, out.Tools = slices.Clone(c.Messages), slices.Clone(c.Sources), slices.Clone(c.Tools)
	return &out, nil
}

// Append implements ConversationStore.
func (s *MemoryStore) Append(ctx context.Context, id string, version int, messages []llm.Message, sources []Reference, tools []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.useLocked(id)
	if errors.Is(err, ErrUnknownConversation) && version == 0 {
		s.addLocked(id)
		c, err = s.useLocked(id)
	}
	if err != nil {
		return err
	}
	if len(c.Messages) != version {
		return fmt.Errorf("%w (%q has %d messages, the run started from %d)", ErrConversationConflict, id, len(c.Messages), version)
	}
	c.Messages = append(c.Messages, messages...)
	c.Sources = append(c.Sources, sources...)
	c.Tools = append(c.Tools, tools...)
	return nil
}

// useLocked returns the conversation id, marked as used now.
func (s *MemoryStore) useLocked(id string) (*Conversation, error) {
	s.expireLocked()
	e, ok := s.convs[id]
	if !ok {
		return nil, UnknownConversation(id, s.ttl)
	}
	c := e.Value.(*Conversation)
	c.Updated = s.now()
	s.lru.MoveToFront(e)
	return c, nil
}

// UnknownConversation returns the error for a conversation id a store does not have, kept for ttl when idle.
func UnknownConversation(id string, ttl time.Duration) error {
	return fmt.Errorf("%w %q (it may have expired after %s idle; omit it to start a new conversation)", ErrUnknownConversation, id, ttl)
}

// expireLocked drops the conversations idle for longer than the TTL, which are at the back of the list.
func (s *MemoryStore) expireLocked() {
	cutoff := s.now().Add(-s.ttl)
	for e := s.lru.Back(); e != nil && e.Value.(*Conversation).Updated.Before(cutoff); e = s.lru.Back() {
		delete(s.convs, s.lru.Remove(e).(*Conversation).ID)
	}
}

// turns makes the runs of one conversation in this process take turns, so that they do not interleave their
// messages. The store's version check catches runs in other processes.
type turns struct {
	mu    sync.Mutex
	locks map[string]*turn
}

type turn struct {
	sem     chan struct{} // a one-slot semaphore: a run holds it, and waiting for it honours ctx
	waiters int           // runs holding or waiting for it; guarded by turns.mu
}

// take waits for the turn of conversation id, and returns the function that ends it.
func (ts *turns) take(ctx context.Context, id string) (func(), error) {
	ts.mu.Lock()
	if ts.locks == nil {
		ts.locks = map[string]*turn{}
	}
	t := ts.locks[id]
	if t == nil {
		t = &turn{sem: make(chan struct{}, 1)}
		ts.locks[id] = t
	}
	t.waiters++
	ts.mu.Unlock()
	leave := func() {
		ts.mu.Lock()
		if t.waiters--; t.waiters == 0 {
			delete(ts.locks, id)
		}
		ts.mu.Unlock()
	}
	select {
	case t.sem <- struct{}{}:
		return func() { <-t.sem; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
