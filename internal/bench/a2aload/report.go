package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// The target: agenthost serves at least twice the JS agent's requests per second with at most a quarter of its RSS.
const (
	targetRPSRatio = 2.0
	targetRSSRatio = 0.25
)

// report holds the figures of one measurement.
type report struct {
	o       *options
	node    string    // node --version
	servers []*server // agenthost, then js-echo
	warmups []runResult
	runs    []runResult
	hwm     []int64 // each server's VmHWM at the end, in servers' order
}

// summary is one target's figures over the rounds.
type summary struct {
	name                  string
	rps, p50, p99         float64       // medians
	cpuPerReq, loadPerReq time.Duration // medians
	cores, loadCores      float64       // medians: the server's and the load generator's CPU, in cores
	errors                int           // summed
	peakSampled           int64         // the largest VmRSS sampled under load
	idleRSS, hwm          int64
}

func (r *report) summarise(i int) summary {
	s := r.servers[i]
	sum := summary{name: s.name, idleRSS: s.idleRSS, hwm: r.hwm[i]}
	var rps, p50, p99, cores, loadCores []float64
	var cpu, loadCPU []time.Duration
	for _, run := range r.runs {
		if run.target != s.name {
			continue
		}
		sum.errors += run.load.Errors
		sum.peakSampled = max(sum.peakSampled, run.peakRSS)
		rps = append(rps, run.load.RPS)
		p50 = append(p50, run.load.P50)
		p99 = append(p99, run.load.P99)
		if run.load.Seconds > 0 {
			cores = append(cores, run.serverCPU.Seconds()/run.load.Seconds)
		}
		if run.loadWall > 0 {
			loadCores = append(loadCores, run.loadCPU.Seconds()/run.loadWall.Seconds())
		}
		if run.load.Requests > 0 {
			cpu = append(cpu, run.serverCPU/time.Duration(run.load.Requests))
			loadCPU = append(loadCPU, run.loadCPU/time.Duration(run.load.Requests))
		}
	}
	sum.rps, sum.p50, sum.p99 = median(rps), median(p50), median(p99)
	sum.cores, sum.loadCores = median(cores), median(loadCores)
	sum.cpuPerReq, sum.loadPerReq = medianDuration(cpu), medianDuration(loadCPU)
	return sum
}

