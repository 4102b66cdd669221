// Package durable runs the orchestrator's runs as DBOS Transact workflows, so that a run interrupted by a crash
// resumes, when agenthost starts again, from its last finished step: the model calls and tool calls that finished
// are not made again. Each step of a run (host.StepRunner) is a DBOS step recorded in the state database, SQLite or
// Postgres, beside agenthost's own tables.
//
// A run started by a caller relays its events to that caller as host.Orchestrator.Run does. A run resumed after a
// crash has no caller: its Tag ("a2a:<task id>") names the front end that gets its events, through the Resumer that
// front end registered with Handle before Launch. A run without a Tag, or of a front end with no Resumer, is
// finished all the same: its conversation gets its messages. A resumed run is still made for the caller it was made
// for (host.Subject), so that a front end that tells callers apart shows it to them.
package durable

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // SQLite system databases

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/statedir"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/telemetry"
)

// Options configures an Engine. Exactly one of SQLitePath and PostgresURL is set.
type Options struct {
	// SQLitePath is the state database when it is a SQLite file: DBOS keeps its tables in it, through a handle of
	// its own.
	SQLitePath string
	// PostgresURL is the state database's connection string when it is Postgres: DBOS keeps its tables in the
	// schema "dbos" of that database.
	PostgresURL string
	// AppName names the application in DBOS's tables: lower case letters, digits, "-" and "_" (others are
	// replaced), at least 3.
	AppName string
	// AppVersion is the version a run is recorded under; only an engine of the same version resumes it. It must
	// change when the loop could take another path given the same steps (another agenthost, another
	// configuration), and only then: not with the binary's hash.
	AppVersion string
	// ExecutorID names this process among the replicas sharing the database; a restarted process resumes the runs
	// of its own ExecutorID. "" means "local".
	ExecutorID string
	// Logger receives the engine's and DBOS's warnings; nil discards them.
	Logger *slog.Logger
	// Heartbeats, set to the state database when it is Postgres, makes the engine say every BeatEvery that its
	// executor is alive (table agenthost_replicas), and resume the runs of the replicas that have not said so for
	// DeadAfter: one replica at a time, the one that takes a Postgres advisory lock. 0 means 5s and 30s.
	Heartbeats           *sql.DB
	BeatEvery, DeadAfter time.Duration
}

// Resumer is a front end's part in a run resumed after a crash: given the run's Tag, it returns where the run's
// events go. It returns nil when the front end no longer has the object the tag names. ctx is the run's; cancel
// cancels the run.
type Resumer func(ctx context.Context, cancel context.CancelCauseFunc, tag string) *Resumed

// Resumed is where a resumed run's events go.
type Resumed struct {
	// Interactor answers the run's approvals and questions; nil means nobody can be asked.
	Interactor host.Interactor
	// Event receives each event of the run, on the run's goroutine.
	Event func(*host.Event)
	// End receives the run's answer (nil when it has none) and its error, once, when it is over.
	End func(ans *host.Answer, err error)
}

// Engine runs the orchestrator's runs as workflows.
type Engine struct {
	dctx    dbos.Context
	orch    *host.Orchestrator
	logger  *slog.Logger
	release func() // ends the hold of the SQLite file (statedir.HoldSQLite); a no-op with Postgres

	mu       sync.Mutex
	live     map[string]*liveRun // by workflow id: runs whose caller waits for their events
	resumers map[string]Resumer  // by tag prefix

	executor             string
	beats                *sql.DB // nil: no heartbeat
	beatEvery, deadAfter time.Duration
	stopBeats            context.CancelFunc
	beating              sync.WaitGroup
	closing              atomic.Bool // set by Close before it shuts DBOS down
}

// liveRun is the caller's side of a run it started.
type liveRun struct {
	ctx        context.Context // ends when the caller cancels the run or stops reading its events
	interactor host.Interactor
	events     chan item // closed when the run is over
}

type item struct {
	ev  *host.Event
	err error
}

// input is a run's workflow input: what it takes to run it again.
type input struct {
	Prompt            string   `json:"prompt"`
	ConversationID    string   `json:"conversation_id,omitempty"`
	StartConversation bool     `json:"start_conversation,omitempty"`
	ToolChoices       []string `json:"tool_choices,omitempty"`
	DisabledTools     []string `json:"disabled_tools,omitempty"`
	Tag               string   `json:"tag,omitempty"`
	// Subject is the caller the run was made for (host.Subject), so that a resumed run is still theirs.
	Subject string `json:"subject,omitempty"`
	// OutputSchema is the request's own output schema, kept as text.
	OutputSchema string `json:"output_schema,omitempty"`
}

