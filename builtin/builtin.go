// Package builtin provides the tools agenthost has without any server: a host.Toolset named "builtin" holding the
// tools the configuration enables. Each tool is one entry in a table of constructors, wired explicitly by New; there
// is no init() registry. Each tool is safe by default: fetch_url refuses private addresses in its dialer, the file
// tools stay inside their roots and never write.
//
// builtin imports package host, the standard library and the libraries its tools are made of (HTML conversion,
// SQLite); never config, an MCP or A2A package.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/builtin/docsearch"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/statedir"
)

// Options configures the built-in tools. A nil *Options means all defaults. Each tool reads its own field only when
// it is enabled.
type Options struct {
	// Now is the clock; nil means time.Now. Tools that default to the local time zone use the location of the
	// times it returns, so a test clock can fix the zone too.
	Now func() time.Time
	// Logger receives debug records of tool calls and the background work of doc_search; nil discards them.
	Logger *slog.Logger
	// Version is agenthost's version, for the User-Agent of fetch_url and web_search; "" means "dev".
	Version string
	// StateDir is agenthost's state directory, where doc_search keeps its index unless DocSearch.Index is set;
	// "" means DefaultStateDir().
	StateDir string
	// Agent is the agent's name, which names doc_search's index in StateDir, so that each agent has its own; ""
	// means one index, docsearch.unnamed.db, for every agent that does not give a name.
	Agent string

	FetchURL  FetchURLOptions
	WebSearch WebSearchOptions
	Files     FilesOptions
	DocSearch DocSearchOptions
	Calculate CalculateOptions
}

// FetchURLOptions configures fetch_url ([builtin.fetch_url]).
type FetchURLOptions struct {
	// Timeout bounds a whole fetch, redirects included; 0 means 30s.
	Timeout time.Duration
	// MaxBytes caps the body read; 0 means 5 MiB. A longer body is cut there and the result says so.
	MaxBytes int64
	// MaxChars is the default max_chars of the text returned to the model; 0 means 20000.
	MaxChars int
	// AllowPrivate lets the dialer reach loopback, private, link-local, CGNAT and other non-public addresses.
	// Cloud metadata addresses stay refused unless their host is in AllowHosts.
	AllowPrivate bool
	// AllowHosts are hosts ("example.internal") or host:port pairs ("127.0.0.1:8080") exempt from the address
	// check.
	AllowHosts []string
	// UserAgent replaces the default "agenthost/<version> (fetch_url)".
	UserAgent string
}

// WebSearchOptions configures web_search ([builtin.web_search]).
type WebSearchOptions struct {
	// Backend is "searxng", "brave" or "tavily"; required when web_search is enabled.
	Backend string
	// URL is the SearXNG instance (required for searxng), or replaces the API endpoint of brave or tavily.
	URL string
	// APIKey is the key of brave or tavily, read by the caller from the configured variable; never logged.
	APIKey string
	// MaxResults is the default number of results; 0 means 5. A call may ask for up to 20.
	MaxResults int
	// Timeout bounds one search; 0 means 15s.
	Timeout time.Duration
}

// FilesOptions configures read_file, list_dir and search_files ([builtin.files]).
type FilesOptions struct {
	// Roots are the directories the tools may read, required when one of them is enabled. Paths given by the
	// model are relative to the first root, or absolute inside any root.
	Roots []string
	// MaxFileBytes is the size above which a file is refused; 0 means 10 MiB.
	MaxFileBytes int64
	// MaxResults caps the matches of search_files and the entries of list_dir; 0 means 200.
	MaxResults int
}

