package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// Calls paused between rounds, shared by the processes that serve one agent on one state database (replicas
// behind a load balancer). A call runs in the process whose request started it, its owner. At the end of each round
// the owner saves the round's outcome (the questions, or at last the result) in the CallStore. A retry that reaches
// another process finds the call there: that process leaves the answers for the owner as a signal, and reads the
// next outcome from the store when the owner has saved it. The owner takes the signals of its calls every
// signalInterval. Progress of a round served this way is not relayed.

// CallStore keeps the calls paused between rounds where every process serving the agent sees them.
type CallStore interface {
	// SaveCall inserts or replaces a call.
	SaveCall(ctx context.Context, c *SharedCall) error
	// LoadCall returns the call id, or nil and no error when there is none (or it expired).
	LoadCall(ctx context.Context, id string) (*SharedCall, error)
	// DeleteCall deletes the call id and the signals left for it; deleting one that is gone is not an error.
	DeleteCall(ctx context.Context, id string) error
	// Signal leaves a request for the process that runs the call id.
	Signal(ctx context.Context, id, kind string, body json.RawMessage) error
	// TakeSignals returns the requests left for the calls ids, oldest first, and deletes them; a signal's Target
	// is its call's id.
	TakeSignals(ctx context.Context, ids []string) ([]host.RunSignal, error)
}

// SharedCall is a call paused between rounds, as a CallStore keeps it.
type SharedCall struct {
	// ID is the call's requestState.
	ID string
	// Owner is the Instance of the server that runs the call.
	Owner string
	// Tool and Args are the call's: a retry must carry the same.
	Tool string
	Args json.RawMessage
	// Round counts the rounds that ended with questions.
	Round int
	// State is callWaiting, callRunning or callDone.
	State string
	// Outcome is the last round's *mcp.CallToolResult: its questions, or the call's result when done.
	Outcome json.RawMessage
	Updated time.Time
	// Expires is when the call may be forgotten.
	Expires time.Time
}

// The states of a shared call.
const (
	callWaiting = "waiting" // for the answers to the questions of Round
	callRunning = "running" // on the answers of Round
	callDone    = "done"    // Outcome is the result
)

// The kinds of signals to a call's owner.
const (
	signalAnswers = "answers"
	signalCancel  = "cancel"
)

// answersSignal is the body of a signalAnswers.
type answersSignal struct {
	Round     int                  `json:"round"`
	Responses mcp.InputResponseMap `json:"responses"`
}

const (
	// signalInterval is how often an owner takes the signals of its calls, and a process serving a round for
	// another reads the call's state.
	signalInterval = 200 * time.Millisecond
	// storeTimeout bounds each write to the store that no request's context bounds.
	storeTimeout = 10 * time.Second
)

// ownerWait is how long the answers of a round may wait for the owner to take them before the owner is deemed gone.
// A variable for tests.
var ownerWait = 10 * time.Second

// publish saves the call's state in the store, with the outcome of its last round (nil while running).
func (r *pausedRun) publish(state string, outcome *mcp.CallToolResult) {
	rs := r.rs
	if rs.shared == nil {
		return
	}
	b := json.RawMessage("null")
	if outcome != nil {
		var err error
		if b, err = json.Marshal(outcome); err != nil {
			rs.logger.Warn("mcpserver: a paused call's outcome cannot be shared", "err", err)
			return
		}
	}
	r.mu.Lock()
	round := r.round
	r.mu.Unlock()
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := rs.shared.SaveCall(ctx, &SharedCall{ID: r.id, Owner: rs.instance, Tool: r.tool, Args: r.args, Round: round,
		State: state, Outcome: b, Updated: now, Expires: now.Add(rs.timeout + time.Minute)})
	if err != nil {
		rs.logger.Warn("mcpserver: saving a paused call for the other processes failed; its next round must reach this one", "err", err)
		return
	}
	r.mu.Lock()
	r.saved = true
	r.mu.Unlock()
}

// forget deletes the call from the store, if it was saved there.
func (r *pausedRun) forget() {
	r.mu.Lock()
	saved := r.saved
	r.saved = false
	r.mu.Unlock()
	if !saved {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.rs.shared.DeleteCall(ctx, r.id); err != nil {
		r.rs.logger.Warn("mcpserver: deleting a finished call from the store failed; it expires on its own", "err", err)
	}
}

// watchSignals takes the signals left for the calls of this process by the others, until ctx ends.
func (rs *roundTrips) watchSignals(ctx context.Context) {
	t := time.NewTicker(signalInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rs.takeSignals(ctx)
	}
}

func (rs *roundTrips) takeSignals(ctx context.Context) {
	rs.mu.Lock()
	var ids []string
	for id, r := range rs.runs {
		r.mu.Lock()
		if r.saved {
			ids = append(ids, id)
		}
		r.mu.Unlock()
	}
	rs.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	sigs, err := rs.shared.TakeSignals(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			rs.logger.Warn("mcpserver: reading the signals to paused calls failed", "err", err)
		}
		return
	}
	for _, sig := range sigs {
		rs.mu.Lock()
		r := rs.runs[sig.Target]
		rs.mu.Unlock()
		if r == nil {
			continue
		}
		switch sig.Kind {
		case signalCancel:
			rs.logger.Info("mcpserver: a paused call was cancelled by its caller through another process", "tool", r.tool)
			r.cancel()
		case signalAnswers:
			var a answersSignal
			if err := json.Unmarshal(sig.Body, &a); err != nil {
				rs.logger.Warn("mcpserver: answers through another process are unreadable", "tool", r.tool, "err", err)
				continue
			}
			if err := r.attachRemote(a.Round); err != nil {
				rs.logger.Info("mcpserver: answers through another process were refused", "tool", r.tool, "err", err)
				continue
			}
			r.publish(callRunning, nil)
			r.deliver(a.Responses)
			rs.wg.Go(func() { r.serveRemote() })
		}
	}
}

// attachRemote starts a round served by another process, for the answers to the questions of round.
func (r *pausedRun) attachRemote(round int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.expired:
		return fmt.Errorf("the call waited more than %v for the answers and was cancelled", r.rs.timeout)
	case r.attached:
		return fmt.Errorf("the call is being continued by another request")
	case r.round != round:
		return fmt.Errorf("the answers are to round %d; the call is at round %d", round, r.round)
	}
	r.stopTimerLocked()
	r.attached = true
	return nil
}

// serveRemote serves a round whose request reached another process, and saves its outcome for that process.
func (r *pausedRun) serveRemote() {
	res, err := r.wait(context.Background(), true)
	if err != nil {
		res = toolError("%v", err)
	}
	if res != nil && len(res.InputRequests) == 0 {
		r.publish(callDone, res)
	}
}

// resumeElsewhere serves a retry of a call that another process runs: it hands the answers to the owner, and
// returns the round's outcome when the owner has saved it.
func (rs *roundTrips) resumeElsewhere(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.Params.RequestState
	c, err := rs.shared.LoadCall(ctx, id)
	if err != nil {
		rs.logger.Warn("mcpserver: reading a paused call failed", "err", err)
		return toolError("this call's state could not be read from the state database; try again"), nil
	}
	switch {
	case c == nil || c.Owner == rs.instance || c.Tool != req.Params.Name || !sameJSON(c.Args, req.Params.Arguments):
		return rs.notWaiting(), nil
	case c.State == callDone:
		return rs.outcome(c, true)
	case c.State == callRunning:
		return toolError("this call is being continued by another request"), nil
	}
	round := c.Round
	body, err := json.Marshal(answersSignal{Round: round, Responses: req.Params.InputResponses})
	if err != nil {
		return toolError("the answers cannot be forwarded: %v", err), nil
	}
	if err := rs.shared.Signal(ctx, id, signalAnswers, body); err != nil {
		rs.logger.Warn("mcpserver: forwarding answers to a paused call failed", "err", err)
		return toolError("the answers could not be handed to the agenthost process that runs this call; try again"), nil
	}
	sent := time.Now()
	t := time.NewTicker(signalInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
			if err := rs.shared.Signal(sctx, id, signalCancel, json.RawMessage(`{}`)); err != nil {
				rs.logger.Warn("mcpserver: cancelling a paused call in another process failed", "err", err)
			}
			cancel()
			return nil, ctx.Err()
		case <-t.C:
		}
		c, err := rs.shared.LoadCall(ctx, id)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				rs.logger.Warn("mcpserver: reading a paused call failed", "err", err)
			}
		case c == nil:
			return rs.notWaiting(), nil
		case c.State == callDone:
			return rs.outcome(c, true)
		case c.State == callWaiting && c.Round > round:
			return rs.outcome(c, false)
		case c.State == callWaiting && time.Since(sent) > ownerWait:
			rs.forgetShared(id)
			return toolError("the agenthost process that runs this call did not take the answers within %v: it may have stopped. Call the tool again", ownerWait), nil
		}
	}
}

// outcome returns the outcome saved for c; a final one is then deleted, since it has reached its caller.
func (rs *roundTrips) outcome(c *SharedCall, final bool) (*mcp.CallToolResult, error) {
	if final {
		rs.forgetShared(c.ID)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(c.Outcome, &res); err != nil {
		return toolError("the outcome of this call's round is unreadable: %v", err), nil
	}
	return &res, nil
}

func (rs *roundTrips) forgetShared(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := rs.shared.DeleteCall(ctx, id); err != nil {
		rs.logger.Warn("mcpserver: deleting a paused call failed; it expires on its own", "err", err)
	}
}
