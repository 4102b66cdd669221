package console

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/llm"
)

// toolJSON is a tool as GET /api/tools lists it.
type toolJSON struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Source       string          `json:"source"`
	Description  string          `json:"description"`
	Flags        []string        `json:"flags"`
	Pinned       bool            `json:"pinned"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Score        *float64        `json:"score,omitempty"`
}

func newToolJSON(t *host.ManagedTool) toolJSON {
	flags := t.Policy.Flags()
	if flags == nil {
		flags = []string{}
	}
	return toolJSON{Name: t.Spec.Name, Title: t.Spec.Title, Source: t.Source, Description: t.Spec.Description, Flags: flags,
		Pinned: t.Pinned(), InputSchema: t.Spec.InputSchema, OutputSchema: t.Spec.OutputSchema}
}

// maxSearchResults bounds the tools a search lists.
const maxSearchResults = 50

// tools answers GET /api/tools: every tool, or with ?q= those tool search ranks for it, best first; and whether a
// run would search the tools, and why.
func (c *Console) tools(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tm := c.opts.Orchestrator.Tools()
	all, d, err := c.searchDecision(ctx)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "listing the tools: "+err.Error())
		return
	}
	search := map[string]any{"on": d.On, "reason": searchReason(d)}
	out := []toolJSON{}
	if q := strings.TrimSpace(r.URL.Query().Get("q")); q != "" {
		hits, err := tm.Search(ctx, q, &host.SearchOptions{MaxResults: maxSearchResults})
		if err != nil {
			writeError(w, http.StatusInternalServerError, "searching the tools: "+err.Error())
			return
		}
		for _, h := range hits {
			t := newToolJSON(h.Tool)
			score := math.Round(h.Score*1e4) / 1e4
			t.Score = &score
			out = append(out, t)
		}
	} else {
		for _, t := range all {
			out = append(out, newToolJSON(t))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out, "search": search})
}

// searchOn says whether a run would search the tools; false when they cannot be listed.
func (c *Console) searchOn(ctx context.Context) bool {
	_, d, err := c.searchDecision(ctx)
	return err == nil && d.On
}

// searchDecision lists the tools and says whether a run would search them, and why. The decision (which estimates
// the tokens of every definition) is made once per tool list: ToolManager.Tools returns the same slice while no
// source's list changed, so a page load costs a listing from the sources' caches and a comparison.
func (c *Console) searchDecision(ctx context.Context) ([]*host.ManagedTool, host.SearchDecision, error) {
	all, err := c.opts.Orchestrator.Tools().Tools(ctx)
	if err != nil {
		return nil, host.SearchDecision{}, err
	}
	c.searchMu.Lock()
	defer c.searchMu.Unlock()
	if c.searchList != nil && len(all) > 0 && len(c.searchList) == len(all) && &c.searchList[0] == &all[0] {
		return all, c.searchWas, nil
	}
	c.searchWas = c.opts.Orchestrator.SearchDecision(all, host.Selection{})
	c.searchList = all
	return all, c.searchWas, nil
}

// searchReason says why a run would search the tools or not, as `agenthost tools` does.
func searchReason(d host.SearchDecision) string {
	if d.Why != "auto" {
		return d.Why
	}
	if d.On {
		return fmt.Sprintf("auto: %d tools, estimated %d tokens > threshold %d", d.Tools, d.Tokens, d.Threshold)
	}
	return fmt.Sprintf("auto: %d tools, estimated %d tokens <= threshold %d", d.Tools, d.Tokens, d.Threshold)
}

// servers answers GET /api/servers.
func (c *Console) servers(w http.ResponseWriter, r *http.Request) {
	list := []ServerState{}
	if c.opts.Servers != nil {
		list = append(list, c.opts.Servers()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": list})
}

func (c *Console) listConversations(w http.ResponseWriter, r *http.Request) {
	if c.opts.Conversations == nil {
		writeError(w, http.StatusNotFound, "the conversations are kept in memory, which cannot list them: see [state]")
		return
	}
	all, err := c.opts.Conversations.List(r.Context())
	if err != nil {
		writeError(w, errorStatus(err), err.Error())
		return
	}
	subject := callerOf(r).subject
	list := []ConversationSummary{}
	for _, conv := range all {
		if host.OwnsConversation(conv.ID, subject) {
			list = append(list, conv)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": list})
}

// conversationID returns the conversation the request's path names, or answers 404 itself and returns false when
// there is no state database or the caller does not own it.
func (c *Console) conversationID(w http.ResponseWriter, r *http.Request) (string, bool) {
	if c.opts.Conversations == nil {
		writeError(w, http.StatusNotFound, "no state database")
		return "", false
	}
	id := r.PathValue("id")
	if !host.OwnsConversation(id, callerOf(r).subject) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("conversation %q: %v", id, ErrNotFound))
		return "", false
	}
	return id, true
}

func (c *Console) getConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := c.conversationID(w, r)
	if !ok {
		return
	}
	conv, err := c.opts.Conversations.Get(r.Context(), id)
	if err != nil {
		writeError(w, errorStatus(err), err.Error())
		return
	}
	msgs := conv.Messages
	if msgs == nil {
		msgs = []llm.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": conv.ID, "messages": msgs})
}

func (c *Console) deleteConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := c.conversationID(w, r)
	if !ok {
		return
	}
	if err := c.opts.Conversations.Delete(r.Context(), id); err != nil {
		writeError(w, errorStatus(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *Console) listTasks(w http.ResponseWriter, r *http.Request) {
	if c.opts.Tasks == nil {
		writeError(w, http.StatusNotFound, "no state database")
		return
	}
	list, err := c.opts.Tasks.List(r.Context(), callerOf(r).subject)
	if err != nil {
		writeError(w, errorStatus(err), err.Error())
		return
	}
	if list == nil {
		list = []TaskSummary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": list})
}

func (c *Console) getTask(w http.ResponseWriter, r *http.Request) {
	if c.opts.Tasks == nil {
		writeError(w, http.StatusNotFound, "no state database")
		return
	}
	task, err := c.opts.Tasks.Get(r.Context(), callerOf(r).subject, r.PathValue("id"))
	if err != nil {
		writeError(w, errorStatus(err), err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(task)
}

// evalRun is an eval dataset's run started from the console.
type evalRun struct {
	ID      string `json:"id"`
	Dataset string `json:"dataset"`
	// Status is "running", "done", "failed" or "cancelled".
	Status string        `json:"status"`
	Error  string        `json:"error,omitempty"`
	Total  int           `json:"total"`
	Report *evals.Report `json:"report"`
	// cancel cancels the run; ended says it has ended (both under Console.mu).
	cancel context.CancelFunc
	ended  bool
}

// Bounds of the eval runs: at most maxEvalRunning going (each runs every case of a dataset through the model), and
// the last maxEvalRuns ended kept to be read.
const (
	maxEvalRunning = 2
	maxEvalRuns    = 20
)

// evalSuite is what the console needs of an *evals.Suite; tests give their own.
type evalSuite interface {
	Datasets() []evals.Dataset
	Run(ctx context.Context, dataset string, concurrency int, onCase func(*evals.Result)) (*evals.Report, error)
}

func (c *Console) listEvals(w http.ResponseWriter, r *http.Request) {
	if c.evals == nil {
		writeError(w, http.StatusNotFound, "no eval datasets are configured")
		return
	}
	list := c.evals.Datasets()
	if list == nil {
		list = []evals.Dataset{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"datasets": list})
}

func (c *Console) runEval(w http.ResponseWriter, r *http.Request) {
	if c.evals == nil {
		writeError(w, http.StatusNotFound, "no eval datasets are configured")
		return
	}
	name := r.PathValue("name")
	total, found := 0, false
	for _, d := range c.evals.Datasets() {
		if d.Name == name {
			total, found = d.Cases, true
		}
	}
	if !found {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no dataset %q", name))
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	run := &evalRun{ID: "e" + rand.Text()[:12], Dataset: name, Status: "running", Total: total,
		Report: &evals.Report{Cases: []*evals.Result{}}, cancel: cancel}
	c.mu.Lock()
	running := 0
	for _, er := range c.evalRuns {
		if !er.ended {
			running++
		}
	}
	if running >= maxEvalRunning {
		c.mu.Unlock()
		cancel()
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%d eval runs are going: wait for one to end", running))
		return
	}
	c.evalRuns[run.ID] = run
	c.evalIDs = append(c.evalIDs, run.ID)
	c.mu.Unlock()
	started := c.goOwned(func() {
		defer cancel()
		report, err := c.evals.Run(ctx, name, 0, func(res *evals.Result) {
			c.evalMu.Lock()
			run.Report.Cases = append(run.Report.Cases, res)
			if res.Passed {
				run.Report.Passed++
			} else {
				run.Report.Failed++
			}
			c.evalMu.Unlock()
		})
		c.evalMu.Lock()
		switch {
		case ctx.Err() != nil && c.ctx.Err() == nil: // cancelled by POST .../cancel
			run.Status = "cancelled"
		case err != nil:
			run.Status, run.Error = "failed", err.Error()
		default:
			if report != nil {
				run.Report = report
			}
			run.Status = "done"
		}
		c.evalMu.Unlock()
		c.endEvalRun(run)
	})
	if !started {
		c.endEvalRun(run)
		cancel()
		writeError(w, http.StatusServiceUnavailable, "the console is closing")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": run.ID})
}

// endEvalRun marks run ended, and drops the oldest ended runs beyond maxEvalRuns: a run going is never dropped.
func (c *Console) endEvalRun(run *evalRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	run.ended = true
	ended := 0
	for _, id := range c.evalIDs {
		if c.evalRuns[id].ended {
			ended++
		}
	}
	kept := c.evalIDs[:0]
	for _, id := range c.evalIDs {
		if er := c.evalRuns[id]; er.ended && ended > maxEvalRuns {
			delete(c.evalRuns, id)
			ended--
			continue
		}
		kept = append(kept, id)
	}
	c.evalIDs = kept
}

// cancelEvalRun answers POST /api/evals/runs/{id}/cancel.
func (c *Console) cancelEvalRun(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	run := c.evalRuns[r.PathValue("id")]
	ended := run != nil && run.ended
	c.mu.Unlock()
	switch {
	case run == nil:
		writeError(w, http.StatusNotFound, "no such eval run")
	case ended:
		writeError(w, http.StatusConflict, "the eval run has ended")
	default:
		run.cancel()
		w.WriteHeader(http.StatusNoContent)
	}
}

func (c *Console) getEvalRun(w http.ResponseWriter, r *http.Request) {
	if c.evals == nil {
		writeError(w, http.StatusNotFound, "no eval datasets are configured")
		return
	}
	c.mu.Lock()
	run := c.evalRuns[r.PathValue("id")]
	c.mu.Unlock()
	if run == nil {
		writeError(w, http.StatusNotFound, "no such eval run")
		return
	}
	c.evalMu.Lock()
	body, err := json.Marshal(run)
	c.evalMu.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
