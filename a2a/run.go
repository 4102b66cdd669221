package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
)

// TagPrefix starts the Tag of the runs of tasks: "a2a:<task id>".
const TagPrefix = "a2a"

// run runs the orchestrator for a task and turns its events into the task's updates: WORKING with a message naming
// each tool call as it starts, the answer artifact as the model writes it, and the final state.
func (s *Server) run(ctx context.Context, st *serverTask, prompt string, schema json.RawMessage) {
	s.setStatus(st, stateWorking, nil)
	req := &host.Request{
		OutputSchema:      schema,
		Prompt:            prompt,
		ConversationID:    host.OwnedConversationID(st.contextID, st.subject),
		StartConversation: true,
		Interactor:        &taskInteractor{s: s, st: st},
		Tag:               TagPrefix + ":" + st.id,
	}
	var ans *host.Answer
	var runErr error
	for ev, err := range s.opts.Run(host.WithSubject(host.WithOrigin(ctx, "a2a"), st.subject), req) {
		if err != nil {
			runErr = err
			break
		}
		s.event(st, ev)
		if ev.Kind == host.EventAnswer {
			ans = ev.Answer
		}
	}
	s.finish(ctx, st, ans, runErr)
}

// Resume takes back the task of a run that a durable engine resumes after a crash, named by the run's tag: the task
// is WORKING again, in this process, and gets the run's events. cancel cancels the run (CancelTask). It returns
// false when the server has no such task.
func (s *Server) Resume(ctx context.Context, tag string, cancel context.CancelCauseFunc) (ia host.Interactor, event func(*host.Event), end func(*host.Answer, error), ok bool) {
	id, found := strings.CutPrefix(tag, TagPrefix+":")
	if !found {
		return nil, nil, nil, false
	}
	st, rerr := s.store.get(ctx, id)
	if rerr != nil {
		s.logger.Warn("a2a: a resumed run's task is gone", "task", id, "err", rerr.Message)
		return nil, nil, nil, false
	}
	if !st.stored { // already live here: nothing to take back
		return nil, nil, nil, false
	}
	st.stored, st.cancel = false, cancel
	st.done = make(chan struct{})
	st.t.Artifacts = nil // the answer streams again
	if err := s.store.add(st); err != nil {
		s.logger.Warn("a2a: cannot take back a resumed run's task", "task", id, "err", err.Message)
		return nil, nil, nil, false
	}
	s.logger.Info("a2a: resuming the run of a task interrupted by a crash", "task", id)
	s.setStatus(st, stateWorking, nil)
	return &taskInteractor{s: s, st: st}, func(ev *host.Event) { s.event(st, ev) }, func(ans *host.Answer, err error) {
		s.finish(ctx, st, ans, err)
		close(st.done)
	}, true
}

// event takes one event of the run into the task.
func (s *Server) event(st *serverTask, ev *host.Event) {
	switch ev.Kind {
	case host.EventIteration:
		s.store.update(st, func(t *serverTask) *streamResponse {
			// Text written in an iteration that went on to call tools was the model thinking aloud: the answer
			// starts again with the next text.
			t.answerReset = t.answerText.Len() > 0
			return nil
		})
	case host.EventTextDelta:
		s.store.update(st, func(t *serverTask) *streamResponse {
			appendChunk := t.answerSent && !t.answerReset
			if t.answerReset {
				t.answerText.Reset()
				t.answerReset = false
			}
			t.answerText.WriteString(ev.Text)
			t.answerSent = true
			t.setAnswerText(t.answerText.String())
			if !t.streamed() {
				return nil // a chunk is an event for streams only; the others see the artifact as it is now
			}
			return &streamResponse{ArtifactUpdate: &artifactUpdate{
				TaskID: t.id, ContextID: t.contextID, Append: appendChunk,
				Artifact: artifact{ArtifactID: answerArtifactID(t), Name: "answer", Parts: []part{textPart(ev.Text)}},
			}}
		})
	case host.EventToolStart:
		tc := ev.ToolCall
		s.setStatus(st, stateWorking, agentText(st, fmt.Sprintf("Calling %s (%s) with %s", tc.Name, tc.Source, clip(string(tc.Arguments), 500))))
	case host.EventToolProgress:
		if tc := ev.ToolCall; tc.Progress != nil && tc.Progress.Message != "" {
			s.setStatus(st, stateWorking, agentText(st, fmt.Sprintf("%s: %s", tc.Name, clip(tc.Progress.Message, 500))))
		}
	case host.EventToolEnd:
		if info := ev.ToolCall.Info; info != nil && !info.OK {
			s.setStatus(st, stateWorking, agentText(st, fmt.Sprintf("%s failed: %s", info.Name, clip(info.Error, 500))))
		}
	case host.EventCheck:
		c := ev.Check
		outcome := "passed"
		if !c.Passed {
			outcome = "failed"
		}
		if c.Detail != "" {
			outcome += ": " + clip(c.Detail, 500)
		}
		s.setStatus(st, stateWorking, agentText(st, fmt.Sprintf("Check %s %s", c.Name, outcome)))
	}
}

