package durable

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/pgtest"
	"github.com/agenthost/agenthost/internal/testkit/runstarts"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// lookup is a tool that counts its calls; while block is set, a call waits for its context to end.
type lookup struct {
	calls atomic.Int32
	block atomic.Bool
}

func (l *lookup) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
}

func (l *lookup) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	l.calls.Add(1)
	if l.block.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &host.Result{Text: "found " + string(args), References: []host.Reference{{Title: "Doc", URI: "doc:1"}}}, nil
}

type toolset struct{ tools []host.Tool }

func (s toolset) Name() string                               { return "test" }
func (s toolset) Tools(context.Context) ([]host.Tool, error) { return s.tools, nil }

// backend is a state database for the engine: a SQLite file or a Postgres database.
type backend struct {
	name string
	open func(t *testing.T) (*store.DB, Options)
}

func backends(t *testing.T) []backend {
	return []backend{
		{"sqlite", func(t *testing.T) (*store.DB, Options) {
			path := filepath.Join(t.TempDir(), "state.db")
			db, err := store.Open(t.Context(), store.Options{Backend: store.SQLite, Path: path})
			if err != nil {
				t.Fatal(err)
			}
			return db, Options{SQLitePath: path}
		}},
		{"postgres", func(t *testing.T) (*store.DB, Options) {
			dsn := pgtest.NewDatabase(t)
			db, err := store.Open(t.Context(), store.Options{Backend: store.Postgres, DSN: dsn})
			if err != nil {
				t.Fatal(err)
			}
			return db, Options{PostgresURL: dsn}
		}},
	}
}

// process is one agenthost process's engine, with its own model client and tools, on a shared database.
type process struct {
	engine  *Engine
	tool    *lookup
	origins *runstarts.Observer
}

