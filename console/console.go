package console

import (
	"embed"
	"log/slog"
	"net/http"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/runlog"
)

// web holds the page: index.html and the files it loads.
//
//go:embed web
var web embed.FS

// Options configures a Console. Orchestrator and Runs are required; the other fields may be left zero, and the
// console then shows that the feature is not there.
type Options struct {
	Orchestrator *host.Orchestrator
	// Runs records every run of the process; the console lists and follows them.
	Runs *runlog.Recorder
	// Evals runs the configured eval datasets; nil when none are configured.
	Evals *evals.Suite
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Console serves the web console.
type Console struct {
	opts Options
}

// New returns a console.
func New(opts *Options) *Console {
	c := &Console{}
	if opts != nil {
		c.opts = *opts
	}
	return c
}

// Handler returns the console's HTTP handler.
func (c *Console) Handler() http.Handler {
	return http.FileServerFS(web)
}

// Close cancels the runs the console started and waits for them to end. It is idempotent.
func (c *Console) Close() {}
