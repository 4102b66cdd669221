// Package builtin provides the tools agenthost has without any server: a host.Toolset named "builtin" holding the
// tools the configuration enables. Each tool is one entry in a table of constructors, wired explicitly by New; there
// is no init() registry.
//
// builtin imports package host and the standard library only.
package builtin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
)

// Options configures the built-in tools. A nil *Options means all defaults.
type Options struct {
	// Now is the clock; nil means time.Now. Tools that default to the local time zone use the location of the
	// times it returns, so a test clock can fix the zone too.
	Now func() time.Time
	// Logger receives debug records of tool calls; nil discards them.
	Logger *slog.Logger
}

// env is what a tool constructor gets: Options with the defaults filled in.
type env struct {
	now    func() time.Time
	logger *slog.Logger
}

// constructor makes one built-in tool.
type constructor struct {
	name string
	new  func(*env) host.Tool
}

// constructors lists every built-in tool, in the order Available reports them. A new tool is one more line here.
var constructors = []constructor{
	{"current_time", newCurrentTime},
}

// Available returns the names of all built-in tools.
func Available() []string {
	names := make([]string, len(constructors))
	for i, c := range constructors {
		names[i] = c.name
	}
	return names
}

// Toolset is a host.Toolset holding the enabled built-in tools. Its list never changes.
type Toolset struct {
	tools []host.Tool
}

var _ host.Toolset = (*Toolset)(nil)

// New returns a Toolset with the named tools, in the order given. An empty list gives an empty Toolset. Unknown or
// repeated names are an error that lists the available names.
func New(names []string, opts *Options) (*Toolset, error) {
	e := &env{now: time.Now, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if opts != nil {
		if opts.Now != nil {
			e.now = opts.Now
		}
		if opts.Logger != nil {
			e.logger = opts.Logger
		}
	}
	ts := &Toolset{}
	var unknown, repeated []string
	seen := map[string]bool{}
	for _, name := range names {
		i := slices.IndexFunc(constructors, func(c constructor) bool { return c.name == name })
		switch {
		case i < 0:
			unknown = append(unknown, fmt.Sprintf("%q", name))
		case seen[name]:
			repeated = append(repeated, fmt.Sprintf("%q", name))
		default:
			seen[name] = true
			ts.tools = append(ts.tools, constructors[i].new(e))
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("builtin: unknown tool %s (available: %s)", strings.Join(unknown, ", "),
			strings.Join(Available(), ", "))
	}
	if len(repeated) > 0 {
		return nil, fmt.Errorf("builtin: tool %s listed more than once", strings.Join(repeated, ", "))
	}
	return ts, nil
}

// Name implements host.Toolset.
func (ts *Toolset) Name() string { return "builtin" }

// Tools implements host.Toolset.
func (ts *Toolset) Tools(context.Context) ([]host.Tool, error) {
	return slices.Clone(ts.tools), nil
}
