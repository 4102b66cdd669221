// Command codeload measures what code mode saves on a task of many dependent tool calls: the same task run through
// agenthost without code mode, the model making the calls in rounds, and with [code_mode] enabled, the model sending
// one run_code program that makes them all. It prints, for each run, the model requests, the prompt bytes (the request
// bodies as sent, summed over the run), the tool calls executed and whether the answer is right.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/codeload         # the measurement
//	codeload serve                           # the shop: the stdio MCP server of the task's tools
//
// The product is built through the composition root (internal/wiring.Build) from agenthost's defaults, with no
// built-in tool, state in memory, the model internal/testkit/fakellm (recording each request's body), and one stdio
// MCP server: this binary's serve subcommand, a shop whose tools have input and output schemas and fixed data. The
// task: how many units of the garden category are in stock. It takes 21 dependent calls: find_items (10 item ids),
// item_details of each id (10 calls; each gives a sku), stock_level of each sku (10 calls), then the sum.
//
// The scripted model is careful: without code mode it reads each round's results and makes the next round's calls
// in parallel (1, then 10, then 10; [agent] max_tool_calls is 10, the default, which a round of 10 fits), then
// answers with the sum it computed. With code mode it sends one run_code program that makes the 21 calls (each
// round's with Promise.all) and returns the sum, then answers with the value it read.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/bench/benchcfg"
	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/llm"
)

func main() {
	benchcli.Main("codeload", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		return serve(ctx, args[1:], stderr)
	}
	fs := flag.NewFlagSet("codeload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	without, err := measure(ctx, []string{self, "serve"}, false)
	if err != nil {
		return fmt.Errorf("without code mode: %w", err)
	}
	with, err := measure(ctx, []string{self, "serve"}, true)
	if err != nil {
		return fmt.Errorf("with code mode: %w", err)
	}
	return write(stdout, without, with)
}

// The task, the shop's tool names as agenthost offers them (the server is named "shop"), and the answer's form.
const (
	prompt      = "How many units of the garden category are in stock in total?"
	findTool    = "shop_find_items"
	detailsTool = "shop_item_details"
	stockTool   = "shop_stock_level"
	answerForm  = "%d units of the garden category are in stock."
)

// program is the run_code program of the scripted model: the task's 21 calls, each round's in parallel, and the sum.
const program = `const {item_ids} = await tools.shop_find_items({category: "garden"});
const items = await Promise.all(item_ids.map(id => tools.shop_item_details({item_id: id})));
const stock = await Promise.all(items.map(item => tools.shop_stock_level({sku: item.sku})));
return {total_in_stock: stock.reduce((n, s) => n + s.in_stock, 0)};`

// measurement is one run's outcome.
type measurement struct {
	codeMode    bool
	requests    int // model requests of the run
	promptBytes int // their bodies, summed
	toolCalls   int // tool calls executed, run_code's nested calls included, run_code itself not
	failed      int // of those, the ones that failed
	runCode     int // run_code calls
	answer      string
	right       bool // the run answered, with the known total
}

// measure runs the task once with the shop started as server (a command and its arguments), code mode on or off.
func measure(ctx context.Context, server []string, codeMode bool) (*measurement, error) {
	fake := fakellm.New()
	defer fake.Close()
	fake.SetResponder(respond)

	cfg := benchcfg.Bare(fake.URL)
	cfg.Agent.MaxToolCalls = 10 // the default, stated: a round of 10 parallel calls fits it
	cfg.CodeMode.Enabled = codeMode
	benchcfg.AddStdio(cfg, "shop", server[0], server[1:]...)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Version: "codeload"})
	if err != nil {
		return nil, err
	}
	defer app.Close()

	ans, err := app.Orchestrator().Ask(ctx, &host.Request{Prompt: prompt}, nil)
	if err != nil {
		return nil, err
	}
	m := &measurement{codeMode: codeMode, answer: ans.Text}
	for _, r := range fake.Requests() {
		m.requests++
		m.promptBytes += len(r.Body)
	}
	for _, c := range ans.ToolCalls {
		if c.Name == host.CodeToolName {
			m.runCode++
			continue
		}
		m.toolCalls++
		if !c.OK {
			m.failed++
		}
	}
	m.right = ans.StoppedBy == host.StopAnswered && ans.Text == fmt.Sprintf(answerForm, totalInStock())
	return m, nil
}

