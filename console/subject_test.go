package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/runlog"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
)

var (
	asAlice = []string{"Authorization", "Bearer " + aliceToken}
	asBob   = []string{"Authorization", "Bearer " + bobToken}
	asOwner = []string{"Authorization", "Bearer " + staticToken}
)

// memTasks is a Tasks in memory, each task of a subject.
type memTasks struct{ bySubject map[string][]TaskSummary }

func (m *memTasks) List(_ context.Context, subject string) ([]TaskSummary, error) {
	return m.bySubject[subject], nil
}

func (m *memTasks) Get(_ context.Context, subject, id string) (json.RawMessage, error) {
	for _, t := range m.bySubject[subject] {
		if t.ID == id {
			return json.RawMessage(`{"id":"` + id + `"}`), nil
		}
	}
	return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
}

// subjectsFixture is a console with the callers alice and bob ([serve] auth_tokens_env) and the operator's static
// token.
func subjectsFixture(t *testing.T, edit func(*Options)) *fixture {
	return newFixture(t, func(o *Options) {
		o.Token = staticToken
		o.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
		if edit != nil {
			edit(o)
		}
	})
}

func TestConversationsScopedToTheSubject(t *testing.T) {
	aliceConv := host.OwnedConversationID("c1", "alice")
	bobConv := host.OwnedConversationID("c2", "bob")
	convs := &memConversations{m: map[string]*host.Conversation{
		aliceConv: {ID: aliceConv, Messages: []llm.Message{{Role: llm.RoleUser, Content: "alice's medical question"}}},
		bobConv:   {ID: bobConv},
		"c3":      {ID: "c3"}, // a caller not told apart's
	}}
	f := subjectsFixture(t, func(o *Options) { o.Conversations = convs })

	if resp, b := f.do(t, "GET", "/api/conversations/"+aliceConv, "", asBob...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob reads alice's conversation: %d %s", resp.StatusCode, b)
	}
	if resp, _ := f.do(t, "DELETE", "/api/conversations/"+aliceConv, "", asBob...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob deletes alice's conversation: %d", resp.StatusCode)
	}
	if _, ok := convs.m[aliceConv]; !ok {
		t.Fatal("bob deleted alice's conversation")
	}
	_, b := f.do(t, "GET", "/api/conversations", "", asBob...)
	if !strings.Contains(string(b), bobConv) || strings.Contains(string(b), aliceConv) || strings.Contains(string(b), `"c3"`) {
		t.Errorf("bob lists %s", b)
	}
	// Continuing another's conversation is refused before the model is asked.
	body := `{"message":"what did she ask?","conversation_id":"` + aliceConv + `"}`
	if resp, b := f.do(t, "POST", "/api/chat", body, asBob...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob continues alice's conversation: %d %s", resp.StatusCode, b)
	}
	if n := len(f.llm.Requests()); n != 0 {
		t.Errorf("the refused chat reached the model: %d requests", n)
	}
	// Alice sees hers; the operator sees every one.
	if resp, b := f.do(t, "GET", "/api/conversations/"+aliceConv, "", asAlice...); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(b), "medical question") {
		t.Errorf("alice reads her conversation: %d %s", resp.StatusCode, b)
	}
	_, b = f.do(t, "GET", "/api/conversations", "", asOwner...)
	for _, id := range []string{aliceConv, bobConv, "c3"} {
		if !strings.Contains(string(b), id) {
			t.Errorf("the operator does not list %s: %s", id, b)
		}
	}
	if resp, _ := f.do(t, "DELETE", "/api/conversations/"+bobConv, "", asBob...); resp.StatusCode != http.StatusNoContent {
		t.Errorf("bob deletes his conversation: %d", resp.StatusCode)
	}
}

