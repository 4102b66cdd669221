// Command toolrank measures the quality of tool search's ranking on public data with known answers: Gorilla's
// APIBench (github.com/ShishirPatil/gorilla, Apache-2.0). Its APIs become tools, one catalogue per dataset (TorchHub,
// TensorFlow Hub, Hugging Face), and its questions are the queries; the answer to a question is the API its
// reference call loads. It prints, per dataset and overall, recall@1 and recall@5 of plain BM25 over name and
// description (the baseline, computed here in the same run) and of agenthost's ranking as it ships.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/toolrank [-split eval]
//	go run ./internal/bench/toolrank -convert /path/to/gorilla.git   # re-derive testdata from a gorilla git directory
//	toolrank serve -dataset torchhub                                  # the stdio MCP server of one dataset's tools
//
// agenthost is built through the composition root (internal/wiring.Build) from its defaults, with no built-in tool,
// state in memory, the model internal/testkit/fakellm (never asked), and one stdio MCP server named after the
// dataset: this binary's serve subcommand. Each query goes to the ToolManager's Search, as search_tools does.
//
// The data is a compact copy under testdata/ (see its README): -split eval is the evaluation questions, -split train
// the training questions, which only TorchHub has.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/bench/benchcfg"
	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/wiring"
)

func main() {
	benchcli.Main("toolrank", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// rootData is the compact copy relative to the module's root, where `go run ./internal/bench/toolrank` runs.
const rootData = "internal/bench/toolrank/" + defaultData

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		return serve(ctx, args[1:], stderr)
	}
	fs := flag.NewFlagSet("toolrank", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", rootData, "the compact copy of APIBench")
	split := fs.String("split", "eval", "the questions: eval, or train (TorchHub only)")
	conv := fs.String("convert", "", "derive the compact copy (and its LICENSE) from this git directory of ShishirPatil/gorilla, then exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *conv != "" {
		c, err := convert(*conv)
		if err != nil {
			return err
		}
		if err := writeCorpus(c, *data); err != nil {
			return err
		}
		if err := copyLicense(*conv, filepath.Join(filepath.Dir(*data), "LICENSE")); err != nil {
			return err
		}
		for _, d := range c.Datasets {
			fmt.Fprintf(stdout, "%s: %d tools, %d eval questions (%d dropped), %d train questions (%d dropped)\n",
				d.Name, len(d.Tools), len(d.Eval), d.Dropped["eval"], len(d.Train), d.Dropped["train"])
		}
		return nil
	}
	if *split != "eval" && *split != "train" {
		return errors.New("-split must be eval or train")
	}
	abs, err := filepath.Abs(*data)
	if err != nil {
		return err
	}
	c, err := loadCorpus(abs)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rs, err := measure(ctx, c, *split, []string{self, "serve", "-data", abs})
	if err != nil {
		return err
	}
	return write(stdout, c, *split, rs)
}

// result is one dataset's counts: questions, and the questions whose answer each ranking put first and in its top 5.
type result struct {
	dataset   string
	tools     int
	questions int
	dropped   int
	base      hits
	agenthost hits
}

func (r result) recall(hits int) float64 { return float64(hits) / float64(max(r.questions, 1)) }

// questions returns the split's questions of d.
func questions(d *dataset, split string) []question {
	if split == "train" {
		return d.Train
	}
	return d.Eval
}

// measure ranks the split's questions of each dataset that has them, with the baseline and with agenthost connected
// to the server command (with "-dataset NAME" added to its arguments).
func measure(ctx context.Context, c *corpus, split string, server []string) ([]result, error) {
	var out []result
	for _, d := range c.Datasets {
		qs := questions(d, split)
		if len(qs) == 0 {
			continue
		}
		r := result{dataset: d.Name, tools: len(d.Tools), questions: len(qs), dropped: d.Dropped[split]}
		b := newBaseline(d.Tools)
		for _, q := range qs {
			r.base = r.base.add(rankOf(b.search(q.Query, 5), q.Answer))
		}
		if err := searchAgenthost(ctx, d, qs, append(slices.Clip(server), "-dataset", d.Name), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// add counts a rank (1-based; 0 for not found) into hits at 1 and at 5.
func (h hits) add(rank int) hits {
	if rank == 1 {
		h[0]++
	}
	if rank >= 1 && rank <= 5 {
		h[1]++
	}
	return h
}

// hits are the questions whose answer a ranking put first, and in its first 5.
type hits [2]int

func rankOf(ranked []int, answer int) int {
	for i, d := range ranked {
		if d == answer {
			return i + 1
		}
	}
	return 0
}

// searchAgenthost builds agenthost with d's tools from one stdio MCP server and counts its hits on qs into r.
func searchAgenthost(ctx context.Context, d *dataset, qs []question, server []string, r *result) error {
	fake := fakellm.New()
	defer fake.Close()
	cfg := benchcfg.Bare(fake.URL)
	benchcfg.AddStdio(cfg, d.Name, server[0], server[1:]...)
	if err := cfg.Validate(); err != nil {
		return err
	}
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Version: "toolrank"})
	if err != nil {
		return err
	}
	defer app.Close()
	listed, err := app.Tools().Tools(ctx)
	if err != nil {
		return err
	}
	// The served tools by the names agenthost gives them.
	index := map[string]int{}
	for i, t := range d.Tools {
		index[host.ToolName(cfg.MCP.Servers[d.Name].PrefixOrName(d.Name), t.Name)] = i
	}
	if len(listed) != len(d.Tools) {
		return fmt.Errorf("%d tools listed, want %d", len(listed), len(d.Tools))
	}
	for _, t := range listed {
		if _, ok := index[t.Spec.Name]; !ok {
			return fmt.Errorf("listed tool %q is none of the dataset's", t.Spec.Name)
		}
	}
	for _, q := range qs {
		found, err := app.Tools().Search(ctx, q.Query, &host.SearchOptions{MaxResults: 5})
		if err != nil {
			return err
		}
		ranked := make([]int, len(found))
		for i, h := range found {
			ranked[i] = index[h.Tool.Spec.Name]
		}
		r.agenthost = r.agenthost.add(rankOf(ranked, q.Answer))
	}
	return nil
}

// total is the micro-average of rs: all their questions together.
func total(rs []result) result {
	t := result{dataset: "overall"}
	for _, r := range rs {
		t.tools += r.tools
		t.questions += r.questions
		t.dropped += r.dropped
		for i := range 2 {
			t.base[i] += r.base[i]
			t.agenthost[i] += r.agenthost[i]
		}
	}
	return t
}

// ratio is agenthost's recall@5 over the baseline's.
func (r result) ratio() float64 { return float64(r.agenthost[1]) / float64(max(r.base[1], 1)) }

func write(w io.Writer, c *corpus, split string, rs []result) error {
	fmt.Fprintf(w, "APIBench %s questions (%s), one catalogue per dataset; recall@k: the answer among the first k\n\n", split, c.Source)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dataset\ttools\tquestions\tdropped\tBM25 R@1\tBM25 R@5\tagenthost R@1\tagenthost R@5\tR@5 ratio\t")
	for _, r := range append(rs, total(rs)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f×\t\n", r.dataset, r.tools, r.questions, r.dropped,
			r.recall(r.base[0]), r.recall(r.base[1]), r.recall(r.agenthost[0]), r.recall(r.agenthost[1]), r.ratio())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\ndropped: questions whose reference call matches no single API of the dataset")
	return err
}
