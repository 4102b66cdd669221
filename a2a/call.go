package a2a

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
)

// peerTool is the tool of a resolved peer.
type peerTool struct {
	peer *Peer
	spec host.ToolSpec
}

var _ host.Tool = (*peerTool)(nil)

func (t *peerTool) Spec() host.ToolSpec { return t.spec }

// Call sends the model's message to the peer and returns what the peer made of it. A streaming peer's status
// messages and artifact chunks are relayed as progress; a task the peer has not finished is polled. The peer's
// context is kept per conversation, and a task that waits for input is continued by the next call in the same
// conversation. When ctx ends or the peer's timeout passes first, the task is cancelled on the peer.
func (t *peerTool) Call(ctx context.Context, args json.RawMessage, call *host.Call) (*host.Result, error) {
	p := t.peer
	var in struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Message) == "" {
		return errorResult(`%s needs {"message": "<what to ask the agent>"}`, p.cfg.Name), nil
	}
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c == nil {
		return errorResult("the A2A agent %q is not reachable", p.cfg.Name), nil
	}

	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel) // closing the peers ends the call
	defer stop()

	conv := ""
	if call != nil {
		conv = call.ConversationID
	}
	prev := p.contexts.take(conv)
	x := &exchange{peer: p, conn: c, call: call, resumed: prev.taskID}
	m := message{MessageID: newID(), Role: roleUser, Parts: []part{textPart(in.Message)}, ContextID: prev.contextID, TaskID: prev.taskID}
	err := x.run(ctx, m)
	p.contexts.put(conv, x.next(prev))

	if x.task != nil && !x.task.Status.State.terminal() && !x.task.Status.State.interrupted() && ctx.Err() != nil {
		x.cancelOnPeer(ctx)
	}
	switch {
	case outer.Err() != nil:
		return nil, outer.Err()
	case p.ctx.Err() != nil:
		return errorResult("the A2A agent %q: agenthost is shutting down; the call was cancelled", p.cfg.Name), nil
	case ctx.Err() != nil:
		return errorResult("the A2A agent %q did not finish the task within %s; it was cancelled", p.cfg.Name, p.cfg.Timeout), nil
	case err != nil:
		return x.failure(err), nil
	}
	return x.result(), nil
}

// exchange is one call's conversation with a peer: the task (or message) as the peer's events and replies made it.
type exchange struct {
	peer *Peer
	conn *conn
	call *host.Call

	task     *task    // the task so far, artifacts merged; nil for a message reply
	message  *message // the peer's reply, when it answered with a message
	progress float64
	// resumed is the id of the interrupted task this call's message answers, until the peer sends news of it: a
	// stream opens with the task as it was (still input-required), which is the question answered, not a new one.
	resumed string
}

// run sends m and follows the task to a terminal or interrupted state: by stream when the peer streams, then by
// polling while the task is not done.
func (x *exchange) run(ctx context.Context, m message) error {
	if x.conn.ep.Streaming {
		err := x.conn.stream(ctx, m, x.apply)
		x.resumed = "" // the stream is over: what it said last is the task's state
		if err != nil && (x.task == nil || ctx.Err() != nil) {
			return err
		}
		if err != nil {
			x.peer.logger.Warn("A2A stream broke; polling the task", "task", x.task.ID, "err", err)
		}
	} else {
		res, err := x.conn.send(ctx, m)
		if err != nil {
			return err
		}
		x.resumed = "" // a blocking reply is the state after the message
		x.apply(res)
	}
	return x.poll(ctx)
}

// poll asks for the task every poll interval until it is done or waits for input.
func (x *exchange) poll(ctx context.Context) error {
	if x.message != nil || x.task == nil {
		return nil
	}
	t := time.NewTimer(x.peer.cfg.PollInterval)
	defer t.Stop()
	for !x.done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		got, err := x.conn.getTask(ctx, x.task.ID)
		if err != nil {
			return err
		}
		x.apply(&streamResponse{Task: got})
		t.Reset(x.peer.cfg.PollInterval)
	}
	return nil
}

// done reports whether the exchange has its outcome.
func (x *exchange) done() bool {
	if x.message != nil {
		return true
	}
	return x.task != nil && (x.task.Status.State.terminal() || (x.task.Status.State.interrupted() && x.resumed == ""))
}

// apply takes one reply or event into the exchange, relaying its news as progress. It reports whether to go on
// reading a stream.
func (x *exchange) apply(r *streamResponse) bool {
	switch {
	case r.Message != nil:
		x.message = r.Message
		return false
	case r.Task != nil:
		old := x.task
		t := *r.Task
		x.task = &t
		if t.ID != x.resumed || !t.Status.State.interrupted() {
			x.resumed = ""
		}
		if old == nil || old.Status.State != t.Status.State || statusText(old.Status) != statusText(t.Status) {
			x.report(t.Status)
		}
	case r.StatusUpdate != nil:
		u := r.StatusUpdate
		x.resumed = ""
		x.ensureTask(u.TaskID, u.ContextID)
		x.task.Status = u.Status
		x.report(u.Status)
		if u.Final {
			return false
		}
	case r.ArtifactUpdate != nil:
		u := r.ArtifactUpdate
		x.resumed = ""
		x.ensureTask(u.TaskID, u.ContextID)
		x.task.Artifacts = mergeArtifact(x.task.Artifacts, u.Artifact, u.Append)
		if s := partsText(u.Artifact.Parts); s != "" {
			x.progressf("%s", s)
		}
	}
	return !x.done()
}