func TestChatStartsAConversationOwnedByTheSubject(t *testing.T) {
	f := subjectsFixture(t, nil)
	f.llm.Enqueue(fakellm.Turn{Text: "hello alice"})
	resp, b := f.do(t, "POST", "/api/chat", `{"message":"hi"}`, asAlice...)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	end := f.followAs(t, r.RunID, asAlice)
	if !host.OwnsConversation(end.ConversationID, "alice") || host.OwnsConversation(end.ConversationID, "bob") {
		t.Errorf("alice's run's conversation %q is not hers alone", end.ConversationID)
	}
	if sum, _, _ := f.runs.Run(r.RunID, 0); sum.Subject != "alice" {
		t.Errorf("the run's subject is %q", sum.Subject)
	}
}

// followAs reads the run's event stream, with headers, until "end", and returns its summary.
func (f *fixture) followAs(t *testing.T, id string, headers []string) runlog.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/runs/"+id+"/events", nil)
	req.Header.Set(headers[0], headers[1])
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET events: %d", resp.StatusCode)
	}
	for ev := range readSSE(t, resp.Body) {
		if ev.name == "end" {
			var s runlog.Summary
			if err := json.Unmarshal(ev.data, &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatal("the event stream ended without an end event")
	return runlog.Summary{}
}

func TestRunsScopedToTheSubject(t *testing.T) {
	f := subjectsFixture(t, nil)
	// Alice's console run waits for her approval.
	f.llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{}`}}},
		fakellm.Turn{Text: "done"},
	)
	resp, b := f.do(t, "POST", "/api/chat", `{"message":"do the risky thing"}`, asAlice...)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(b, &r)
	id := r.RunID
	question := waitQuestion(t, f, id)
	// An MCP run made for alice.
	f.llm.Enqueue(fakellm.Turn{Text: "over MCP"})
	if _, err := f.orch.Ask(host.WithSubject(host.WithOrigin(t.Context(), "mcp"), "alice"), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	var mcpRun string
	for _, s := range f.runs.Runs() {
		if s.Origin == "mcp" {
			mcpRun = s.ID
		}
	}

	// Bob sees neither, and can neither follow, answer nor cancel alice's run.
	_, b = f.do(t, "GET", "/api/runs", "", asBob...)
	if strings.Contains(string(b), id) || strings.Contains(string(b), mcpRun) {
		t.Errorf("bob lists alice's runs: %s", b)
	}
	for _, p := range []string{"/api/runs/" + id, "/api/runs/" + mcpRun, "/api/runs/" + id + "/events"} {
		if resp, b := f.do(t, "GET", p, "", asBob...); resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob GET %s: %d %s", p, resp.StatusCode, b)
		}
	}
	answer := `{"id":"` + question + `","approved":true}`
	if resp, _ := f.do(t, "POST", "/api/runs/"+id+"/answer", answer, asBob...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob answers alice's question: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "POST", "/api/runs/"+id+"/cancel", "", asBob...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob cancels alice's run: %d", resp.StatusCode)
	}
	if got := f.danger.Load(); got != 0 {
		t.Fatalf("bob's answer ran the tool %d times", got)
	}
	// Alice and the operator see both.
	for _, who := range [][]string{asAlice, asOwner} {
		_, b := f.do(t, "GET", "/api/runs", "", who...)
		if !strings.Contains(string(b), id) || !strings.Contains(string(b), mcpRun) {
			t.Errorf("%s lists %s", who[1], b)
		}
	}
	if resp, b := f.do(t, "POST", "/api/runs/"+id+"/answer", answer, asAlice...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("alice answers: %d %s", resp.StatusCode, b)
	}
	if end := f.followAs(t, id, asAlice); end.Status == runlog.StatusRunning || f.danger.Load() != 1 {
		t.Errorf("alice's approved run ended %+v, the tool ran %d times", end, f.danger.Load())
	}
}

func TestLiveRunsScopedToTheSubject(t *testing.T) {
	f := subjectsFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/runs/live", nil)
	req.Header.Set(asBob[0], asBob[1])
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	f.llm.Enqueue(fakellm.Turn{Text: "for alice"})
	if _, err := f.orch.Ask(host.WithSubject(host.WithOrigin(t.Context(), "mcp"), "alice"), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	f.llm.Enqueue(fakellm.Turn{Text: "for bob"})
	if _, err := f.orch.Ask(host.WithSubject(host.WithOrigin(t.Context(), "mcp"), "bob"), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	var bobRun string
	for _, s := range f.runs.Runs() {
		if s.Subject == "bob" {
			bobRun = s.ID
		}
	}
	for ev := range readSSE(t, resp.Body) {
		var s runlog.Summary
		if err := json.Unmarshal(ev.data, &s); err != nil {
			t.Fatal(err)
		}
		if s.ID != bobRun {
			t.Fatalf("bob's live stream shows run %s, not his", s.ID)
		}
		if s.Status != runlog.StatusRunning {
			return
		}
	}
	t.Fatal("the stream ended before bob's run did")
}

func TestTasksScopedToTheSubject(t *testing.T) {
	tasks := &memTasks{bySubject: map[string][]TaskSummary{"alice": {{ID: "t-alice"}}, "bob": {{ID: "t-bob"}}, "": {{ID: "t-anon"}}}}
	f := subjectsFixture(t, func(o *Options) { o.Tasks = tasks })
	if _, b := f.do(t, "GET", "/api/tasks", "", asBob...); !strings.Contains(string(b), "t-bob") || strings.Contains(string(b), "t-alice") {
		t.Errorf("bob lists %s", b)
	}
	if resp, _ := f.do(t, "GET", "/api/tasks/t-alice", "", asBob...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob reads alice's task: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "GET", "/api/tasks/t-alice", "", asAlice...); resp.StatusCode != http.StatusOK {
		t.Errorf("alice reads her task: %d", resp.StatusCode)
	}
	if _, b := f.do(t, "GET", "/api/tasks", "", asOwner...); !strings.Contains(string(b), "t-anon") {
		t.Errorf("the operator lists %s", b)
	}
}

// A session carries its subject as a bearer token does.
func TestSessionScopedToTheSubject(t *testing.T) {
	f := subjectsFixture(t, nil)
	f.llm.Enqueue(fakellm.Turn{Text: "for alice"})
	if _, err := f.orch.Ask(host.WithSubject(host.WithOrigin(t.Context(), "mcp"), "alice"), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]bool{bobToken: false, aliceToken: true} {
		f.client.Jar = newJar()
		if resp, b := f.do(t, "POST", "/api/login", `{"token":"`+token+`"}`); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("login: %d %s", resp.StatusCode, b)
		}
		_, b := f.do(t, "GET", "/api/runs", "")
		if got := strings.Contains(string(b), `"origin":"mcp"`); got != want {
			t.Errorf("logged in with %s, the list %s", token[:5], b)
		}
	}
}

// A JWT naming no subject would be the operator, who sees everything: it logs nobody in.
func TestOAuthTokenWithoutSubjectRefused(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Verify = func(context.Context, string) (string, time.Time, error) { return "", time.Time{}, nil }
	})
	if resp, _ := f.do(t, "POST", "/api/login", `{"token":"a.jwt.token"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a JWT naming nobody: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "GET", "/api/runs", "", "Authorization", "Bearer a.jwt.token"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bearer JWT naming nobody: %d", resp.StatusCode)
	}
}

func newJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}

// waitQuestion waits until the run id asks a question, and returns its id.
func waitQuestion(t *testing.T, f *fixture, id string) string {
	t.Helper()
	var question string
	testwait.Until(t, 30*time.Second, "the run asks", func() bool {
		_, entries, _ := f.runs.Run(id, 0)
		for _, e := range entries {
			if e.Kind == runlog.KindApproval {
				question = e.Approval.ID
			}
		}
		return question != ""
	})
	return question
}
