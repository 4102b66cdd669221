package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"
)

// report holds the figures of one measurement.
type report struct {
	cfg      *options
	server   string
	toolName string
	fdLimit  string

	window     time.Duration // as measured between the two counter readings
	ideal      time.Duration // of one run
	completed  int           // calls that ended successfully inside the window
	throughput float64       // runs per second
	idealRate  float64       // runs per second

	latencies []time.Duration // of successful calls started inside the window, sorted
	calls     int             // calls made in all, warm-up included
	failures  int
	failedBy  map[string]int // failure message → count

	serverCPU     time.Duration // in the window
	selfCPU       time.Duration // of this process (clients and fake model), in the window
	modelRequests int           // in the window
	notifications int64         // in the window
	rssAtEnd      int64
	peakRSS       int64

	profile    profileResult
	profileTop string
	heapTop    string // of the server's live heap at the window's end
	heapErr    error
}

// summarise computes the figures from the samples and the counters read at the window's opening and closing.
func (r *report) summarise(samples [][]sample, open, closed time.Time, at [2]counters) {
	r.window = at[1].at.Sub(at[0].at)
	r.ideal = 2 * r.cfg.latency
	r.idealRate = float64(r.cfg.clients) / r.ideal.Seconds()
	r.failedBy = map[string]int{}
	for _, client := range samples {
		for _, s := range client {
			r.calls++
			if s.err != nil {
				r.failures++
				r.failedBy[s.err.Error()]++
				continue
			}
			if !s.end.Before(open) && !s.end.After(closed) {
				r.completed++
			}
			if !s.start.Before(open) && s.start.Before(closed) {
				r.latencies = append(r.latencies, s.end.Sub(s.start))
			}
		}
	}
	slices.Sort(r.latencies)
	r.throughput = float64(r.completed) / closed.Sub(open).Seconds()
	r.serverCPU = at[1].serverCPU - at[0].serverCPU
	r.selfCPU = at[1].selfCPU - at[0].selfCPU
	r.modelRequests = at[1].modelRequests - at[0].modelRequests
	r.notifications = at[1].notifications - at[0].notifications
}

// added returns the q-quantile of the latency added to the ideal run.
func (r *report) added(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.latencies))), len(r.latencies)-1)
	return r.latencies[i] - r.ideal
}

func (r *report) perRun(d time.Duration) time.Duration {
	if r.completed == 0 {
		return 0
	}
	return d / time.Duration(r.completed)
}

func (r *report) write(w io.Writer) {
	c := r.cfg
	fmt.Fprintf(w, "server:        %s, tool %s, open-files limit %s\n", r.server, r.toolName, r.fdLimit)
	fmt.Fprintf(w, "state:         %s, durable_runs %s\n", orDefault(r.cfg.state, "memory"), orDefault(r.cfg.durable, "none"))
	fmt.Fprintf(w, "load:          %d %s clients, model latency %v, window %v after %v warm-up, chunk size %d, progress tokens %v, standalone SSE %v\n",
		c.clients, c.client, c.latency, r.window.Round(time.Millisecond), c.warmup, c.chunkSize, c.progress, !c.noSSE)
	fmt.Fprintf(w, "runs:          %d in the window, %d calls in all, %d failed\n", r.completed, r.calls, r.failures)
	fmt.Fprintf(w, "throughput:    %.1f runs/s of an ideal %.1f: %.1f%%\n", r.throughput, r.idealRate, 100*r.throughput/r.idealRate)
	fmt.Fprintf(w, "added latency: p50 %v, p90 %v, p99 %v, max %v (ideal run %v, %d runs)\n",
		ms(r.added(0.50)), ms(r.added(0.90)), ms(r.added(0.99)), ms(r.added(1)), r.ideal, len(r.latencies))
	fmt.Fprintf(w, "server CPU:    %v in the window (%.2f cores), %v per run\n",
		r.serverCPU.Round(time.Millisecond), r.serverCPU.Seconds()/r.window.Seconds(), us(r.perRun(r.serverCPU)))
	fmt.Fprintf(w, "load CPU:      %v in the window (%.2f cores), %v per run (clients and fake model, for reference)\n",
		r.selfCPU.Round(time.Millisecond), r.selfCPU.Seconds()/r.window.Seconds(), us(r.perRun(r.selfCPU)))
	fmt.Fprintf(w, "server memory: peak RSS (VmHWM) %.1f MiB, RSS at the window's end %.1f MiB\n", mib(r.peakRSS), mib(r.rssAtEnd))
	if r.completed > 0 {
		fmt.Fprintf(w, "per run:       %.2f model requests, %.2f progress notifications\n",
			float64(r.modelRequests)/float64(r.completed), float64(r.notifications)/float64(r.completed))
	}
	if r.failures > 0 {
		fmt.Fprintln(w, "failures:")
		msgs := slices.SortedFunc(maps.Keys(r.failedBy), func(a, b string) int { return cmp.Compare(r.failedBy[b], r.failedBy[a]) })
		for _, m := range msgs[:min(len(msgs), c.maxFailLog)] {
			fmt.Fprintf(w, "  %6d × %s\n", r.failedBy[m], m)
		}
	}
	switch {
	case r.profile.err != nil:
		fmt.Fprintf(w, "cpu profile:   %v\n", r.profile.err)
	case r.profile.path != "":
		fmt.Fprintf(w, "cpu profile:   %s\n", r.profile.path)
	}
	if r.heapErr != nil {
		fmt.Fprintf(w, "heap profile:  %v\n", r.heapErr)
	}
	if r.profileTop != "" {
		fmt.Fprintf(w, "\n%s", r.profileTop)
	}
	if r.heapTop != "" {
		fmt.Fprintf(w, "\n%s", r.heapTop)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }
func mib(b int64) float64       { return float64(b) / (1 << 20) }

// writeComparison writes the reports side by side, each against the first.
func writeComparison(w io.Writer, reps []*report) {
	base := reps[0]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "state\tdurable_runs\truns/s\tCPU/run\tvs first\tadded p50\tadded p99\tpeak RSS MiB\tfailed\t")
	for _, r := range reps {
		ratio := "-"
		if b := base.perRun(base.serverCPU); b > 0 {
			ratio = fmt.Sprintf("%+.0f%%", 100*(float64(r.perRun(r.serverCPU))/float64(b)-1))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.1f\t%d\t\n", r.cfg.state, r.cfg.durable, r.throughput,
			us(r.perRun(r.serverCPU)), ratio, ms(r.added(0.50)), ms(r.added(0.99)), mib(r.peakRSS), r.failures)
	}
	tw.Flush()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
