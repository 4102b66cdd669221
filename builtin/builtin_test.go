package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// fixedNow is Sunday 2026-11-22 02:19:12 UTC.
var fixedNow = time.Date(2026, 11, 22, 2, 19, 12, 0, time.UTC)

func clockIn(t *testing.T, zone string) func() time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return func() time.Time { return fixedNow.In(loc) }
}

func currentTimeTool(t *testing.T, opts *Options) host.Tool {
	t.Helper()
	ts, err := New([]string{"current_time"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ts.Tools(t.Context())
	if err != nil || len(tools) != 1 {
		t.Fatalf("Tools = %v, %v", tools, err)
	}
	return tools[0]
}

func TestCurrentTime(t *testing.T) {
	tests := []struct {
		name, clockZone, args string
		wantText              string
		wantStructured        string
	}{
		{
			name: "named zone", clockZone: "UTC", args: `{"timezone": "Asia/Tokyo"}`,
			wantText: "2026-11-22 11:19:12 JST (Asia/Tokyo, Sunday, UTC+09:00)",
			wantStructured: `{"time":"2026-11-22T11:19:12+09:00","timezone":"Asia/Tokyo","utc_offset":"+09:00",` +
				`"weekday":"Sunday","unix":1795313952}`,
		},
		{
			name: "negative half-hour offset, previous day", clockZone: "UTC", args: `{"timezone": " America/St_Johns "}`,
			wantText: "2026-11-21 22:49:12 NST (America/St_Johns, Saturday, UTC-03:30)",
			wantStructured: `{"time":"2026-11-21T22:49:12-03:30","timezone":"America/St_Johns","utc_offset":"-03:30",` +
				`"weekday":"Saturday","unix":1795313952}`,
		},
		{
			name: "default is the clock's zone", clockZone: "Europe/Paris", args: `{}`,
			wantText: "2026-11-22 03:19:12 CET (Europe/Paris, Sunday, UTC+01:00)",
			wantStructured: `{"time":"2026-11-22T03:19:12+01:00","timezone":"Europe/Paris","utc_offset":"+01:00",` +
				`"weekday":"Sunday","unix":1795313952}`,
		},
		{
			name: "empty arguments", clockZone: "UTC", args: ``,
			wantText: "2026-11-22 02:19:12 UTC (UTC, Sunday, UTC+00:00)",
		},
		{
			name: "null and empty timezone, extra properties ignored", clockZone: "UTC", args: `{"timezone": null, "x": 1}`,
			wantText: "2026-11-22 02:19:12 UTC (UTC, Sunday, UTC+00:00)",
		},
		{
			name: "empty timezone", clockZone: "Asia/Kolkata", args: `{"timezone": ""}`,
			wantText: "2026-11-22 07:49:12 IST (Asia/Kolkata, Sunday, UTC+05:30)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := currentTimeTool(t, &Options{Now: clockIn(t, tt.clockZone)})
			res, err := tool.Call(t.Context(), json.RawMessage(tt.args), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || res.Text != tt.wantText {
				t.Errorf("result %q (IsError %v), want %q", res.Text, res.IsError, tt.wantText)
			}
			if tt.wantStructured != "" && string(res.Structured) != tt.wantStructured {
				t.Errorf("structured\n got %s\nwant %s", res.Structured, tt.wantStructured)
			}
		})
	}
}

func TestCurrentTimeErrors(t *testing.T) {
	tests := []struct {
		name, args string
		want       []string
	}{
		{"unknown zone", `{"timezone": "Mars/Olympus_Mons"}`, []string{`"Mars/Olympus_Mons"`, "IANA", `"Europe/Paris"`}},
		{"path-like zone", `{"timezone": "../../etc/passwd"}`, []string{"Unknown time zone", "IANA"}},
		{"number", `{"timezone": 9}`, []string{"Invalid arguments", "must be a string", "a number"}},
		{"object", `{"timezone": {"name": "UTC"}}`, []string{"must be a string", "an object"}},
		{"not an object", `["Asia/Tokyo"]`, []string{"Invalid arguments", "JSON object"}},
		{"invalid JSON", `{"timezone": `, []string{"Invalid arguments", "JSON object"}},
	}
	tool := currentTimeTool(t, &Options{Now: clockIn(t, "UTC")})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tool.Call(t.Context(), json.RawMessage(tt.args), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Structured != nil {
				t.Errorf("IsError = %v, Structured = %s; want an error result", res.IsError, res.Structured)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("text %q lacks %q", res.Text, w)
				}
			}
		})
	}
}