// DocSearchOptions configures doc_search ([builtin.doc_search]).
type DocSearchOptions struct {
	// Roots are the directories whose documents are indexed; required when doc_search is enabled.
	Roots []string
	// Extensions are the file extensions indexed, with their dot; nil means .md, .markdown, .txt, .html, .htm.
	Extensions []string
	// Index is the database file; "" means "<agent>.docsearch.db" in the state directory (see Options.Agent). Agents
	// sharing a file keep their documents apart by root.
	Index string
	// RefreshInterval is how often the index is brought up to date in the background; 0 means 5m, negative
	// means only at start-up.
	RefreshInterval time.Duration
	// MaxFileBytes is the size above which a document is skipped; 0 means 10 MiB.
	MaxFileBytes int64
	// MaxResults is the default number of results; 0 means 5. A call may ask for up to 50.
	MaxResults int
}

// CalculateOptions configures calculate ([builtin.calculate]).
type CalculateOptions struct {
	// Precision is the number of significant decimal digits of results that are not exact (1/3, sqrt(2));
	// 0 means 50.
	Precision int
}

// DefaultStateDir returns agenthost's state directory: $XDG_STATE_HOME/agenthost, else ~/.local/state/agenthost.
func DefaultStateDir() (string, error) {
	dir, err := statedir.Dir()
	if err != nil {
		return "", fmt.Errorf("builtin: %w", err)
	}
	return dir, nil
}

// DocSearchIndex returns the path of doc_search's database: DocSearch.Index, else "<agent>.docsearch.db" in the
// state directory, or "docsearch.unnamed.db" when Agent is "". A state database is "<agent>.db", and a valid agent
// name has no dot (config checks it), so no default index is ever an agent's state database: both default names
// have a dot before ".db". (The index of agents without a name used to be "docsearch.db", the state database of an
// agent named "docsearch".)
func (o *Options) DocSearchIndex() (string, error) {
	if o.DocSearch.Index != "" {
		return o.DocSearch.Index, nil
	}
	dir := o.StateDir
	if dir == "" {
		var err error
		if dir, err = DefaultStateDir(); err != nil {
			return "", err
		}
	}
	name := "docsearch.unnamed.db"
	if o.Agent != "" {
		name = o.Agent + ".docsearch.db"
	}
	return filepath.Join(dir, name), nil
}

// OpenDocIndex opens doc_search's index as the tool does: the file DocSearchIndex names, over DocSearch's roots,
// extensions and size bound. `agenthost index` builds it the same way.
func (o *Options) OpenDocIndex(logger *slog.Logger) (*docsearch.Index, error) {
	path, err := o.DocSearchIndex()
	if err != nil {
		return nil, err
	}
	d := o.DocSearch
	return docsearch.Open(&docsearch.Options{
		Path: path, Roots: d.Roots, Extensions: d.Extensions, MaxFileBytes: d.MaxFileBytes, Logger: logger,
	})
}

// env is what a tool constructor gets: Options with the defaults filled in, and the Toolset's hooks.
type env struct {
	opts   Options
	now    func() time.Time
	logger *slog.Logger

	mu       sync.Mutex
	shared   map[string]any // values several tools share (the file roots), built once
	closers  []func() error
	statuses []func() Status
}

// share returns the value built under key, building it with build the first time. build runs under the env's lock,
// so it must not call the env's other methods.
func (e *env) share(key string, build func() (any, error)) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.shared[key]; ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	if e.shared == nil {
		e.shared = map[string]any{}
	}
	e.shared[key] = v
	return v, nil
}

// onClose registers f to run when the Toolset is closed, in reverse order of registration.
func (e *env) onClose(f func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closers = append(e.closers, f)
}

// reportStatus registers a tool's status for Toolset.Statuses.
func (e *env) reportStatus(f func() Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.statuses = append(e.statuses, f)
}

// Status is the state of a built-in tool's background work, as `agenthost check` shows it.
type Status struct {
	Tool string
	// State is a word: "ready", "indexing", "failed".
	State string
	// Detail says more: how many documents are indexed, what failed.
	Detail string
}

// constructor makes one built-in tool. A constructor that fails (a missing root, a missing backend) stops New.
type constructor struct {
	name string
	new  func(*env) (host.Tool, error)
}