// output is a run's workflow output.
type output struct {
	ConversationID string `json:"conversation_id,omitempty"`
	StoppedBy      string `json:"stopped_by,omitempty"`
	Error          string `json:"error,omitempty"`
}

// workflowName is the name runs are registered and recorded under.
const workflowName = "agenthost.run"

// New returns an engine for orch on the database opts names, with DBOS's tables created or migrated. Register the
// front ends' resumers with Handle, then Launch it.
func New(ctx context.Context, orch *host.Orchestrator, opts Options) (*Engine, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{orch: orch, logger: logger, live: map[string]*liveRun{}, resumers: map[string]Resumer{},
		beats: opts.Heartbeats, beatEvery: opts.BeatEvery, deadAfter: opts.DeadAfter, stopBeats: func() {}, release: func() {}}
	if e.beatEvery <= 0 {
		e.beatEvery = 5 * time.Second
	}
	if e.deadAfter <= 0 {
		e.deadAfter = 30 * time.Second
	}
	cfg := dbos.Config{
		AppName:            appName(opts.AppName),
		ApplicationVersion: opts.AppVersion,
		ExecutorID:         opts.ExecutorID,
		Logger:             quiet(logger, func() bool { return e.closing.Load() || ctx.Err() != nil }),
	}
	if cfg.ExecutorID == "" {
		cfg.ExecutorID = "local"
	}
	e.executor = cfg.ExecutorID
	switch {
	case opts.SQLitePath != "":
		if err := statedir.PrepareSQLite(opts.SQLitePath, logger); err != nil { // the runs' inputs are private
			return nil, fmt.Errorf("durable: %w", err)
		}
		e.release = statedir.HoldSQLite(opts.SQLitePath)                // held for as long as DBOS has it open, beside the store
		db, err := sql.Open("sqlite", store.SQLiteDSN(opts.SQLitePath)) // DBOS closes it at Shutdown
		if err != nil {
			e.release()
			return nil, fmt.Errorf("durable: %w", err)
		}
		cfg.SQLiteSystemDB = db
	case opts.PostgresURL != "":
		cfg.DatabaseURL = opts.PostgresURL
	default:
		return nil, errors.New("durable: no database")
	}
	dctx, err := newContext(ctx, cfg, logger)
	if err != nil {
		e.release()
		return nil, fmt.Errorf("durable: %w", err)
	}
	e.dctx = dctx
	dbos.RegisterWorkflow(dctx, e.workflow, dbos.WithWorkflowName(workflowName))
	return e, nil
}

