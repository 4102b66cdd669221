package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/internal/wiring"
)

// errCasesFailed ends an evaluation whose cases failed: exit code 1.
var errCasesFailed = errors.New("cases failed")

func cmdEval(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var c common
	c.register(fs)
	jsonOut := fs.Bool("json", false, "print the results as JSON")
	concurrency := fs.Int("concurrency", 4, "cases run at once: 1..64")
	only := fs.String("run", "", "run only the cases whose name matches this regular `expression`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: agenthost eval [flags] DATASET.jsonl

Runs each case of the dataset through the agent and checks its answer against what the case expects. Exits with 1
when a case fails. A case is one JSON object per line:

  {"name": "capital", "prompt": "What is the capital of France?",
   "conversation": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}],
   "output_schema": {...}, "checks": ["grounded"],
   "expect": {"contains": ["Paris"], "not_contains": ["Lyon"], "matches_schema": {...},
              "tools_called": ["web_search"], "min_sources": 1, "checks_passed": ["citations"],
              "stopped_by": "answered"}}

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: eval takes one dataset file", errUsage)
	}
	if *concurrency < 1 || *concurrency > 64 {
		return fmt.Errorf("%w: -concurrency must be between 1 and 64 (got %d)", errUsage, *concurrency)
	}
	cases, err := evals.ReadDataset(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("%w: -run: %w", errUsage, err)
		}
		cases = slices.DeleteFunc(cases, func(ec *evals.Case) bool { return !re.MatchString(ec.Name) })
		if len(cases) == 0 {
			return fmt.Errorf("%w: -run %q matches no case", errUsage, *only)
		}
	}
	a, err := c.app(ctx, fs, io.err, io.err, wiring.Evaluating)
	if err != nil {
		return err
	}
	defer a.Close()

	start := time.Now()
	var progress func(*evals.Result)
	if isTerminal(io.err) && !*jsonOut {
		done := 0
		progress = func(res *evals.Result) {
			done++
			mark := "✓"
			if !res.Passed {
				mark = "✗"
			}
			fmt.Fprintf(io.err, "%s %d/%d %s\n", mark, done, len(cases), res.Name)
		}
	}
	report := evals.RunCases(ctx, a.Orchestrator(), cases, *concurrency, progress)
	if err := ctx.Err(); err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else if err := printEval(io, report, time.Since(start)); err != nil {
		return err
	}
	if report.Failed > 0 {
		return fmt.Errorf("%w: %d of %d", errCasesFailed, report.Failed, len(report.Cases))
	}
	return nil
}

// printEval prints a table of the cases, what failed in each, and a summary.
func printEval(io *stdio, r *evals.Report, took time.Duration) error {
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tTIME\tTOOLS\tSOURCES\tCHECKS\tFIRST FAILURE")
	for _, c := range r.Cases {
		result, first := "pass", "-"
		if !c.Passed {
			result, first = "FAIL", truncate(c.Failures[0], 80)
		}
		passed := 0
		for _, ch := range c.Checks {
			if ch.Passed {
				passed++
			}
		}
		checks := "-"
		if len(c.Checks) > 0 {
			checks = fmt.Sprintf("%d/%d", passed, len(c.Checks))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1fs\t%s\t%d\t%s\t%s\n", c.Name, result, float64(c.DurationMS)/1000,
			orDefault(truncate(strings.Join(c.Tools, ", "), 40), "-"), c.Sources, checks, first)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cases {
		if c.Passed {
			continue
		}
		fmt.Fprintf(io.out, "\n%s (line %d):\n", c.Name, c.Line)
		for _, f := range c.Failures {
			fmt.Fprintf(io.out, "  - %s\n", f)
		}
	}
	fmt.Fprintf(io.out, "\n%s: %d passed, %d failed (%.1fs)\n", count(len(r.Cases), "case", "cases"), r.Passed, r.Failed, took.Seconds())
	return nil
}
