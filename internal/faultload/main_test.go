package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestRun runs the tool with a small load: the table has a row for each setting, the run without faults succeeds
// whole, and the faults the proxy counted are those the failing runs met.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-runs", "40", "-c", "10", "-rate", "0.3", "-retries", "0,4", "-latency", "1ms"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\s*(0\.\d\d)\s+(\d+)\s+(\d+)\s+40\s+\S+%\s+(\d+)\s+(\d+)\s`).FindAllStringSubmatch(out.String(), -1)
	if len(rows) != 4 {
		t.Fatalf("want 4 rows:\n%s", out.String())
	}
	for _, r := range rows {
		rate, retries, ok, faulted := r[1], r[2], r[3], r[5]
		switch {
		case rate == "0.00" && (ok != "40" || faulted != "0"):
			t.Errorf("without faults, max_retries %s: %s of 40 succeeded, %s faults", retries, ok, faulted)
		case rate == "0.30" && faulted == "0":
			t.Errorf("at rate 0.3, max_retries %s: no fault", retries)
		case rate == "0.30" && retries == "0" && ok == "40":
			t.Errorf("at rate 0.3 without retries, every run succeeded:\n%s", out.String())
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