func (x *exchange) ensureTask(id, contextID string) {
	if x.task == nil {
		x.task = &task{ID: id, ContextID: contextID, Status: taskStatus{State: stateSubmitted}}
	}
}

// report relays a status as progress: its state and its message's text.
func (x *exchange) report(s taskStatus) {
	if text := statusText(s); text != "" {
		x.progressf("%s: %s", s.State.short(), text)
	} else {
		x.progressf("%s", s.State.short())
	}
}

func (x *exchange) progressf(format string, args ...any) {
	x.progress++
	msg := fmt.Sprintf(format, args...)
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	x.call.ReportProgress(host.Progress{Progress: x.progress, Message: msg})
}

// mergeArtifact applies an artifact chunk: with append, its parts go after those of the artifact of the same id;
// without, it replaces that artifact or is added.
func mergeArtifact(arts []artifact, a artifact, appendParts bool) []artifact {
	for i := range arts {
		if arts[i].ArtifactID == a.ArtifactID {
			if appendParts {
				arts[i].Parts = append(arts[i].Parts, a.Parts...)
				if a.Metadata != nil { // an agenthost's answer details come with the last chunk
					arts[i].Metadata = a.Metadata
				}
			} else {
				arts[i] = a
			}
			return arts
		}
	}
	return append(arts, a)
}

// cancelOnPeer sends CancelTask for the exchange's task, bounded on its own: the call's context has ended.
func (x *exchange) cancelOnPeer(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := x.conn.cancelTask(ctx, x.task.ID); err != nil {
		x.peer.logger.Warn("A2A task could not be cancelled on the peer", "task", x.task.ID, "err", err)
		return
	}
	x.peer.logger.Info("A2A task cancelled on the peer", "task", x.task.ID)
}

// next returns the peer context to keep for the conversation after this exchange: the peer's context id, and the
// task id when the task waits for input, so that the next call continues it.
func (x *exchange) next(prev peerContext) peerContext {
	out := peerContext{contextID: prev.contextID}
	switch {
	case x.message != nil:
		out.contextID = cmp.Or(x.message.ContextID, out.contextID)
	case x.task != nil:
		out.contextID = cmp.Or(x.task.ContextID, out.contextID)
		if x.task.Status.State.interrupted() {
			out.taskID = x.task.ID
		}
	}
	return out
}

// failure turns an error of the exchange into the result the model reads.
func (x *exchange) failure(err error) *host.Result {
	var rpc *rpcError
	if errors.As(err, &rpc) {
		return errorResult("the A2A agent %q answered with an error: %s", x.peer.cfg.Name, rpc.Error())
	}
	return errorResult("the A2A agent %q could not be reached: %v", x.peer.cfg.Name, redact.Error(err))
}

// result is what the model reads of the exchange's outcome.
func (x *exchange) result() *host.Result {
	name := x.peer.cfg.Name
	if x.message != nil {
		r := content([]contentGroup{{parts: x.message.Parts}})
		if r.Text == "" && r.Structured == nil && len(r.References) == 0 {
			r.Text = fmt.Sprintf("The agent %q answered with an empty message.", name)
		}
		r.Debug = map[string]any{"peer": name, "context_id": x.message.ContextID, "reply": "message", "protocol": x.conn.ep.Version.String()}
		return r
	}
	t := x.task
	groups := make([]contentGroup, 0, len(t.Artifacts)+1)
	for _, a := range t.Artifacts {
		groups = append(groups, contentGroup{name: a.Name, parts: a.Parts, details: answerDetails(a.Metadata)})
	}
	status := statusText(t.Status)
	var r *host.Result
	switch t.Status.State {
	case stateCompleted:
		if status != "" {
			groups = append(groups, contentGroup{parts: []part{textPart(status)}})
		}
		r = content(groups)
		if r.Text == "" && r.Structured == nil && len(r.References) == 0 {
			r.Text = fmt.Sprintf("The agent %q completed the task without output.", name)
		}
	case stateFailed, stateRejected, stateCanceled:
		r = &host.Result{IsError: true, Text: fmt.Sprintf("The agent %q %s the task: %s", name, verb(t.Status.State), cmp.Or(status, "it gave no reason"))}
	case stateInputRequired, stateAuthRequired:
		r = content(groups)
		need := "more input"
		if t.Status.State == stateAuthRequired {
			need = "authentication"
		}
		ask := fmt.Sprintf("The agent %q needs %s to go on with its task: %s\nTo answer, call %s again with the answer as the message; it continues the same task.", name, need, cmp.Or(status, "it did not say what"), name)
		r.Text = strings.TrimSpace(ask + "\n\n" + r.Text)
	default:
		r = &host.Result{IsError: true, Text: fmt.Sprintf("The agent %q left the task in state %s.", name, t.Status.State.short())}
	}
	r.Debug = map[string]any{"peer": name, "task_id": t.ID, "context_id": t.ContextID, "state": t.Status.State.short(), "protocol": x.conn.ep.Version.String()}
	return r
}

