// Command faultload measures how runs fare when the model API fails: it runs the same load through the real
// orchestrator and the real OpenAI-compatible client, built through the composition root (internal/wiring) from
// agenthost's defaults, against internal/testkit/fakellm behind internal/bench/faultproxy, once with no fault and once
// for each fault rate asked for, and prints the share of runs that succeeded (and the share expected if each request
// fails independently), the model calls, requests and retries, the faults by kind, and the latency of the runs that
// succeeded.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/faultload [-runs 2000] [-c 20] [-rate 0.2] [-retries N] [-latency 20ms]
//
// A run is two model calls, as in internal/bench/loadtest: the first asks for the built-in current_time tool, the
// second answers. A fault is, at random among the failing requests, a 429 with Retry-After (-retry-after), a 500, a
// 503, or a connection closed before the first byte. -retries replaces [model] max_retries (default: the
// configuration's default), to compare settings.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/bench/faultproxy"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/llm"
)

func main() {
	benchcli.Main("faultload", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

type options struct {
	runs, concurrency int
	rates             []float64
	retries           []int
	latency           time.Duration
	retryAfter        int
	seed              uint64
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("faultload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	def := config.Default().Model.MaxRetries
	fs.IntVar(&o.runs, "runs", 2000, "runs per setting")
	fs.IntVar(&o.concurrency, "c", 20, "runs at once")
	rates := fs.String("rate", "0.2", "fault rates to measure besides 0, comma-separated")
	retries := fs.String("retries", strconv.Itoa(def), "[model] max_retries values to measure, comma-separated")
	fs.DurationVar(&o.latency, "latency", 20*time.Millisecond, "the fake model's latency per request")
	fs.IntVar(&o.retryAfter, "retry-after", 1, "Retry-After of the 429s, in seconds")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the faults")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.rates = []float64{0}
	for _, f := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(f, 64)
		if err != nil || r <= 0 || r >= 1 {
			return nil, fmt.Errorf("-rate %q: want rates between 0 and 1", f)
		}
		o.rates = append(o.rates, r)
	}
	for _, f := range strings.Split(*retries, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 10 {
			return nil, fmt.Errorf("-retries %q: want 0..10", f)
		}
		o.retries = append(o.retries, n)
	}
	if o.runs < 1 || o.concurrency < 1 {
		return nil, errors.New("-runs and -c must be at least 1")
	}
	return o, nil
}

// result is one setting's outcome.
type result struct {
	rate      float64
	retries   int
	runs, ok  int
	counts    faultproxy.Counts
	calls     int64           // model calls the orchestrator made; the requests beyond them are retries
	latencies []time.Duration // of the successful runs, sorted
	failures  map[string]int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var results []*result
	for _, retries := range o.retries {
		for _, rate := range o.rates {
			r, err := measure(ctx, o, rate, retries)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	write(stdout, o, results)
	return nil
}

// answerText is the second model call's answer.
const answerText = "It is 14:05 by the clock tool."

func measure(ctx context.Context, o *options, rate float64, retries int) (*result, error) {
	fake := fakellm.New()
	defer fake.Close()
	fake.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return fakellm.Turn{Latency: o.latency, Text: answerText}
			}
		}
		return fakellm.Turn{Latency: o.latency, ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}}
	})
	target, err := url.Parse(fake.URL)
	if err != nil {
		return nil, err
	}
	// The proxy forwards to the server; the client keeps the API's path.
	proxy := faultproxy.New(&url.URL{Scheme: target.Scheme, Host: target.Host}, &faultproxy.Options{Rate: rate, Seed: o.seed, RetryAfter: o.retryAfter})
	front := httptest.NewServer(proxy)
	defer front.Close()

	// agenthost's defaults, with the fake model behind the proxy, current_time as the only tool, and nothing kept.
	cfg := config.Default()
	cfg.Model.Provider, cfg.Model.BaseURL, cfg.Model.Model, cfg.Model.APIKeyEnv = config.ProviderOpenAI, front.URL+target.Path, "fake-model", ""
	cfg.Model.MaxRetries = retries
	cfg.Builtin.Tools = []string{"current_time"}
	cfg.State.Backend = config.StateMemory
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Version: "faultload"})
	if err != nil {
		return nil, err
	}
	defer app.Close()
	orch := app.Orchestrator()
	// Each run's model is the app's, counted: the requests beyond its calls are the retries.
	counted := &countingModel{Model: app.Model()}

	res := &result{rate: rate, retries: retries, runs: o.runs, failures: map[string]int{}}
	var mu sync.Mutex
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for range jobs {
				start := time.Now()
				ans, err := orch.Ask(ctx, &host.Request{Prompt: "What time is it?", Model: counted}, nil)
				d := time.Since(start)
				mu.Lock()
				switch {
				case err != nil:
					res.failures[err.Error()]++
				case ans.StoppedBy != host.StopAnswered || !strings.HasPrefix(ans.Text, answerText):
					res.failures["stopped: "+string(ans.StoppedBy)]++
				default:
					res.ok++
					res.latencies = append(res.latencies, d)
				}
				mu.Unlock()
			}
		})
	}
	for range o.runs {
		select {
		case jobs <- struct{}{}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.Sort(res.latencies)
	res.counts = proxy.Counts()
	res.calls = counted.calls.Load()
	return res, nil
}

// countingModel counts the calls made to its model.
type countingModel struct {
	llm.Model
	calls atomic.Int64
}

func (m *countingModel) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	m.calls.Add(1)
	return m.Model.Generate(ctx, req, onDelta)
}

// expected is the share of runs that succeed when each request fails independently with probability rate: a model
// call fails when all its retries+1 attempts do, and a run is two calls.
func expected(rate float64, retries int) float64 {
	call := 1 - math.Pow(rate, float64(retries+1))
	return call * call
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(int(q*float64(len(ds))), len(ds)-1)]
}

func write(w io.Writer, o *options, results []*result) {
	fmt.Fprintf(w, "faultload: %d runs per setting, %d at once, model latency %v, 429s with Retry-After %ds, seed %d\n\n",
		o.runs, o.concurrency, o.latency, o.retryAfter, o.seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault rate\tmax_retries\tsucceeded\tof runs\tshare\texpected\tmodel calls\trequests\tretries\tfaulted\t429\t500\t503\tclosed\tp50\tp90\tp99\tmax\t")
	for _, r := range results {
		c := r.counts
		fmt.Fprintf(tw, "%.2f\t%d\t%d\t%d\t%.2f%%\t%.2f%%\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			r.rate, r.retries, r.ok, r.runs, 100*float64(r.ok)/float64(r.runs), 100*expected(r.rate, r.retries),
			r.calls, c.Total(), c.Total()-r.calls, c.Failed(), c.Faults[faultproxy.TooManyRequests],
			c.Faults[faultproxy.InternalError], c.Faults[faultproxy.ServiceUnavailable], c.Faults[faultproxy.ConnectionClosed],
			ms(quantile(r.latencies, 0.5)), ms(quantile(r.latencies, 0.9)), ms(quantile(r.latencies, 0.99)), ms(quantile(r.latencies, 1)))
	}
	tw.Flush()
	for _, r := range results {
		for _, msg := range slices.Sorted(maps.Keys(r.failures)) {
			fmt.Fprintf(w, "rate %.2f, max_retries %d: %d × %s\n", r.rate, r.retries, r.failures[msg], msg)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }
