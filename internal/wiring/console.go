package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/console"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/schemacheck"
	"github.com/agenthost/agenthost/mcpclients"
	"github.com/agenthost/agenthost/store"
)

// listenUI opens the console's listener on addr. Beyond loopback the console needs a token or [serve.oauth]: it runs
// the agent and its tools for whoever reaches it.
func listenUI(addr string, protected bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: serve --ui %s: %w", ErrConfig, addr, err)
	}
	if !isLoopback(ln.Addr()) && !protected {
		ln.Close()
		return nil, fmt.Errorf("%w: serve --ui %s: the console runs the agent and its tools for whoever reaches it: beyond "+
			"loopback it needs [serve.oauth], [serve] auth_token_env or auth_tokens_env", ErrConfig, addr)
	}
	return ln, nil
}

// newConsole returns the console of the app, listening at listenAddr, with access. The app must record its runs.
func (a *App) newConsole(access Access, listenAddr string) (*console.Console, error) {
	if a.runs == nil {
		return nil, errors.New("serve: the console needs an app built with Options.RecordRuns")
	}
	sc := a.cfg.Serve
	model := a.cfg.Model.Model
	if a.modelArg != "" {
		model = a.modelArg
	}
	opts := &console.Options{
		Orchestrator:   a.orch,
		Runs:           a.runs,
		Logger:         a.logger,
		Agent:          console.Agent{Name: a.cfg.Agent.Name, Description: a.cfg.Agent.Description, Version: a.version, Model: model, Provider: a.provider},
		OutputSchema:   a.outputSchema,
		CompileSchema:  schemacheck.Compile,
		Content:        a.cfg.Telemetry.CaptureContent,
		Servers:        a.serverStates,
		Token:          access.Token,
		Tokens:         access.Tokens,
		ListenAddr:     listenAddr,
		AllowedHosts:   sc.AllowedHosts,
		AllowedOrigins: sc.AllowedOrigins,
		MaxBodyBytes:   sc.MaxBodyBytes,
		InputTimeout:   sc.InputTimeout.Duration,
	}
	opts.Evals = a.Evals()
	if a.state != nil {
		opts.Conversations, opts.Tasks = consoleConversations{a.state}, consoleTasks{a.state}
	}
	if v := access.JWT; v != nil {
		opts.Verify = func(ctx context.Context, bearer string) (string, time.Time, error) {
			info, err := v.Verify(ctx, bearer)
			if err != nil {
				return "", time.Time{}, err
			}
			return info.UserID, info.Expiration, nil
		}
	}
	return console.New(opts), nil
}

// serverStates are the MCP servers' and A2A peers' states, as the console shows them.
func (a *App) serverStates() []console.ServerState {
	var out []console.ServerState
	for _, st := range a.mcp.Status() {
		s := console.ServerState{Name: st.Name, Kind: "mcp", Transport: st.Transport, Error: st.Error, Tools: st.Tools,
			URL: redact.URL(a.cfg.MCP.Servers[st.Name].URL)}
		switch st.State {
		case mcpclients.StateNeedsLogin:
			s.State, s.Login = "needs_login", LoginCommand(a.cfg.Path, st.Name)
		case mcpclients.StateClosed:
			s.State = "disabled"
		default:
			s.State = string(st.State)
		}
		out = append(out, s)
	}
	for _, st := range a.peers.Status() {
		s := console.ServerState{Name: st.Name, Kind: "a2a", Transport: "a2a", URL: st.URL, Error: st.Error}
		switch st.State {
		case a2a.StateReady:
			s.State, s.Tools = "connected", 1
		case a2a.StateRetrying:
			s.State = "connecting"
		case a2a.StateClosed:
			s.State = "disabled"
		default:
			s.State = string(st.State)
		}
		out = append(out, s)
	}
	return out
}

// LoginCommand is the command that logs in to the MCP server name of the configuration at path, as a POSIX shell
// runs it: the name and path are quoted when they need to be. A relative path is made absolute, so that the
// command works from any directory; the default, agent.toml, is left out.
func LoginCommand(path, name string) string {
	cmd := "agenthost mcp login " + shellQuote(name)
	if path != "" && path != "agent.toml" {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		cmd += " -config " + shellQuote(path)
	}
	return cmd
}

// shellQuote returns s as one word of a POSIX shell: as it is when it holds only characters no shell treats
// specially, else in single quotes.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// consoleConversations are the conversations of the state database, for the console.
type consoleConversations struct{ db *store.DB }

var _ console.Conversations = consoleConversations{}

func (c consoleConversations) List(ctx context.Context) ([]console.ConversationSummary, error) {
	list, err := c.db.Conversations(ctx, 0)
	if err != nil {
		return nil, err
	}
	out := make([]console.ConversationSummary, len(list))
	for i, s := range list {
		out[i] = console.ConversationSummary{ID: s.ID, Title: s.Prompt, Messages: s.Messages, Created: s.Created, Updated: s.Updated}
	}
	return out, nil
}

func (c consoleConversations) Get(ctx context.Context, id string) (*host.Conversation, error) {
	conv, err := c.db.Peek(ctx, id)
	if errors.Is(err, host.ErrUnknownConversation) {
		return nil, fmt.Errorf("conversation %q: %w", id, console.ErrNotFound)
	}
	return conv, err
}

func (c consoleConversations) Delete(ctx context.Context, id string) error {
	err := c.db.DeleteConversation(ctx, id)
	if errors.Is(err, host.ErrUnknownConversation) {
		return fmt.Errorf("conversation %q: %w", id, console.ErrNotFound)
	}
	return err
}

// consoleTasks are the served A2A tasks of the state database, for the console.
type consoleTasks struct{ db *store.DB }

var _ console.Tasks = consoleTasks{}

// maxConsoleTasks bounds the tasks the console lists.
const maxConsoleTasks = 500

func (t consoleTasks) List(ctx context.Context, subject string) ([]console.TaskSummary, error) {
	list, _, err := t.db.Tasks(ctx, store.TaskQuery{Subject: subject, Limit: maxConsoleTasks})
	if err != nil {
		return nil, err
	}
	out := make([]console.TaskSummary, len(list))
	for i, tk := range list {
		out[i] = console.TaskSummary{ID: tk.ID, ContextID: tk.ContextID, State: tk.State, Updated: tk.Updated}
	}
	return out, nil
}

func (t consoleTasks) Get(ctx context.Context, subject, id string) (json.RawMessage, error) {
	tk, err := t.db.Task(ctx, id)
	if errors.Is(err, store.ErrTaskNotFound) || err == nil && tk.Subject != subject {
		return nil, fmt.Errorf("task %q: %w", id, console.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return tk.Body, nil
}
