package durable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestQuietDemotesCancellationWhileStopping: the lines DBOS writes while the engine stops, whose error is the
// cancellation of its context (wrapped with %w or only as text), are passed on at DEBUG; the same lines before the
// engine stops, and other errors while it stops, keep their level, and DBOS's INFO lines are dropped.
func TestQuietDemotesCancellationWhileStopping(t *testing.T) {
	wrapped := fmt.Errorf("failed to list queues: %w", context.Canceled)
	text := fmt.Errorf("failed to begin transaction: %v", context.Canceled)
	other := errors.New("failed to begin transaction: database is locked")
	for _, tc := range []struct {
		name     string
		stopping bool
		level    slog.Level
		err      error
		want     string // the level written, "" for none
	}{
		{"cancelled while stopping", true, slog.LevelError, wrapped, "DEBUG"},
		{"cancelled as text while stopping", true, slog.LevelWarn, text, "DEBUG"},
		{"cancelled while running", false, slog.LevelError, text, "ERROR"},
		{"another error while stopping", true, slog.LevelError, other, "ERROR"},
		{"info", false, slog.LevelInfo, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, min := range []slog.Level{slog.LevelDebug, slog.LevelWarn} {
				var buf bytes.Buffer
				l := quiet(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: min})), func() bool { return tc.stopping })
				l.With("service", "queue_runner").Log(t.Context(), tc.level, "Error dequeuing workflows from queue", "error", tc.err)
				want := tc.want
				if want == "DEBUG" && min > slog.LevelDebug {
					want = ""
				}
				got := buf.String()
				if want == "" && got != "" || want != "" && !strings.Contains(got, "level="+want+" ") {
					t.Errorf("at %v: logged %q, want level %q", min, got, want)
				}
			}
		})
	}
}
