package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/origin"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/telemetry"
)

const (
	defaultTimeout        = 5 * time.Minute
	defaultPollInterval   = time.Second
	defaultResolveTimeout = 30 * time.Second
	defaultMinBackoff     = 500 * time.Millisecond
	defaultMaxBackoff     = 30 * time.Second
	// cancelTimeout bounds the CancelTask sent for a task whose call ended first.
	cancelTimeout = 5 * time.Second
	// maxCardBytes bounds an agent card.
	maxCardBytes = 1 << 20
)

// PeerConfig is one A2A peer agent, offered as one tool.
type PeerConfig struct {
	// Name is the tool's name, and names the peer in its source ("a2a:<name>"), logs and errors.
	Name string
	// URL is the peer's base URL (its card is at /.well-known/agent-card.json under it) or its card's URL.
	URL string
	// Description, when not empty, replaces the card's description in the tool's description.
	Description string
	// Headers are sent with every request to the peer's origin (URL's scheme, host and port), the card's included;
	// an interface the card names at another origin gets none, and a redirect to another origin is refused.
	Headers map[string]string
	// Timeout bounds one task on the peer, after which the task is cancelled there; 0 means 5 minutes.
	Timeout time.Duration
	// PollInterval is how often a task the peer has not finished is polled; 0 means 1s.
	PollInterval time.Duration
	// Required makes a peer that cannot be resolved at start-up fail Connect; otherwise it is retried in the
	// background and its tool appears when it is resolved.
	Required bool
	// ProtocolVersion pins the version to speak, "1.0" or "0.3"; "" takes it from the card (1.0 preferred).
	ProtocolVersion string
}

// Options configures Connect. A nil *Options means all defaults.
type Options struct {
	// Logger receives resolution and retry events; nil discards them.
	Logger *slog.Logger
	// HTTPClient makes the requests; nil means a client of its own. Tests put an in-memory transport here. Each
	// peer uses a copy whose transport adds the peer's headers, and whose CheckRedirect refuses other origins.
	HTTPClient *http.Client
	// Telemetry traces each call and sends its trace context; nil traces nothing.
	Telemetry *telemetry.Telemetry
	// ResolveTimeout bounds fetching a card; 0 means 30s.
	ResolveTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between attempts to resolve a peer that was down; 0 means 500ms and
	// 30s.
	MinBackoff, MaxBackoff time.Duration
}

// Peers is the set of configured peers.
type Peers struct {
	peers []*Peer
}

// Connect resolves every peer concurrently and returns when each is resolved or has failed. A peer that fails is
// logged and retried in the background, unless it is Required: then Connect fails with its reason. The returned
// Peers must be closed.
func Connect(ctx context.Context, configs []PeerConfig, opts *Options) (*Peers, error) {
	if opts == nil {
		opts = &Options{}
	}
	ps := &Peers{}
	for _, cfg := range configs {
		p, err := newPeer(cfg, opts)
		if err != nil {
			ps.Close()
			return nil, err
		}
		ps.peers = append(ps.peers, p)
	}
	errs := make([]error, len(ps.peers))
	var wg sync.WaitGroup
	for i, p := range ps.peers {
		wg.Go(func() { errs[i] = p.resolveOnce(ctx) })
	}
	wg.Wait()
	var required []error
	for i, p := range ps.peers {
		switch {
		case errs[i] == nil:
		case p.cfg.Required:
			required = append(required, fmt.Errorf("a2a: required peer %q: %w", p.cfg.Name, errs[i]))
		default:
			p.logger.Warn("A2A peer not reachable at start-up; retrying in the background", "err", errs[i])
			p.wg.Go(p.retry)
		}
	}
	if len(required) > 0 {
		ps.Close()
		return nil, errors.Join(required...)
	}
	return ps, nil
}

// Toolsets returns every peer as a tool source, in configuration order. A peer not resolved yet offers no tool.
func (ps *Peers) Toolsets() []host.Toolset {
	out := make([]host.Toolset, len(ps.peers))
	for i, p := range ps.peers {
		out[i] = p
	}
	return out
}

// Status returns the state of every peer, in configuration order.
func (ps *Peers) Status() []PeerStatus {
	out := make([]PeerStatus, len(ps.peers))
	for i, p := range ps.peers {
		out[i] = p.Status()
	}
	return out
}