// finish ends the task with the run's outcome: the answer artifact's last chunk (the rest of its text, a url part
// per reference, and the answer's details in its metadata), then the final state.
//
// The task's place is given back first: whoever sees the final state (a blocking send's answer, CancelTask's) may
// send the next task at once without meeting this one's place.
func (s *Server) finish(ctx context.Context, st *serverTask, ans *host.Answer, runErr error) {
	if st.release != nil {
		st.release()
	}
	if ans == nil {
		state, msg := stateFailed, "The run failed."
		if runErr != nil {
			msg = "The run failed: " + runErr.Error()
		}
		if ctx.Err() != nil {
			state, msg = stateCanceled, cancelMessage(ctx)
		}
		s.setStatus(st, state, agentText(st, msg))
		return
	}
	tail, meta := referenceParts(ans), answerMetadata(ans)
	s.store.update(st, func(t *serverTask) *streamResponse {
		chunk := artifactUpdate{TaskID: t.id, ContextID: t.contextID, LastChunk: true}
		streamed := t.answerText.String()
		if rest, ok := strings.CutPrefix(ans.Text, streamed); ok && t.answerSent && !t.answerReset {
			chunk.Append = true
			if rest != "" {
				chunk.Artifact.Parts = append(chunk.Artifact.Parts, textPart(rest))
			}
		} else {
			chunk.Artifact.Parts = append(chunk.Artifact.Parts, textPart(ans.Text))
		}
		chunk.Artifact.Parts = append(chunk.Artifact.Parts, tail...)
		chunk.Artifact.ArtifactID, chunk.Artifact.Name, chunk.Artifact.Metadata = answerArtifactID(t), "answer", meta
		t.setAnswer(append([]part{textPart(ans.Text)}, tail...), meta)
		return &streamResponse{ArtifactUpdate: &chunk}
	})
	switch ans.StoppedBy {
	case host.StopCancelled:
		s.setStatus(st, stateCanceled, agentText(st, cancelMessage(ctx)))
	case host.StopError:
		s.setStatus(st, stateFailed, agentText(st, ans.Text))
	default:
		s.setStatus(st, stateCompleted, nil)
	}
}

// cancelMessage says why a run's context ended.
func cancelMessage(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCanceledByCaller):
		return "The task was canceled by its caller."
	case errors.Is(cause, errInputTimeout):
		return cause.Error()
	}
	return "The task was canceled: the server is shutting down."
}

// setStatus moves the task to state with an optional agent message, kept in the history, and tells the listeners.
func (s *Server) setStatus(st *serverTask, state taskState, msg *message) {
	s.store.update(st, func(t *serverTask) *streamResponse {
		t.t.Status = taskStatus{State: state, Message: msg, Timestamp: timestamp(s.opts.now())}
		if msg != nil && (state.terminal() || state.interrupted()) {
			t.t.History = append(t.t.History, *msg)
		}
		return &streamResponse{StatusUpdate: &statusUpdate{
			TaskID: t.id, ContextID: t.contextID, Status: t.t.Status,
			Final: state.terminal() || state.interrupted(),
		}}
	})
}