func verb(s taskState) string {
	switch s {
	case stateFailed:
		return "failed"
	case stateRejected:
		return "rejected"
	}
	return "canceled"
}

func statusText(s taskStatus) string {
	if s.Message == nil {
		return ""
	}
	return strings.TrimSpace(partsText(s.Message.Parts))
}

// answerMediaType names the details of an agenthost answer (references, usage, tool calls): the key of the answer
// artifact's metadata that holds them (see the server), and the media type of the data part older agenthosts sent
// them in. They are kept as structured output rather than shown to the model, which reads the same references from
// the url parts.
const answerMediaType = "application/vnd.agenthost.answer+json"

// answerDetails returns the answer details an artifact's metadata holds, or nil.
func answerDetails(metadata json.RawMessage) json.RawMessage {
	if len(metadata) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return nil
	}
	return m[answerMediaType]
}

// contentGroup is the parts of one artifact or message, and the agenthost answer details of its metadata.
type contentGroup struct {
	name    string
	parts   []part
	details json.RawMessage
}

// content converts parts into a Result: text parts joined within a group (streamed chunks add up), groups as
// paragraphs; url parts (v0.3 file parts with a uri) as references; raw bytes as media with a placeholder; data parts
// as JSON text, except an agenthost answer's details (in the group's metadata, or from an older agenthost in a data
// part), which become the structured output.
func content(groups []contentGroup) *host.Result {
	r := &host.Result{}
	var paras []string
	var data []json.RawMessage
	for _, g := range groups {
		if g.details != nil {
			data = append(data, g.details)
		}
		var text strings.Builder
		var lines []string
		for _, p := range g.parts {
			switch p.Kind {
			case partText:
				text.WriteString(p.Text)
			case partURL:
				title := cmp.Or(p.Filename, g.name, p.URL)
				r.References = append(r.References, host.Reference{Title: title, URI: p.URL})
				lines = append(lines, host.LinkPlaceholder(title, p.URL))
			case partRaw:
				kind := "blob"
				switch {
				case strings.HasPrefix(p.MediaType, "image/"):
					kind = "image"
				case strings.HasPrefix(p.MediaType, "audio/"):
					kind = "audio"
				}
				m := host.Media{Type: kind, MIMEType: p.MediaType, Data: p.Raw}
				r.Media = append(r.Media, m)
				lines = append(lines, m.Placeholder())
			case partData:
				if p.MediaType == answerMediaType {
					data = append(data, p.Data)
					continue
				}
				var b bytes.Buffer
				if json.Compact(&b, p.Data) != nil {
					b.Reset()
					b.Write(p.Data)
				}
				lines = append(lines, b.String())
			}
		}
		if s := strings.TrimSpace(text.String()); s != "" {
			paras = append(paras, s)
		}
		paras = append(paras, lines...)
	}
	r.Text = strings.Join(paras, "\n\n")
	switch len(data) {
	case 0:
	case 1:
		r.Structured = data[0]
	default:
		r.Structured, _ = json.Marshal(data) // valid JSON values: cannot fail
	}
	return r
}

func errorResult(format string, args ...any) *host.Result {
	return &host.Result{IsError: true, Text: fmt.Sprintf(format, args...)}
}

// newID returns a random id: 16 bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// peerContext is what a peer's tool keeps of one conversation: the peer's context, and the task that waits for
// input, if any.
type peerContext struct {
	contextID string
	taskID    string
}

// contextStore keeps the peer contexts per conversation, bounded in count and idle time like the conversations.
type contextStore struct {
	mu   sync.Mutex
	byID map[string]*storedContext
	max  int
	ttl  time.Duration
	now  func() time.Time
}

type storedContext struct {
	peerContext
	used time.Time
}

func newContextStore() *contextStore {
	return &contextStore{byID: map[string]*storedContext{}, max: 10000, ttl: time.Hour, now: time.Now}
}

// take returns the conversation's peer context and forgets its waiting task: one call continues it, not two.
func (s *contextStore) take(conv string) peerContext {
	if conv == "" {
		return peerContext{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byID[conv]
	if !ok || s.now().Sub(c.used) > s.ttl {
		return peerContext{}
	}
	out := c.peerContext
	c.taskID = ""
	return out
}

// put keeps pc for the conversation, dropping idle entries, then the least recently used, beyond the bound.
func (s *contextStore) put(conv string, pc peerContext) {
	if conv == "" || pc == (peerContext{}) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.byID[conv] = &storedContext{peerContext: pc, used: now}
	if len(s.byID) <= s.max {
		return
	}
	var oldest string
	for id, c := range s.byID {
		if now.Sub(c.used) > s.ttl {
			delete(s.byID, id)
			continue
		}
		if oldest == "" || c.used.Before(s.byID[oldest].used) {
			oldest = id
		}
	}
	if len(s.byID) > s.max {
		delete(s.byID, oldest)
	}
}