func start(t *testing.T, db *store.DB, opts Options, llmURL string, launch bool) *process {
	t.Helper()
	model, err := openai.New(&openai.Options{BaseURL: llmURL, APIKey: "sk-test", Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := &process{tool: &lookup{}, origins: &runstarts.Observer{}}
	tm := host.NewToolManager([]host.Toolset{toolset{[]host.Tool{p.tool}}}, nil)
	orch := host.New(model, tm, &host.Options{Conversations: db, Observer: p.origins})
	opts.AppName, opts.AppVersion = "agenthost-test", "v1"
	if p.engine, err = New(t.Context(), orch, opts); err != nil {
		t.Fatal(err)
	}
	if launch {
		if err := p.engine.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestRunResumesAfterInterruption starts a run whose tool call hangs, stops the engine (as a process stops), and
// starts another engine on the same database: it resumes the run without asking the model again for the step that
// finished, calls the tool again (its call had not finished), and saves the conversation once. A front end that
// registered for the run's tag gets its events. Unfinished says there is a run to resume only between the
// interruption and the end of the resumed run.
func TestRunResumesAfterInterruption(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			llm := fakellm.New()
			t.Cleanup(llm.Close)
			llm.Enqueue(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"q":"x"}`}}},
				fakellm.Turn{Text: "It says x [source 1]."},
			)
			db, opts := b.open(t)
			defer db.Close()
			unfinished := func() bool {
				t.Helper()
				found, err := Unfinished(t.Context(), db)
				if err != nil {
					t.Fatal(err)
				}
				return found
			}
			if unfinished() {
				t.Fatal("Unfinished found a run in a database DBOS never opened")
			}

			first := start(t, db, opts, llm.URL, true)
			if unfinished() {
				t.Fatal("Unfinished found a run before any started")
			}
			first.tool.block.Store(true)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			runDone := make(chan error, 1)
			var convID string
			go func() {
				var err error
				for ev, e := range first.engine.Run(host.WithSubject(ctx, "alice"), &host.Request{Prompt: "What does it say?", ConversationID: "conv-1", StartConversation: true, Tag: "test:task-1"}) {
					if e != nil {
						err = e
					}
					if ev != nil && ev.Kind == host.EventAnswer {
						convID = ev.Answer.ConversationID
					}
				}
				runDone <- err
			}()
			testwait.Until(t, 30*time.Second, "the tool is called", func() bool { return first.tool.calls.Load() == 1 })
			if err := first.engine.Close(); err != nil {
				t.Logf("close: %v", err)
			}
			select {
			case err := <-runDone:
				if err == nil {
					t.Fatal("the interrupted run ended without an error")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the interrupted run did not end")
			}
			if llm.RequestCount() != 1 {
				t.Fatalf("%d model requests before the restart, want 1", llm.RequestCount())
			}
			_ = convID
			if !unfinished() {
				t.Fatal("Unfinished found no run after the interruption")
			}

			second := start(t, db, opts, llm.URL, false)
			ended := make(chan *host.Answer, 1)
			var events atomic.Int32
			second.engine.Handle("test", func(_ context.Context, _ context.CancelCauseFunc, tag string) *Resumed {
				if tag != "test:task-1" {
					t.Errorf("resumed tag %q", tag)
				}
				return &Resumed{Event: func(*host.Event) { events.Add(1) }, End: func(ans *host.Answer, err error) {
					if err != nil {
						t.Errorf("the resumed run failed: %v", err)
					}
					ended <- ans
				}}
			})
			if err := second.engine.Launch(); err != nil {
				t.Fatal(err)
			}
			defer second.engine.Close()
			var ans *host.Answer
			select {
			case ans = <-ended:
			case <-time.After(60 * time.Second):
				t.Fatal("the run was not resumed")
			}
			if ans == nil || !strings.HasPrefix(ans.Text, "It says x [1].") || ans.ConversationID != "conv-1" {
				t.Fatalf("resumed answer: %+v", ans)
			}
			if n := llm.RequestCount(); n != 2 {
				t.Errorf("%d model requests in all, want 2: the first one's outcome was recorded", n)
			}
			if n := second.tool.calls.Load(); n != 1 {
				t.Errorf("the resumed run called the tool %d times, want 1", n)
			}
			if events.Load() == 0 {
				t.Error("the front end got no event of the resumed run")
			}
			if got := second.origins.Origins(); !slices.Equal(got, []string{"test (resumed)"}) {
				t.Errorf("the resumed run's origins = %q; want its front end's, resumed", got)
			}
			if got := second.origins.Subjects(); !slices.Equal(got, []string{"alice"}) {
				t.Errorf("the resumed run's subjects = %q; want the caller's it was made for", got)
			}
			testwait.Until(t, 30*time.Second, "the resumed run is recorded as over", func() bool { return !unfinished() })
			conv, err := db.Load(t.Context(), "conv-1")
			if err != nil || len(conv.Messages) != 4 || len(conv.Sources) != 1 {
				t.Fatalf("conversation after the resumed run: %+v, %v", conv, err)
			}
		})
	}
}

// A run started through the engine relays its events to its caller, as the orchestrator's own Run does, and a
// caller that stops reading cancels it.
func TestRunRelaysEvents(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	db, opts := backends(t)[0].open(t)
	defer db.Close()
	p := start(t, db, opts, llm.URL, true)
	defer p.engine.Close()
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"q":"y"}`}}},
		fakellm.Turn{Text: "Found y [source 1].", ChunkSize: 3},
	)
	var kinds []host.EventKind
	var ans *host.Answer
	var streamed strings.Builder
	for ev, err := range p.engine.Run(host.WithOrigin(t.Context(), "console"), &host.Request{Prompt: "Find y."}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
		switch ev.Kind {
		case host.EventAnswer:
			ans = ev.Answer
		case host.EventTextDelta:
			streamed.WriteString(ev.Text)
		}
	}
	if ans == nil || ans.Text != "Found y [1].\n\nSources:\n[1] Doc — doc:1" || streamed.String() != ans.Text {
		t.Fatalf("answer %+v, streamed %q", ans, streamed.String())
	}
	if kinds[0] != host.EventIteration || kinds[len(kinds)-1] != host.EventAnswer {
		t.Errorf("events %v", kinds)
	}
	conv, err := db.Load(t.Context(), ans.ConversationID)
	if err != nil || len(conv.Messages) != 4 {
		t.Fatalf("conversation: %+v, %v", conv, err)
	}
	// The run keeps what its caller's context carries: its origin.
	if got := p.origins.Origins(); !slices.Equal(got, []string{"console"}) {
		t.Errorf("origins = %q; want the caller's", got)
	}

	// Stopping early cancels the run: the hanging tool call ends.
	p.tool.block.Store(true)
	llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: "lookup", Arguments: `{"q":"z"}`}}})
	before := p.tool.calls.Load()
	for ev, err := range p.engine.Run(t.Context(), &host.Request{Prompt: "Find z."}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == host.EventToolStart {
			testwait.Until(t, 30*time.Second, "the tool is called", func() bool { return p.tool.calls.Load() > before })
			break
		}
	}
}