// setAnswer makes parts, with metadata, the answer artifact of the task, as GetTask shows it.
func (t *serverTask) setAnswer(parts []part, metadata json.RawMessage) {
	a := artifact{ArtifactID: answerArtifactID(t), Name: "answer", Parts: parts, Metadata: metadata}
	t.t.Artifacts = mergeArtifact(t.t.Artifacts, a, false)
}

// setAnswerText makes text the answer artifact's only part. While the answer streams, the part is replaced in place:
// the store's artifacts are its own (snapshots and events copy the parts).
func (t *serverTask) setAnswerText(text string) {
	id := answerArtifactID(t)
	for i := range t.t.Artifacts {
		if a := &t.t.Artifacts[i]; a.ArtifactID == id && len(a.Parts) == 1 && a.Parts[0].Kind == partText {
			a.Parts[0] = textPart(text)
			return
		}
	}
	t.setAnswer([]part{textPart(text)}, nil)
}

// streamed reports whether a stream listens to the task's events (a blocking send waits for the end alone).
func (t *serverTask) streamed() bool {
	for sub := range t.subs {
		if !sub.endOnly {
			return true
		}
	}
	return false
}

// answerArtifactID names a task's answer artifact.
func answerArtifactID(t *serverTask) string { return t.id + "-answer" }

// agentText is a message from the agent with one text part, in the task's context.
func agentText(st *serverTask, text string) *message {
	return &message{MessageID: newID(), Role: roleAgent, Parts: []part{textPart(text)}, ContextID: st.contextID, TaskID: st.id}
}

// referenceParts returns the structured answer as a data part of its own (application/json), when there is one, and
// a url part per reference with a URI (its title as the file name): what a client shows of the answer besides its
// text. The answer's details are in the artifact's metadata (answerMetadata), where a client that renders every
// part (ADK) does not glue them to the text.
func referenceParts(ans *host.Answer) []part {
	var out []part
	if len(ans.Output) > 0 {
		out = append(out, part{Kind: partData, Data: ans.Output, MediaType: "application/json"})
	}
	for _, ref := range ans.References {
		if ref.URI != "" {
			out = append(out, part{Kind: partURL, URL: ref.URI, Filename: ref.Title})
		}
	}
	return out
}