// Close stops the background retries and cancels the calls in flight (whose tasks are cancelled on their peers). It
// is safe to call more than once.
func (ps *Peers) Close() error {
	for _, p := range ps.peers {
		p.close()
	}
	return nil
}

// State is a peer's state.
type State string

const (
	StateReady    State = "ready"    // resolved: its tool is offered
	StateRetrying State = "retrying" // not resolved yet; retried in the background
	StateFailed   State = "failed"   // not resolved, and not retried (a required peer)
	StateClosed   State = "closed"
)

// PeerStatus describes a peer for `agenthost check` and health endpoints. It holds no secrets.
type PeerStatus struct {
	Name            string   `json:"name"`
	State           State    `json:"state"`
	ProtocolVersion string   `json:"protocol_version,omitempty"`
	URL             string   `json:"url,omitempty"` // the interface's URL
	Agent           string   `json:"agent,omitempty"`
	Skills          []string `json:"skills,omitempty"`
	Streaming       bool     `json:"streaming"`
	Error           string   `json:"error,omitempty"`
}

// Peer is one configured peer agent: a host.Toolset of one tool, once the peer is resolved.
type Peer struct {
	cfg    PeerConfig
	opts   *Options
	logger *slog.Logger
	http   *http.Client
	pin    version // zero: take the version from the card

	ctx    context.Context // ends at close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conn  *conn
	card  *agentCard
	tools []host.Tool // nil until resolved; then one tool
	state State
	// toolsChanged is notified when tools is a new list.
	toolsChanged host.Signal
	lastErr      error // stored redacted (redact.Error): it is shown as it is

	contexts *contextStore
}

var (
	_ host.Toolset  = (*Peer)(nil)
	_ host.Notifier = (*Peer)(nil)
)

// Changed implements host.Notifier.
func (p *Peer) Changed() <-chan struct{} { return p.toolsChanged.Changed() }

func newPeer(cfg PeerConfig, opts *Options) (*Peer, error) {
	if !host.ValidToolName(cfg.Name) {
		return nil, fmt.Errorf("a2a: peer name %q is not a valid tool name (^[a-zA-Z0-9_-]{1,64}$)", cfg.Name)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = defaultPollInterval
	}
	p := &Peer{cfg: cfg, opts: opts, state: StateRetrying, contexts: newContextStore()}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p.logger = logger.With("peer", cfg.Name)
	switch cfg.ProtocolVersion {
	case "":
	case "1.0":
		p.pin = v10
	case "0.3":
		p.pin = v03
	default:
		return nil, fmt.Errorf("a2a: peer %q: protocol_version %q is not 1.0 or 0.3", cfg.Name, cfg.ProtocolVersion)
	}
	if _, err := cardURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("a2a: peer %q: %w", cfg.Name, err)
	}
	home, err := origin.Parse(strings.TrimSpace(cfg.URL))
	if err != nil {
		return nil, fmt.Errorf("a2a: peer %q: %w", cfg.Name, err)
	}
	// The headers go to the peer's origin only, whoever asks: a redirect or the card's interface URL cannot take
	// them elsewhere.
	p.http = origin.Client(opts.HTTPClient, home, cfg.Headers)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Name implements host.Toolset.
func (p *Peer) Name() string { return "a2a:" + p.cfg.Name }

// Tools implements host.Toolset: the peer's tool once it is resolved, none before.
func (p *Peer) Tools(context.Context) ([]host.Tool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tools, nil
}

// Status returns the peer's state.
func (p *Peer) Status() PeerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PeerStatus{Name: p.cfg.Name, State: p.state}
	if p.conn != nil {
		st.ProtocolVersion, st.URL, st.Streaming = p.conn.ep.Version.String(), redact.URL(p.conn.ep.URL), p.conn.ep.Streaming
	}
	if p.card != nil {
		st.Agent = p.card.Name
		for _, s := range p.card.Skills {
			st.Skills = append(st.Skills, orDefault(s.Name, s.ID))
		}
	}
	if p.lastErr != nil && p.state != StateReady {
		st.Error = p.lastErr.Error()
	}
	return st
}