// TestTakeOver runs two replicas on one Postgres database. The first starts a run whose tool call hangs and stops
// (its heartbeat with it); the second, seeing it has not beaten for a while, resumes its run from the last finished
// step: the model is not asked again for the call that finished, and the run completes on the second replica.
func TestTakeOver(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"q":"x"}`}}},
		fakellm.Turn{Text: "It says x [source 1]."},
	)
	db, opts := backends(t)[1].open(t) // Postgres
	defer db.Close()
	opts.Heartbeats, opts.BeatEvery, opts.DeadAfter = db.SQL(), 100*time.Millisecond, 600*time.Millisecond

	aOpts := opts
	aOpts.ExecutorID = "replica-a"
	a := start(t, db, aOpts, llm.URL, true)
	a.tool.block.Store(true)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		for range a.engine.Run(t.Context(), &host.Request{Prompt: "What does it say?", ConversationID: "conv-a", StartConversation: true, Tag: "test:task-a"}) {
		}
	}()
	testwait.Until(t, 30*time.Second, "the tool is called on A", func() bool { return a.tool.calls.Load() == 1 })

	bOpts := opts
	bOpts.ExecutorID = "replica-b"
	b := start(t, db, bOpts, llm.URL, false)
	ended := make(chan *host.Answer, 1)
	b.engine.Handle("test", func(_ context.Context, _ context.CancelCauseFunc, tag string) *Resumed {
		return &Resumed{End: func(ans *host.Answer, err error) {
			if err != nil {
				t.Errorf("the run taken over failed: %v", err)
			}
			ended <- ans
		}}
	})
	if err := b.engine.Launch(); err != nil {
		t.Fatal(err)
	}
	defer b.engine.Close()

	a.engine.Close() // A stops: its run is interrupted, and it beats no more
	<-runDone
	var ans *host.Answer
	select {
	case ans = <-ended:
	case <-time.After(60 * time.Second):
		t.Fatal("B did not take over A's run")
	}
	if ans == nil || !strings.HasPrefix(ans.Text, "It says x [1].") {
		t.Fatalf("the answer of the run taken over: %+v", ans)
	}
	if n := llm.RequestCount(); n != 2 {
		t.Errorf("%d model requests in all, want 2", n)
	}
	if a.tool.calls.Load() != 1 || b.tool.calls.Load() != 1 {
		t.Errorf("tool calls: %d on A, %d on B; want the interrupted one made again on B", a.tool.calls.Load(), b.tool.calls.Load())
	}
	var replicas int
	if err := db.SQL().QueryRowContext(t.Context(), `SELECT count(*) FROM agenthost_replicas WHERE executor_id = 'replica-a'`).Scan(&replicas); err != nil || replicas != 0 {
		t.Errorf("replica A is still listed (%d, %v)", replicas, err)
	}
}

// TestNewConcurrently opens the state database and creates an engine on it from several goroutines at once, each
// with connections of its own, as replicas starting together on a new database do: every one opens it and launches
// its engine, and agenthost's tables and DBOS's schema are migrated once.
func TestNewConcurrently(t *testing.T) {
	for _, b := range []struct {
		name       string
		opts       func(t *testing.T) (store.Options, Options)
		migrations string
	}{
		{"sqlite", func(t *testing.T) (store.Options, Options) {
			path := filepath.Join(t.TempDir(), "state.db")
			return store.Options{Backend: store.SQLite, Path: path}, Options{SQLitePath: path}
		}, "dbos_migrations"},
		{"postgres", func(t *testing.T) (store.Options, Options) {
			dsn := pgtest.NewDatabase(t)
			return store.Options{Backend: store.Postgres, DSN: dsn}, Options{PostgresURL: dsn}
		}, "dbos.dbos_migrations"},
	} {
		t.Run(b.name, func(t *testing.T) {
			sopts, opts := b.opts(t)
			opts.AppName, opts.AppVersion = "agenthost-test", "v1"
			const n = 6
			var ready, wg sync.WaitGroup
			ready.Add(n)
			start := make(chan struct{})
			engines := make([]*Engine, n)
			errs := make([]error, n)
			for i := range engines {
				wg.Go(func() {
					o := opts
					o.ExecutorID = fmt.Sprintf("replica-%d", i)
					ready.Done()
					<-start
					db, err := store.Open(t.Context(), sopts)
					if err != nil {
						errs[i] = err
						return
					}
					defer db.Close()
					e, err := New(t.Context(), nil, o)
					if err == nil {
						if err = e.Launch(); err != nil {
							e.Close()
						} else {
							engines[i] = e
						}
					}
					errs[i] = err
				})
			}
			ready.Wait()
			close(start) // all at once
			wg.Wait()
			for _, e := range engines {
				if e != nil {
					defer e.Close()
				}
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			var db *sql.DB
			var err error
			if opts.SQLitePath != "" {
				db, err = sql.Open("sqlite", store.SQLiteDSN(opts.SQLitePath))
			} else {
				db, err = sql.Open("pgx", opts.PostgresURL)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, table := range []string{b.migrations, "agenthost_schema"} {
				var rows int
				if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM "+table).Scan(&rows); err != nil || rows != 1 {
					t.Errorf("%s: %d rows (%v), want 1", table, rows, err)
				}
			}
		})
	}
}