func TestCurrentTimeCancelled(t *testing.T) {
	tool := currentTimeTool(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tool.Call(ctx, json.RawMessage(`{}`), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestCurrentTimeDefaultClock(t *testing.T) {
	res, err := currentTimeTool(t, nil).Call(t.Context(), nil, nil)
	if err != nil || res.IsError {
		t.Fatalf("res %+v, err %v", res, err)
	}
	var got currentTimeResult
	if err := json.Unmarshal(res.Structured, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, got.Time); err != nil || got.Timezone == "" || got.Unix <= 0 {
		t.Errorf("structured %+v (%v)", got, err)
	}
}

func TestCurrentTimeSpec(t *testing.T) {
	spec := currentTimeTool(t, nil).Spec()
	if spec.Name != "current_time" || !host.ValidToolName(spec.Name) || spec.Description == "" {
		t.Errorf("spec %+v", spec)
	}
	if spec.Annotations == nil || spec.Annotations.ReadOnlyHint == nil || !*spec.Annotations.ReadOnlyHint {
		t.Errorf("annotations %+v, want readOnlyHint true", spec.Annotations)
	}
	var schema map[string]any
	if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "object", "properties": map[string]any{"timezone": map[string]any{
		"type": "string", "description": "IANA time zone, e.g. Asia/Tokyo; default the local zone"}}}
	if !reflect.DeepEqual(schema, want) {
		t.Errorf("input schema %s", spec.InputSchema)
	}
	if !json.Valid(spec.OutputSchema) {
		t.Errorf("output schema is not JSON: %s", spec.OutputSchema)
	}
}

func TestCurrentTimeLogs(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tool := currentTimeTool(t, &Options{Now: clockIn(t, "UTC"), Logger: logger})
	if _, err := tool.Call(t.Context(), json.RawMessage(`{"timezone":"Asia/Tokyo"}`), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "tool=current_time") || !strings.Contains(buf.String(), "timezone=Asia/Tokyo") {
		t.Errorf("log %q", buf.String())
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		names     []string
		opts      *Options
		wantTools []string
		wantErr   []string
	}{
		{name: "none", names: nil},
		{name: "current_time", names: []string{"current_time"}, wantTools: []string{"current_time"}},
		{name: "in the order given", names: []string{"fetch_url", "current_time"}, wantTools: []string{"fetch_url", "current_time"}},
		{name: "unknown", names: []string{"current_time", "shell", "exec"},
			wantErr: []string{`builtin: unknown tool "shell", "exec" (available: current_time, calculate, fetch_url, `}},
		{name: "repeated", names: []string{"current_time", "current_time"}, wantErr: []string{`builtin: tool "current_time" listed more than once`}},
		{name: "every unusable tool is reported", names: []string{"web_search", "fetch_url", "current_time"},
			opts:    &Options{FetchURL: FetchURLOptions{AllowHosts: []string{"a/b"}}},
			wantErr: []string{"builtin: web_search: backend is required", "builtin: fetch_url: allow_hosts: \"a/b\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := New(tt.names, tt.opts)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatal("New succeeded")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ts.Close()
			if ts.Name() != "builtin" {
				t.Errorf("Name = %q", ts.Name())
			}
			tools, err := ts.Tools(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range tools {
				got = append(got, tool.Spec().Name)
			}
			if !reflect.DeepEqual(got, tt.wantTools) {
				t.Errorf("tools %v, want %v", got, tt.wantTools)
			}
		})
	}
}

// everyToolOptions are options under which every built-in can be built, against nothing real.
func everyToolOptions(t *testing.T) *Options {
	dir := t.TempDir()
	return &Options{
		StateDir:  t.TempDir(),
		WebSearch: WebSearchOptions{Backend: "searxng", URL: "http://127.0.0.1:1"},
		Files:     FilesOptions{Roots: []string{dir}},
		DocSearch: DocSearchOptions{Roots: []string{dir}, RefreshInterval: -1},
	}
}

func TestAvailable(t *testing.T) {
	got := Available()
	want := []string{"current_time", "calculate", "fetch_url", "web_search", "read_file", "list_dir", "search_files", "doc_search"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Available = %v, want %v", got, want)
	}
	got[0] = "changed"
	if Available()[0] != "current_time" {
		t.Error("Available shares its slice")
	}
	// Every available tool can be built, names itself as listed, and tells the model when to use it.
	ts, err := New(Available(), everyToolOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := ts.Tools(t.Context())
	if len(tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(tools), len(want))
	}
	for i, tool := range tools {
		spec := tool.Spec()
		if spec.Name != want[i] {
			t.Errorf("tool %d is %q, listed as %q", i, spec.Name, want[i])
		}
		if spec.Description == "" || spec.Annotations == nil || spec.Annotations.ReadOnlyHint == nil || !*spec.Annotations.ReadOnlyHint {
			t.Errorf("%s: description %q, annotations %+v: want a description and read-only", spec.Name, spec.Description, spec.Annotations)
		}
		if spec.Prompt == "" {
			t.Errorf("%s has no prompt", spec.Name)
		}
	}
	if err := ts.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestLocalZoneName(t *testing.T) {
	tests := []struct{ tz, want string }{
		{"Asia/Tokyo", "Asia/Tokyo"},
		{":Europe/Paris", "Europe/Paris"},
		{"/usr/share/zoneinfo/America/New_York", "America/New_York"},
		{"", "UTC"},
	}
	for _, tt := range tests {
		t.Setenv("TZ", tt.tz)
		if got := localZoneName(); got != tt.want {
			t.Errorf("TZ=%q: localZoneName() = %q, want %q", tt.tz, got, tt.want)
		}
	}
}
