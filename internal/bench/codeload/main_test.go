package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets the test binary serve the shop, as the codeload binary does: the measurement's MCP server is this
// binary run as "serve".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(context.Background(), os.Args[2:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "codeload serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasure runs the task both ways through the product: both make the 21 calls, none failing, and answer with the
// known total; code mode takes at most 3 model requests and at least 70% fewer prompt bytes.
func TestMeasure(t *testing.T) {
	server := []string{os.Args[0], "serve"}
	without, err := measure(t.Context(), server, false)
	if err != nil {
		t.Fatal(err)
	}
	with, err := measure(t.Context(), server, true)
	if err != nil {
		t.Fatal(err)
	}
	if without.requests != 4 || without.toolCalls != 21 || without.failed != 0 || without.runCode != 0 || !without.right {
		t.Errorf("without code mode: %+v, want 4 requests, 21 calls, none failed, and the right answer", without)
	}
	if with.requests > 3 || with.toolCalls != 21 || with.failed != 0 || with.runCode != 1 || !with.right {
		t.Errorf("with code mode: %+v, want at most 3 requests, one run_code making 21 calls, none failed, and the right answer", with)
	}
	if want := fmt.Sprintf(answerForm, totalInStock()); with.answer != want || without.answer != want {
		t.Errorf("answers %q and %q, want %q", without.answer, with.answer, want)
	}
	if s := saving(without, with); s < 0.7 {
		t.Errorf("code mode sent %d prompt bytes, without %d: %.1f%% fewer, want at least 70%%", with.promptBytes, without.promptBytes, s*100)
	}
}

// TestRun checks the report and that stray arguments are refused.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`21 dependent tool calls`,
		`(?m)^false\s+4\s+\d+\s+21\s+0\s+0\s+true$`,
		`(?m)^true\s+[123]\s+\d+\s+21\s+0\s+1\s+true$`,
		`code mode: \d model requests instead of 4, \d+\.\d% fewer prompt bytes`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("report lacks %s:\n%s", want, out.String())
		}
	}
	if err := run(t.Context(), []string{"extra"}, io.Discard, io.Discard); err == nil {
		t.Error("a stray argument: no error")
	}
}