// answerMetadata returns the answer artifact's metadata: the answer's details under answerMediaType, its summary
// with each tool call's source and error (clipped), which another agenthost reads back as the answer's references
// and debug summary.
func answerMetadata(ans *host.Answer) json.RawMessage {
	d := ans.Summary(host.SummaryOptions{ToolDetails: true})
	for i := range d.ToolCalls {
		d.ToolCalls[i].Error = clip(d.ToolCalls[i].Error, 500)
	}
	return mustJSON(map[string]any{answerMediaType: d})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// errInputTimeout ends a run whose caller did not answer its question in time.
var errInputTimeout = errors.New("no answer came to the question in time; the task was canceled")

// taskInteractor asks the task's caller through the INPUT_REQUIRED state: the question is the status message, and
// the caller's next message on the task is the answer. Questions are asked one at a time.
type taskInteractor struct {
	s  *Server
	st *serverTask
	mu sync.Mutex
}

var _ host.Interactor = (*taskInteractor)(nil)

// question is what a task waits on in INPUT_REQUIRED.
type question struct {
	approval bool // else: structured input (an elicitation)
	answers  chan answer
}

type answer struct {
	approved bool
	input    *host.ElicitResult
}

func (ia *taskInteractor) Approve(ctx context.Context, req *host.ApprovalRequest) (bool, error) {
	text := fmt.Sprintf("The agent wants to call %s (%s) with these arguments:\n%s\nReply \"approve\" or \"deny\" (or send a data part {\"approved\": true|false}).", req.Tool, req.Source, clip(string(req.Arguments), 2000))
	data := mustJSON(map[string]any{"approval": map[string]any{"tool": req.Tool, "source": req.Source, "arguments": json.RawMessage(orDefault(string(req.Arguments), "{}"))}})
	a, err := ia.ask(ctx, &question{approval: true, answers: make(chan answer, 1)}, text, data)
	if err != nil {
		return false, err
	}
	return a.approved, nil
}

func (ia *taskInteractor) Elicit(ctx context.Context, req *host.ElicitRequest) (*host.ElicitResult, error) {
	text := req.Message
	if req.Source != "" {
		text = fmt.Sprintf("%s (asked by %s)", req.Message, req.Source)
	}
	text += "\nReply with a data part (or a JSON object as text) matching the schema, or \"decline\" or \"cancel\"."
	data := mustJSON(map[string]any{"input": map[string]any{"schema": json.RawMessage(orDefault(string(req.Schema), "{}"))}})
	a, err := ia.ask(ctx, &question{answers: make(chan answer, 1)}, text, data)
	if err != nil {
		return nil, err
	}
	return a.input, nil
}

// ask puts the task in INPUT_REQUIRED with the question and waits for the answer, for ctx, or for the input
// timeout, which cancels the run.
func (ia *taskInteractor) ask(ctx context.Context, q *question, text string, data []byte) (answer, error) {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	s, st := ia.s, ia.st
	msg := agentText(st, text)
	msg.Parts = append(msg.Parts, part{Kind: partData, Data: data})
	s.store.update(st, func(t *serverTask) *streamResponse {
		t.waiting = q
		return nil
	})
	s.setStatus(st, stateInputRequired, msg)
	timer := time.NewTimer(s.opts.InputTimeout)
	defer timer.Stop()
	var giveUp error
	select {
	case a := <-q.answers:
		return a, nil
	case <-ctx.Done():
		giveUp = ctx.Err()
	case <-timer.C:
		giveUp = errInputTimeout
	}
	if !ia.unask(q) {
		return <-q.answers, nil // the answer was taken just now: it is on its way
	}
	if errors.Is(giveUp, errInputTimeout) {
		st.cancel(errInputTimeout)
	}
	s.setStatus(st, stateWorking, nil)
	return answer{}, giveUp
}

// unask withdraws q, unless an answer claimed it first. It reports whether q was withdrawn.
func (ia *taskInteractor) unask(q *question) bool {
	withdrawn := false
	ia.s.store.update(ia.st, func(t *serverTask) *streamResponse {
		if t.waiting == q {
			t.waiting, withdrawn = nil, true
		}
		return nil
	})
	return withdrawn
}

// parse reads the caller's message as the answer to q.
func (q *question) parse(m message) (answer, *rpcError) {
	var obj map[string]json.RawMessage
	for _, p := range m.Parts {
		if p.Kind == partData && json.Unmarshal(p.Data, &obj) == nil && obj != nil {
			break
		}
		obj = nil
	}
	text := strings.ToLower(strings.Trim(strings.TrimSpace(partsText(m.Parts)), ".!"))
	if q.approval {
		if obj != nil {
			var v struct {
				Approved *bool `json:"approved"`
			}
			if b, _ := json.Marshal(obj); json.Unmarshal(b, &v) == nil && v.Approved != nil {
				return answer{approved: *v.Approved}, nil
			}
		}
		switch text {
		case "approve", "approved", "yes", "y", "allow", "ok":
			return answer{approved: true}, nil
		case "deny", "denied", "no", "n", "reject":
			return answer{approved: false}, nil
		}
		return answer{}, newError(codeInvalidParams, `the task waits for an approval: reply "approve" or "deny", or send a data part {"approved": true|false}`)
	}
	switch text {
	case "decline":
		return answer{input: &host.ElicitResult{Action: host.ElicitDecline}}, nil
	case "cancel":
		return answer{input: &host.ElicitResult{Action: host.ElicitCancel}}, nil
	}
	if obj == nil {
		_ = json.Unmarshal([]byte(strings.TrimSpace(partsText(m.Parts))), &obj)
	}
	if obj == nil {
		return answer{}, newError(codeInvalidParams, `the task waits for input: send a data part (or a JSON object as text) matching the schema, or "decline" or "cancel"`)
	}
	content := map[string]any{}
	for k, v := range obj {
		var x any
		_ = json.Unmarshal(v, &x)
		content[k] = x
	}
	return answer{input: &host.ElicitResult{Action: host.ElicitAccept, Content: content}}, nil
}