// constructors lists every built-in tool, in the order Available reports them. A new tool is one more line here.
var constructors = []constructor{
	{"current_time", func(e *env) (host.Tool, error) { return newCurrentTime(e), nil }},
	{"calculate", newCalculate},
	{"fetch_url", newFetchURL},
	{"web_search", newWebSearch},
	{"read_file", newReadFile},
	{"list_dir", newListDir},
	{"search_files", newSearchFiles},
	{"doc_search", newDocSearch},
}

// Available returns the names of all built-in tools.
func Available() []string {
	names := make([]string, len(constructors))
	for i, c := range constructors {
		names[i] = c.name
	}
	return names
}

// Toolset is a host.Toolset holding the enabled built-in tools. Its list never changes. Close stops the background
// work of its tools.
type Toolset struct {
	tools []host.Tool
	env   *env

	closeOnce sync.Once
	closeErr  error
}

var _ host.Toolset = (*Toolset)(nil)

// New returns a Toolset with the named tools, in the order given. An empty list gives an empty Toolset. Unknown or
// repeated names are an error that lists the available names; so is a tool whose options are unusable. Background
// work (doc_search's indexing) starts here and runs until Close.
func New(names []string, opts *Options) (*Toolset, error) {
	e := &env{now: time.Now, logger: slog.New(slog.DiscardHandler)}
	if opts != nil {
		e.opts = *opts
		if opts.Now != nil {
			e.now = opts.Now
		}
		if opts.Logger != nil {
			e.logger = opts.Logger
		}
	}
	if e.opts.Version == "" {
		e.opts.Version = "dev"
	}
	var unknown, repeated []string
	seen := map[string]bool{}
	var chosen []constructor
	for _, name := range names {
		i := slices.IndexFunc(constructors, func(c constructor) bool { return c.name == name })
		switch {
		case i < 0:
			unknown = append(unknown, fmt.Sprintf("%q", name))
		case seen[name]:
			repeated = append(repeated, fmt.Sprintf("%q", name))
		default:
			seen[name] = true
			chosen = append(chosen, constructors[i])
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("builtin: unknown tool %s (available: %s)", strings.Join(unknown, ", "),
			strings.Join(Available(), ", "))
	}
	if len(repeated) > 0 {
		return nil, fmt.Errorf("builtin: tool %s listed more than once", strings.Join(repeated, ", "))
	}
	ts := &Toolset{env: e}
	var errs []error
	for _, c := range chosen {
		t, err := c.new(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("builtin: %s: %w", c.name, err))
			continue
		}
		ts.tools = append(ts.tools, t)
	}
	if err := errors.Join(errs...); err != nil {
		ts.Close()
		return nil, err
	}
	return ts, nil
}

// Name implements host.Toolset.
func (ts *Toolset) Name() string { return "builtin" }

// Tools implements host.Toolset.
func (ts *Toolset) Tools(context.Context) ([]host.Tool, error) {
	return ts.tools, nil
}

// Changed implements host.Notifier: the built-in tools never change.
func (ts *Toolset) Changed() <-chan struct{} { return nil }

// Statuses returns the state of the tools that work in the background, in the order they were enabled.
func (ts *Toolset) Statuses() []Status {
	ts.env.mu.Lock()
	fs := slices.Clone(ts.env.statuses)
	ts.env.mu.Unlock()
	out := make([]Status, len(fs))
	for i, f := range fs {
		out[i] = f()
	}
	return out
}

// Close stops the tools' background work and releases what they hold (doc_search's database). It waits for that
// work to end. Close is idempotent.
func (ts *Toolset) Close() error {
	ts.closeOnce.Do(func() {
		ts.env.mu.Lock()
		closers := slices.Clone(ts.env.closers)
		ts.env.mu.Unlock()
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		ts.closeErr = errors.Join(errs...)
	})
	return ts.closeErr
}