// newContext creates DBOS's context, which creates or migrates DBOS's tables. On Postgres it does so under
// store.MigrationLock: DBOS's migrations are not safe to run twice at once (CREATE SCHEMA IF NOT EXISTS and
// CREATE TYPE race on the catalog's unique indexes), and replicas starting together on an empty database would.
// SQLite needs no lock: DBOS migrates it in IMMEDIATE transactions that read the version again.
func newContext(ctx context.Context, cfg dbos.Config, logger *slog.Logger) (dbos.Context, error) {
	if cfg.DatabaseURL != "" {
		release, err := store.LockMigrations(ctx, cfg.DatabaseURL, logger)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return dbos.NewContext(ctx, cfg)
}

// Unfinished says whether db, the state database, holds a run that is not over: one running when its process
// stopped, or waiting in DBOS's queue. Any such run counts, of any executor and version, though an engine resumes
// only its own: the answer tells whether an engine could have work to do at its start. A database DBOS has never
// opened holds none. It lets a process that starts no durable run of its own create an engine, which costs a few
// MiB of resident memory (DBOS's connections, goroutines and code), only when there is a run to resume.
func Unfinished(ctx context.Context, db *store.DB) (bool, error) {
	found, err := unfinished(ctx, db)
	if err != nil {
		return false, fmt.Errorf("durable: looking for unfinished runs in %s: %w", db.Where(), err)
	}
	return found, nil
}

func unfinished(ctx context.Context, db *store.DB) (bool, error) {
	var exists string // how to ask whether DBOS created its table
	table := "workflow_status"
	switch db.Backend() {
	case store.SQLite:
		exists = `SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'workflow_status'`
	case store.Postgres:
		exists = `SELECT to_regclass('dbos.workflow_status') IS NOT NULL`
		table = "dbos.workflow_status"
	default:
		return false, fmt.Errorf("unknown backend %q", db.Backend())
	}
	var created bool
	err := db.SQL().QueryRowContext(ctx, exists).Scan(&created)
	if err != nil || !created {
		return false, err
	}
	err = db.SQL().QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE status IN ($1, $2, $3) LIMIT 1`,
		string(dbos.WorkflowStatusPending), string(dbos.WorkflowStatusEnqueued), string(dbos.WorkflowStatusDelayed)).Scan(new(int))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// appName makes name fit DBOS's application names.
func appName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, name)
	for len(name) < 3 {
		name += "_"
	}
	return name
}

// quiet passes on DBOS's warnings and errors only: its informational lines are about its own machinery. Once
// stopping says the engine stops, a line whose error is the cancellation of DBOS's context is passed on at DEBUG:
// DBOS's Shutdown (and the end of the context New was given) cancels that context while its queue runner may be
// in the middle of a query, which DBOS then reports as an ERROR and WARNs, though nothing went wrong.
func quiet(l *slog.Logger, stopping func() bool) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), slog.LevelWarn, stopping})
}

type levelFilter struct {
	slog.Handler
	min      slog.Level
	stopping func() bool
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	// A cancellation while stopping is logged at DEBUG: let it reach Handle when DEBUG is enabled.
	return l >= f.min && (f.Handler.Enabled(ctx, l) || f.Handler.Enabled(ctx, slog.LevelDebug))
}

func (f levelFilter) Handle(ctx context.Context, r slog.Record) error {
	if f.stopping() && cancelled(r) {
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	if !f.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return f.Handler.Handle(ctx, r)
}

// cancelled says whether one of r's attributes is an error that says a context was cancelled. DBOS wraps some
// errors with %v, which keeps only their text.
func cancelled(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Value.Kind() == slog.KindAny {
			found = errors.Is(err, context.Canceled) || strings.HasSuffix(err.Error(), context.Canceled.Error())
		}
		return !found
	})
	return found
}

func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(a), f.min, f.stopping}
}
func (f levelFilter) WithGroup(g string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(g), f.min, f.stopping}
}

// Handle registers the Resumer of the runs whose Tag starts with prefix and ":". Call it before Launch.
func (e *Engine) Handle(prefix string, r Resumer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resumers[prefix] = r
}

// Launch starts the engine and resumes the runs that this executor left unfinished, at this version. With
// heartbeats, it starts beating and watching the other replicas.
func (e *Engine) Launch() error {
	if err := dbos.Launch(e.dctx); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	if e.beats != nil {
		ctx, cancel := context.WithCancel(context.Background())
		e.stopBeats = cancel
		e.beat(ctx) // at once: a replica that starts is alive
		e.beating.Go(func() { e.heartbeat(ctx) })
	}
	return nil
}

// heartbeat says the executor is alive every beatEvery, and every other beat takes over the runs of the replicas
// that stopped beating, until ctx ends.
func (e *Engine) heartbeat(ctx context.Context) {
	t := time.NewTicker(e.beatEvery)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.beat(ctx)
		if n%2 == 0 {
			if err := e.takeOver(ctx); err != nil && ctx.Err() == nil {
				e.logger.Warn("durable: taking over the runs of stopped replicas failed", "err", err)
			}
		}
	}
}

func (e *Engine) beat(ctx context.Context) {
	_, err := e.beats.ExecContext(ctx, `INSERT INTO agenthost_replicas (executor_id, beat_ms) VALUES ($1, $2)
		ON CONFLICT (executor_id) DO UPDATE SET beat_ms = excluded.beat_ms`, e.executor, time.Now().UnixMilli())
	if err != nil && ctx.Err() == nil {
		e.logger.Warn("durable: the heartbeat failed", "executor", e.executor, "err", err)
	}
}

// takeoverLock is the Postgres advisory lock that makes one replica at a time take over stopped replicas' runs.
const takeoverLock = 0x61676e75 // "agnu"

// takeOver resumes, on this replica, the unfinished runs of the replicas that have not beaten for deadAfter, if it
// gets the lock that makes it the one replica to do so now, and forgets those replicas.
func (e *Engine) takeOver(ctx context.Context) error {
	tx, err := e.beats.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var locked bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock($1)`, takeoverLock).Scan(&locked); err != nil || !locked {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT executor_id FROM agenthost_replicas WHERE beat_ms < $1 AND executor_id <> $2`,
		time.Now().Add(-e.deadAfter).UnixMilli(), e.executor)
	if err != nil {
		return err
	}
	var dead []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		dead = append(dead, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(dead) == 0 {
		return err
	}
	for _, id := range dead {
		runs, err := dbos.ListWorkflows(e.dctx, dbos.WithFilterExecutorIDs(id), dbos.WithFilterStatus(dbos.WorkflowStatusPending),
			dbos.WithFilterName(workflowName), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
		if err != nil {
			return err
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		if len(ids) > 0 {
			if _, err := dbos.ResumeWorkflows[output](e.dctx, ids); err != nil {
				return err
			}
		}
		e.logger.Warn("durable: a replica stopped beating; its unfinished runs are resumed", "executor", id, "runs", len(ids))
		if _, err := tx.ExecContext(ctx, `DELETE FROM agenthost_replicas WHERE executor_id = $1`, id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// shutdownTimeout bounds Close.
const shutdownTimeout = 10 * time.Second

// Close stops the engine. Runs still going are interrupted: they take no further step, and the next Launch of
// this executor resumes them.
func (e *Engine) Close() error {
	e.closing.Store(true)
	e.stopBeats()
	e.beating.Wait()
	err := dbos.Shutdown(e.dctx, shutdownTimeout)
	e.release()
	return err
}

// Run runs req as a workflow and returns its events, as host.Orchestrator.Run does. A run on the caller's own
// model (req.Model) cannot be resumed by another process: it runs as a plain run. Stopping the iteration, or the end
// of ctx, cancels the run as it cancels a plain one: it ends with what it has, which its conversation keeps, and is
// not resumed.
func (e *Engine) Run(ctx context.Context, req *host.Request) iter.Seq2[*host.Event, error] {
	if req.Model != nil || req.Steps != nil {
		return e.orch.Run(ctx, req)
	}
	return func(yield func(*host.Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		id := newID()
		lr := &liveRun{ctx: ctx, interactor: req.Interactor, events: make(chan item, 64)}
		e.mu.Lock()
		e.live[id] = lr
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.live, id)
			e.mu.Unlock()
		}()
		in := input{Prompt: req.Prompt, ConversationID: req.ConversationID, StartConversation: req.StartConversation,
			ToolChoices: req.ToolChoices, DisabledTools: req.DisabledTools, Tag: req.Tag, Subject: host.Subject(ctx), OutputSchema: string(req.OutputSchema)}
		if _, err := dbos.RunWorkflow(e.dctx, e.workflow, in, dbos.WithWorkflowID(id)); err != nil {
			yield(nil, fmt.Errorf("starting a durable run: %w", err))
			return
		}
		stopped := false
		for it := range lr.events {
			if !stopped && !yield(it.ev, it.err) {
				stopped = true // the rest is drained, so that the run is never blocked on its events
				cancel()
			}
		}
	}
}

// workflow runs one run: the caller's, or one resumed after a crash. The run's context derives from the
// workflow's, which ends when the engine closes (the run is interrupted), and ends with the caller's (the run is
// cancelled).
func (e *Engine) workflow(wctx dbos.Context, in input) (output, error) {
	id, err := dbos.GetWorkflowID(wctx)
	if err != nil {
		return output{}, err
	}
	e.mu.Lock()
	lr := e.live[id]
	e.mu.Unlock()
	ctx, cancel := context.WithCancelCause(wctx)
	defer cancel(nil)
	var dest *Resumed
	if lr != nil {
		ctx = telemetry.Carry(lr.ctx, ctx) // the run stays in its caller's trace
		// and keeps what its caller marked it with (its origin, a recorder's expectation, ...)
		ctx = callerValues{Context: ctx, caller: lr.ctx}
		defer context.AfterFunc(lr.ctx, func() { cancel(context.Cause(lr.ctx)) })()
		dest = &Resumed{
			Interactor: lr.interactor,
			Event:      func(ev *host.Event) { lr.events <- item{ev: ev} },
			End: func(_ *host.Answer, err error) {
				if err != nil {
					lr.events <- item{err: err}
				}
				close(lr.events)
			},
		}
	} else {
		ctx = host.WithSubject(host.WithOrigin(ctx, resumedOrigin(in.Tag)), in.Subject)
		dest = e.resumed(ctx, cancel, id, in.Tag)
	}
	req := &host.Request{
		Prompt: in.Prompt, ConversationID: in.ConversationID, StartConversation: in.StartConversation,
		Selection:  host.Selection{ToolChoices: in.ToolChoices, DisabledTools: in.DisabledTools},
		Interactor: dest.Interactor, Steps: steps{wctx}, Tag: in.Tag,
	}
	if in.OutputSchema != "" {
		req.OutputSchema = json.RawMessage(in.OutputSchema)
	}
	var ans *host.Answer
	var runErr error
	for ev, err := range e.orch.Run(ctx, req) {
		if err != nil {
			runErr = err
			break
		}
		if ev.Kind == host.EventAnswer {
			ans = ev.Answer
		}
		dest.Event(ev)
	}
	dest.End(ans, runErr)
	if err := wctx.Err(); err != nil {
		return output{}, err // interrupted: the workflow stays pending, to be resumed
	}
	out := output{}
	if ans != nil {
		out.ConversationID, out.StoppedBy = ans.ConversationID, string(ans.StoppedBy)
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	return out, nil
}

// resumed returns where the events of a run resumed after a crash go: its front end's, or nowhere.
func (e *Engine) resumed(ctx context.Context, cancel context.CancelCauseFunc, id, tag string) *Resumed {
	e.logger.Info("durable: resuming a run interrupted by a crash", "run", id, "tag", tag)
	prefix, _, _ := strings.Cut(tag, ":")
	e.mu.Lock()
	r := e.resumers[prefix]
	e.mu.Unlock()
	var dest *Resumed
	if r != nil && tag != "" {
		dest = r(ctx, cancel, tag)
	}
	if dest == nil {
		dest = &Resumed{}
	}
	if dest.Event == nil {
		dest.Event = func(*host.Event) {}
	}
	if dest.End == nil {
		dest.End = func(*host.Answer, error) {}
	}
	return dest
}

// resumedOrigin is the origin (host.WithOrigin) of a run resumed after a crash: its front end's, known by the
// prefix of its tag ("a2a (resumed)"), or "durable".
func resumedOrigin(tag string) string {
	if prefix, _, ok := strings.Cut(tag, ":"); ok && prefix != "" {
		return prefix + " (resumed)"
	}
	return "durable"
}

// callerValues is the context of a caller's run in its workflow: it ends with the workflow's (Context), and finds
// the values that context lacks in the caller's, as the run would under a plain Run.
type callerValues struct {
	context.Context
	caller context.Context
}

func (c callerValues) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.caller.Value(key)
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// steps runs a run's steps as DBOS steps of its workflow. A step's function runs under the run's ctx (which
// derives from the workflow's), so that the run's own timeouts and cancellations reach it. Once the workflow is
// interrupted, no step runs: what the run does then (saving a cancelled answer) must not happen, as the run will
// be resumed.
type steps struct{ wctx dbos.Context }

func (s steps) Step(ctx context.Context, name string, do func(context.Context) ([]byte, error)) ([]byte, error) {
	if err := s.wctx.Err(); err != nil {
		return nil, err
	}
	return dbos.RunAsStep(s.wctx, s.wrap(ctx, do), dbos.WithStepName(name))
}

// wrap runs do under ctx, unless the workflow was interrupted in the meantime.
func (s steps) wrap(ctx context.Context, do func(context.Context) ([]byte, error)) dbos.Step[json.RawMessage] {
	return func(context.Context) (json.RawMessage, error) {
		if err := s.wctx.Err(); err != nil {
			return nil, err
		}
		b, err := do(ctx)
		return json.RawMessage(b), err
	}
}

func (s steps) Go(ctx context.Context, name string, do func(context.Context) ([]byte, error)) func() ([]byte, error) {
	if err := s.wctx.Err(); err != nil {
		return func() ([]byte, error) { return nil, err }
	}
	ch, err := dbos.Go(s.wctx, s.wrap(ctx, do), dbos.WithStepName(name))
	if err != nil {
		return func() ([]byte, error) { return nil, err }
	}
	return func() ([]byte, error) {
		o := <-ch
		return o.Result, o.Err
	}
}
