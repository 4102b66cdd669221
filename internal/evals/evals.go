// Package evals runs eval datasets through an agent and checks each answer against what its case expects: the
// engine of `agenthost eval` and of the console's eval view. A dataset is a JSON-lines file of cases.
//
// It imports host, llm and internal/schemacheck, and the standard library.
package evals

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/host"
)

// Result is a case's outcome (`agenthost eval --json` prints it).
type Result struct {
	Name       string             `json:"name"`
	Line       int                `json:"line"`
	Passed     bool               `json:"passed"`
	Failures   []string           `json:"failures"`
	Answer     string             `json:"answer"`
	Output     json.RawMessage    `json:"output,omitempty"`
	StoppedBy  host.StopReason    `json:"stopped_by,omitempty"`
	Tools      []string           `json:"tools_called"`
	Sources    int                `json:"sources"`
	Checks     []host.CheckResult `json:"checks"`
	DurationMS int64              `json:"duration_ms"`
	Error      string             `json:"error,omitempty"`
}

// Report is the outcome of a dataset.
type Report struct {
	Cases  []*Result `json:"cases"`
	Passed int       `json:"passed"`
	Failed int       `json:"failed"`
}

// Dataset is a dataset file the configuration names ([eval] datasets).
type Dataset struct {
	// Name is the file's name without its directory and .jsonl; Path its path.
	Name  string `json:"name"`
	Path  string `json:"path"`
	Cases int    `json:"cases"`
	// Error says why the file cannot be read; Cases is 0 then.
	Error string `json:"error,omitempty"`
}

// Suite runs the datasets of a configuration through an orchestrator whose conversations are kept in memory, so
// that evaluating leaves the state as it was.
type Suite struct{}

// Datasets lists the datasets the configuration names, in its order.
func (s *Suite) Datasets() []Dataset { return nil }

// Run runs the named dataset, concurrency cases at once (0 means 4), calling onCase (when not nil) with each case's
// result as it ends, and returns the report, cases in the dataset's order.
func (s *Suite) Run(ctx context.Context, dataset string, concurrency int, onCase func(*Result)) (*Report, error) {
	return nil, nil
}