func medianDuration(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (r *report) write(w io.Writer) {
	o := r.o
	fmt.Fprintf(w, "A2A load: %d concurrent JS SDK clients (testdata/a2a/load.mjs), SendMessage \"ping\", %s per run, %d round(s)", o.concurrency, o.duration, o.rounds)
	if o.warmup > 0 {
		fmt.Fprintf(w, " after a %s warm-up run per target", o.warmup)
	}
	fmt.Fprintf(w, "\nmachine: %d CPUs, %s/%s, %s, node %s; the load generator shares the CPUs with the server\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), r.node)
	for _, s := range r.servers {
		fmt.Fprintf(w, "%-9s  %s\n", s.name+":", s.desc)
	}

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\ttarget\trequests\terrors\treq/s\tp50 ms\tp99 ms\tserver CPU/req\tload CPU/req\tserver cores\tload cores\tother cores\tpeak RSS\t")
	rows := append(slices.Clone(r.warmups), r.runs...)
	for _, run := range rows {
		round := strconv.Itoa(run.round)
		if run.round == 0 {
			round = "warm-up"
		}
		var perReq, loadPerReq time.Duration
		if run.load.Requests > 0 {
			perReq = run.serverCPU / time.Duration(run.load.Requests)
			loadPerReq = run.loadCPU / time.Duration(run.load.Requests)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t\n", round, run.target, run.load.Requests, run.load.Errors,
			run.load.RPS, run.load.P50, run.load.P99, micros(perReq), micros(loadPerReq), safeDiv(run.serverCPU.Seconds(), run.load.Seconds),
			safeDiv(run.loadCPU.Seconds(), run.loadWall.Seconds()), safeDiv(run.otherCPU.Seconds(), run.loadWall.Seconds()), mib(run.peakRSS))
	}
	tw.Flush()
	fmt.Fprintln(w, "server cores: the server's CPU time over load.mjs's timed part; load CPU/req and load cores: load.mjs's CPU over its life (Node's")
	fmt.Fprintln(w, "start-up and the clients' creation included); other cores: the rest of the machine meanwhile, near 0 when it is quiet")

	fmt.Fprintf(w, "\nOver the %d round(s): medians, errors summed; peak RSS is the largest VmRSS sampled every %s under load, VmHWM the peak over the server's life\n\n", o.rounds, rssSampleEvery)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\treq/s\tp50 ms\tp99 ms\terrors\tserver CPU/req\tload CPU/req\tserver cores\tload cores\tidle RSS\tpeak RSS\tVmHWM\t")
	sums := make([]summary, len(r.servers))
	for i := range r.servers {
		s := r.summarise(i)
		sums[i] = s
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%d\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t\n", s.name, s.rps, s.p50, s.p99, s.errors, micros(s.cpuPerReq),
			micros(s.loadPerReq), s.cores, s.loadCores, mib(s.idleRSS), mib(s.peakSampled), mib(s.hwm))
	}
	tw.Flush()

	ah, js := sums[0], sums[1]
	rpsRatio := safeDiv(ah.rps, js.rps)
	rssRatio := safeDiv(float64(ah.hwm), float64(js.hwm))
	fmt.Fprintf(w, "\nagenthost / js-echo: req/s %.2fx (target >= %.0fx: %s); VmHWM %.3f (target <= %.2f: %s); peak RSS under load %.3f; p50 %.2fx; server CPU per request %.2fx\n",
		rpsRatio, targetRPSRatio, verdict(rpsRatio >= targetRPSRatio), rssRatio, targetRSSRatio, verdict(rssRatio <= targetRSSRatio),
		safeDiv(float64(ah.peakSampled), float64(js.peakSampled)), safeDiv(ah.p50, js.p50), safeDiv(float64(ah.cpuPerReq), float64(js.cpuPerReq)))
	// load.mjs runs its clients on Node's one thread: once that is busy, req/s is the client's limit, whatever the
	// server could do.
	if max(ah.loadCores, js.loadCores) >= loadBound {
		fmt.Fprintf(w, "load.mjs used %.2f / %.2f cores (agenthost / js-echo runs), %s / %s of CPU per call: its one thread was busy, so req/s measures the client as much as the server\n",
			ah.loadCores, js.loadCores, micros(ah.loadPerReq), micros(js.loadPerReq))
	}
}

// loadBound is the load generator's CPU, in cores, from which its one thread is taken as the bottleneck. (A Node
// process has helper threads, so it can pass 1.)
const loadBound = 0.95

// check fails when a run, warm-up included, saw an error, or a measured run no successful request.
func (r *report) check() error {
	var errs []error
	for _, run := range append(slices.Clone(r.warmups), r.runs...) {
		if run.load.Errors > 0 {
			errs = append(errs, fmt.Errorf("round %d, %s: %d errors (%s)", run.round, run.target, run.load.Errors, run.firstError))
		}
		if run.round > 0 && run.load.Requests == 0 {
			errs = append(errs, fmt.Errorf("round %d, %s: no successful request", run.round, run.target))
		}
	}
	return errors.Join(errs...)
}

// writeProfileTop prints the top entries of the CPU profile at path, by flat and by cumulative time.
func writeProfileTop(ctx context.Context, w io.Writer, path string, n int) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintf(w, "\nProfile of the agenthost target: %s\n", path)
	for _, sort := range []string{"-flat", "-cum"} {
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", sort, "-nodecount="+strconv.Itoa(n), path).CombinedOutput()
		if err != nil {
			fmt.Fprintf(w, "go tool pprof: %v\n%s", err, out)
			return
		}
		fmt.Fprintf(w, "\n$ go tool pprof -top %s -nodecount=%d %s\n%s", sort, n, path, out)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