// resolveOnce fetches the card under the resolve timeout and, when it can be used, makes the tool current.
func (p *Peer) resolveOnce(ctx context.Context) error {
	timeout := p.opts.ResolveTimeout
	if timeout <= 0 {
		timeout = defaultResolveTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	card, ep, err := p.resolve(ctx)
	err = redact.Error(err) // it is logged, and shown by check and healthz
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.lastErr = err
		if p.cfg.Required && p.state != StateClosed {
			p.state = StateFailed
		}
		return err
	}
	if p.state == StateClosed {
		return errors.New("closed")
	}
	p.card, p.conn = card, &conn{http: p.http, ep: *ep, tel: p.opts.Telemetry}
	p.tools = []host.Tool{&peerTool{peer: p, spec: p.spec(card)}}
	defer p.toolsChanged.Notify() // under p.mu, which a watcher waits for in Tools
	p.state, p.lastErr = StateReady, nil
	p.logger.Info("A2A peer resolved", "agent", card.Name, "protocol", ep.Version.String(), "url", redact.URL(ep.URL), "streaming", ep.Streaming)
	if len(p.cfg.Headers) > 0 {
		if home, there := originOf(p.cfg.URL), originOf(ep.URL); home != there {
			p.logger.Warn("the A2A peer's card names an interface at another origin than its url: the configured "+
				"headers are not sent there; configure the peer by that origin's URL", "origin", there.String())
		}
	}
	return nil
}

// resolve fetches and reads the peer's card, and chooses the interface.
func (p *Peer) resolve(ctx context.Context) (*agentCard, *endpoint, error) {
	u, err := cardURL(p.cfg.URL)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	setVersion(req, v10)
	req.Header.Set("Accept", "application/json")
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching the agent card: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("fetching the agent card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("fetching the agent card %s: HTTP %s: %s", u, resp.Status, excerpt(body))
	}
	if len(body) > maxCardBytes {
		return nil, nil, fmt.Errorf("the agent card at %s is larger than %d bytes", u, maxCardBytes)
	}
	card, err := decodeCard(body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", u, err)
	}
	ep, err := card.choose(u, p.pin)
	if err != nil {
		return nil, nil, err
	}
	return card, ep, nil
}

// retry resolves the peer until it succeeds or the peer is closed, waiting longer after each failure (doubling from
// MinBackoff up to MaxBackoff, with jitter).
func (p *Peer) retry() {
	delay, maxDelay := p.opts.MinBackoff, p.opts.MaxBackoff
	if delay <= 0 {
		delay = defaultMinBackoff
	}
	if maxDelay <= 0 {
		maxDelay = defaultMaxBackoff
	}
	for attempt := 1; ; attempt++ {
		jittered := delay/2 + rand.N(delay/2+1)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(jittered):
		}
		err := p.resolveOnce(p.ctx)
		if err == nil {
			p.logger.Info("A2A peer is back", "attempt", attempt)
			return
		}
		if p.ctx.Err() != nil {
			return
		}
		delay = min(delay*2, maxDelay)
		p.logger.Debug("A2A peer still not reachable", "attempt", attempt, "retry_in", delay, "err", err)
	}
}

func (p *Peer) close() {
	p.cancel()
	p.mu.Lock()
	p.state = StateClosed
	p.mu.Unlock()
	p.wg.Wait()
}

// spec is the peer's tool: named after the peer, described by the configuration or the card, with its skills.
func (p *Peer) spec(card *agentCard) host.ToolSpec {
	desc := strings.TrimSpace(p.cfg.Description)
	if desc == "" {
		desc = strings.TrimSpace(card.Description)
	}
	if desc == "" {
		desc = fmt.Sprintf("The A2A agent %q.", card.Name)
	}
	if skills := skillsText(card.Skills); skills != "" {
		desc += "\nSkills:\n" + skills
	}
	desc += "\nSend it a message in plain language; a follow-up call in the same conversation continues with the same agent context."
	return host.ToolSpec{
		Name:        p.cfg.Name,
		Title:       card.Name,
		Description: desc,
		InputSchema: inputSchema,
		Annotations: &host.ToolAnnotations{OpenWorldHint: ptr(true)},
	}
}

var inputSchema = []byte(`{"type":"object","properties":{"message":{"type":"string","description":"The message for the agent: the request, or the answer to a question it asked."}},"required":["message"],"additionalProperties":false}`)

func ptr[T any](v T) *T { return &v }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// originOf is the origin of a URL already checked, or the zero Origin.
func originOf(raw string) origin.Origin {
	o, _ := origin.Parse(strings.TrimSpace(raw))
	return o
}