// respond is the scripted model. With run_code offered it sends the program, then answers with the total the
// program returned. Without, it makes the calls round by round from what the last round returned, then answers with
// the sum of the stock levels.
func respond(req *fakellm.Request) fakellm.Turn {
	if slices.Contains(req.ToolNames(), host.CodeToolName) {
		return respondCode(req)
	}
	calls, results := lastRound(req)
	if len(calls) == 0 {
		return turn(findTool, map[string]string{"category": category})
	}
	switch calls[0].Function.Name {
	case findTool:
		var out findOutput
		if err := json.Unmarshal([]byte(results[0]), &out); err != nil {
			return fakellm.Turn{Text: "find_items returned no ids: " + err.Error()}
		}
		var t fakellm.Turn
		for _, id := range out.ItemIDs {
			t.ToolCalls = append(t.ToolCalls, turn(detailsTool, map[string]string{"item_id": id}).ToolCalls...)
		}
		return t
	case detailsTool:
		var t fakellm.Turn
		for _, r := range results {
			var d itemDetails
			if err := json.Unmarshal([]byte(r), &d); err != nil {
				return fakellm.Turn{Text: "item_details returned no sku: " + err.Error()}
			}
			t.ToolCalls = append(t.ToolCalls, turn(stockTool, map[string]string{"sku": d.SKU}).ToolCalls...)
		}
		return t
	case stockTool:
		total := 0
		for _, r := range results {
			var s stockLevel
			if err := json.Unmarshal([]byte(r), &s); err != nil {
				return fakellm.Turn{Text: "stock_level returned no stock: " + err.Error()}
			}
			total += s.InStock
		}
		return fakellm.Turn{Text: fmt.Sprintf(answerForm, total)}
	}
	return fakellm.Turn{Text: "I cannot tell."}
}

// totalPattern finds the program's returned total in run_code's result.
var totalPattern = regexp.MustCompile(`"total_in_stock":\s*(\d+)`)

// respondCode is the scripted model with code mode: the program, then the answer from its result.
func respondCode(req *fakellm.Request) fakellm.Turn {
	calls, results := lastRound(req)
	if len(calls) == 0 {
		return turn(host.CodeToolName, map[string]string{"code": program})
	}
	if m := totalPattern.FindStringSubmatch(results[0]); m != nil {
		n, _ := strconv.Atoi(m[1])
		return fakellm.Turn{Text: fmt.Sprintf(answerForm, n)}
	}
	return fakellm.Turn{Text: "The program returned no total: " + results[0]}
}

// lastRound returns the tool calls of the request's last assistant message and their results, in the calls' order,
// without the tags agenthost puts around each.
func lastRound(req *fakellm.Request) ([]fakellm.MessageToolCall, []string) {
	last := -1
	for i, m := range req.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			last = i
		}
	}
	if last < 0 {
		return nil, nil
	}
	calls := req.Messages[last].ToolCalls
	results := make([]string, len(calls))
	for _, m := range req.Messages[last+1:] {
		for i, c := range calls {
			if m.Role == "tool" && m.ToolCallID == c.ID {
				results[i], _ = llm.UnwrapToolOutput(m.Content)
			}
		}
	}
	return calls, results
}

// turn is a turn of one call of name with args.
func turn(name string, args map[string]string) fakellm.Turn {
	b, _ := json.Marshal(args) // strings only: cannot fail
	return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: name, Arguments: string(b)}}}
}

// write prints the two runs and what code mode saved.
func write(w io.Writer, without, with *measurement) error {
	fmt.Fprintf(w, "task: %q, %d dependent tool calls to one stdio MCP server, the right answer %d\n\n", prompt, 1+2*itemCount, totalInStock())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "code mode\tmodel requests\tprompt bytes\ttool calls\tfailed\trun_code calls\tright answer")
	for _, m := range []*measurement{without, with} {
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t%d\t%d\t%v\n", m.codeMode, m.requests, m.promptBytes, m.toolCalls, m.failed, m.runCode, m.right)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !without.right || !with.right {
		return errors.New("a run gave the wrong answer")
	}
	_, err := fmt.Fprintf(w, "\ncode mode: %d model requests instead of %d, %.1f%% fewer prompt bytes (%d instead of %d)\n",
		with.requests, without.requests, saving(without, with)*100, with.promptBytes, without.promptBytes)
	return err
}

// saving is the share of the prompt bytes that code mode saves.
func saving(without, with *measurement) float64 {
	return 1 - float64(with.promptBytes)/float64(without.promptBytes)
}
