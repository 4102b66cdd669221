package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRun runs the tool with a small load and checks that the table has a row for each setting.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-runs", "10", "-c", "5", "-rate", "0.3", "-retries", "0,1", "-latency", "1ms"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\s*(0\.00|0\.30)\s+([01])\s+\d+\s+10\s`).FindAllStringSubmatch(out.String(), -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+"/"+r[2])
	}
	if strings.Join(got, " ") != "0.00/0 0.30/0 0.00/1 0.30/1" {
		t.Errorf("rows %q in:\n%s", got, out.String())
	}
}

// TestMeasure checks the accounting a report rests on: every fault is either retried or ends its run, since a run
// stops at its first model call that gives up.
func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		retries int
	}{{0, 4}, {0.3, 0}, {0.3, 4}} {
		o := &options{runs: 40, concurrency: 10, latency: time.Millisecond, retryAfter: 1, seed: 3}
		r, err := measure(t.Context(), o, tc.rate, tc.retries)
		if err != nil {
			t.Fatal(err)
		}
		c := r.counts
		retries, failed := c.Total()-r.calls, int64(r.runs-r.ok)
		if c.Failed() != retries+failed {
			t.Errorf("rate %v, max_retries %d: %d faults, %d retries, %d failed runs; failures %v",
				tc.rate, tc.retries, c.Failed(), retries, failed, r.failures)
		}
		switch {
		case tc.rate == 0 && (r.ok != 40 || c.Total() != 80 || r.calls != 80):
			t.Errorf("without faults: %d of 40 runs succeeded with %d calls, %d requests", r.ok, r.calls, c.Total())
		case tc.rate > 0 && c.Failed() == 0:
			t.Errorf("rate %v: no fault in %d requests", tc.rate, c.Total())
		case tc.retries == 0 && retries != 0:
			t.Errorf("max_retries 0: %d retries", retries)
		}
		if len(r.latencies) != r.ok {
			t.Errorf("%d latencies for %d successful runs", len(r.latencies), r.ok)
		}
	}
}

func TestExpected(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		retries int
		want    float64
	}{{0, 0, 1}, {0.5, 0, 0.25}, {0.2, 2, 0.992 * 0.992}, {0.2, 4, 0.99968 * 0.99968}} {
		if got := expected(tc.rate, tc.retries); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("expected(%v, %d) = %v, want %v", tc.rate, tc.retries, got, tc.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rate", "1.5"}, `-rate "1.5"`},
		{[]string{"-retries", "11"}, `-retries "11"`},
		{[]string{"-runs", "0"}, "-runs and -c must be at least 1"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
	o, err := parseFlags(nil, io.Discard)
	if err != nil || len(o.rates) != 2 || o.rates[1] != 0.2 || len(o.retries) != 1 || o.retries[0] != 4 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}
