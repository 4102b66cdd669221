package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// A conversation outlives the process that started it: the next process continues it, and agenthost state lists,
// shows and deletes it.
func TestStateAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "agent.toml", "[agent]\nname = \"keeper\"\n\n[state]\npath = \"data/keeper.db\"\n")
	ask := func(args ...string) host.Answer {
		t.Helper()
		r := agenthost(t, dir, "", nil, append([]string{"run", "-config", conf, "-model", "test", "-json"}, args...)...)
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil {
			t.Fatalf("run %q: exit %d, %v\nstdout: %s\nstderr: %s", args, r.code, err, r.stdout, r.stderr)
		}
		return ans
	}
	first := ask("-tool", "current_time", "What time is it?")
	if first.ConversationID == "" {
		t.Fatal("no conversation id")
	}
	second := ask("-conversation", first.ConversationID, "And the date?")
	if second.ConversationID != first.ConversationID {
		t.Errorf("the follow-up ran in conversation %q, want %q", second.ConversationID, first.ConversationID)
	}
	if fi, err := os.Stat(filepath.Join(dir, "data", "keeper.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the state file: %v, %v", fi, err)
	}

	r := agenthost(t, dir, "", nil, "check", "-config", conf, "-model", "test")
	if want := regexp.MustCompile(`(?m)^sqlite\s+` + regexp.QuoteMeta(filepath.Join(dir, "data", "keeper.db")) + `\s+ok\s+1$`); r.code != 0 || !want.MatchString(r.stdout) {
		t.Errorf("check: exit %d, want a state row matching %s\n%s%s", r.code, want, r.stdout, r.stderr)
	}

	r = agenthost(t, dir, "", nil, "state", "conversations", "-config", conf)
	row := regexp.MustCompile(`(?m)^` + first.ConversationID + `\s+\S+ \S+\s+(\d+)\s+(\d+)\s+What time is it\?$`)
	m := row.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || !strings.HasPrefix(r.stdout, "ID ") {
		t.Fatalf("state conversations: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Two runs of the test model, which calls current_time and then answers: user, assistant with the call,
	// tool, assistant, twice.
	if m[1] != "8" {
		t.Errorf("state conversations shows %s messages, want 8:\n%s", m[1], r.stdout)
	}

	r = agenthost(t, dir, "", nil, "state", "show", "-config", conf, first.ConversationID)
	for _, want := range []string{"user:\n  What time is it?", "→ current_time", "tool current_time", "user:\n  And the date?"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("state show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = agenthost(t, dir, "", nil, "state", "show", "-config", conf, "-json", first.ConversationID)
	var conv host.Conversation
	if err := json.Unmarshal([]byte(r.stdout), &conv); err != nil || conv.ID != first.ConversationID || len(conv.Messages) != 8 {
		t.Errorf("state show -json: %v\n%s", err, r.stdout)
	}

	r = agenthost(t, dir, "", nil, "state", "delete", "-config", conf, first.ConversationID)
	if r.code != 0 || !strings.Contains(r.stdout, "deleted conversation "+first.ConversationID) {
		t.Fatalf("state delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "run", "-config", conf, "-model", "test", "-conversation", first.ConversationID, "Still there?")
	if r.code != 2 || !strings.Contains(r.stderr, "unknown conversation id") {
		t.Errorf("run in a deleted conversation: exit %d, stderr %s", r.code, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "state", "-config", conf)
	if r.code != 0 || r.stdout != "No conversations.\n" {
		t.Errorf("state after the delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestStateErrors(t *testing.T) {
	dir := t.TempDir()
	memory := writeFile(t, dir, "memory.toml", "[state]\nbackend = \"memory\"\n")
	fresh := writeFile(t, dir, "fresh.toml", "[state]\npath = \"none-yet.db\"\n")
	pg := writeFile(t, dir, "pg.toml", "[state]\nbackend = \"postgres\"\ndsn_env = \"AGENT_TEST_DSN\"\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"state", "-config", memory}, 2, `memory.toml: state.backend is "memory": agenthost keeps nothing after a process ends`},
		{[]string{"state", "-config", fresh}, 1, "none-yet.db does not exist (agenthost run and serve create it)"},
		{[]string{"state", "-config", pg}, 2, `state.dsn_env: AGENT_TEST_DSN is not set: backend "postgres" needs the connection string in it`},
		{[]string{"run", "-config", pg, "-model", "test", "hi"}, 1, `state.dsn_env: AGENT_TEST_DSN is not set`},
		{[]string{"state", "frob"}, 2, `unknown state command "frob"`},
		{[]string{"state", "show", "-config", fresh}, 2, "state show takes one conversation id"},
	} {
		r := agenthost(t, dir, "", nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("agenthost %q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	// check reports a database it cannot reach, and never the password of its connection string.
	r := agenthost(t, dir, "", []string{"AGENT_TEST_DSN=postgres://u:secret@127.0.0.1:1/db?connect_timeout=5"}, "check", "-config", pg, "-model", "test")
	if r.code != 1 || !strings.Contains(r.stdout, "postgres  postgres://127.0.0.1:1/db  error: ") ||
		!strings.Contains(r.stderr, "state database not usable") || strings.Contains(r.stdout+r.stderr, "secret") {
		t.Errorf("check with an unreachable Postgres: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "check", "-config", fresh, "-model", "test")
	if r.code != 0 || !strings.Contains(r.stdout, "not created yet (run and serve create it)") {
		t.Errorf("check before any run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "none-yet.db")); !os.IsNotExist(err) {
		t.Errorf("agenthost state created the file it reported missing: %v", err)
	}
}
