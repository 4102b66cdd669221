package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/pgtest"
	"github.com/agenthost/agenthost/store"
)

// agenthost state prune deletes the conversations idle for longer than -older-than, or than the TTL, which is 30
// days in a database; -dry-run lists them and leaves them. Conversations are made by run, then aged by moving their
// last use back in the database.
func TestStatePrune(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		conf := writeFile(t, dir, "agent.toml", "[state]\npath = \"state.db\"\n")
		testStatePrune(t, dir, conf, nil, "sqlite", store.SQLiteDSN(filepath.Join(dir, "state.db")))
	})
	t.Run("postgres", func(t *testing.T) {
		dir := t.TempDir()
		dsn := pgtest.NewDatabase(t)
		conf := writeFile(t, dir, "agent.toml", "[state]\nbackend = \"postgres\"\ndsn_env = \"AGENT_TEST_DSN\"\n")
		testStatePrune(t, dir, conf, []string{"AGENT_TEST_DSN=" + dsn}, "pgx", dsn)
	})
}

func testStatePrune(t *testing.T, dir, conf string, env []string, driver, dsn string) {
	start := func(prompt string) string {
		t.Helper()
		r := agenthost(t, dir, "", env, "run", "-config", conf, "-model", "test", "-json", prompt)
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil || ans.ConversationID == "" {
			t.Fatalf("run %q: exit %d, %v\nstdout: %s\nstderr: %s", prompt, r.code, err, r.stdout, r.stderr)
		}
		return ans.ConversationID
	}
	old, stale, recent := start("Forty days ago"), start("Three days ago"), start("Just now")

	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	age := func(id string, d time.Duration) {
		t.Helper()
		if _, err := db.ExecContext(t.Context(), `UPDATE conversations SET updated_ms = updated_ms - $1 WHERE id = $2`, d.Milliseconds(), id); err != nil {
			t.Fatal(err)
		}
	}
	age(old, 40*24*time.Hour)
	age(stale, 3*24*time.Hour)
	left := func() []string {
		t.Helper()
		return queryStrings(t, db, `SELECT id FROM conversations ORDER BY id`)
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	prune := func(args ...string) result {
		t.Helper()
		return agenthost(t, dir, "", env, append([]string{"state", "prune", "-config", conf}, args...)...)
	}

	// The TTL's default in a database is 30 days: only the conversation idle for 40 would go.
	r := prune("--dry-run")
	row := regexp.MustCompile(`(?m)^` + old + `\s+\S+ \S+\s+\d+\s+\d+\s+Forty days ago$`)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Would delete 1 conversation idle for longer than 720h0m0s:\nID ") ||
		!row.MatchString(r.stdout) || strings.Contains(r.stdout, stale) || strings.Contains(r.stdout, recent) {
		t.Errorf("state prune --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = prune("--older-than", "48h", "--dry-run")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Would delete 2 conversations idle for longer than 48h0m0s:\n") ||
		!strings.Contains(r.stdout, old) || !strings.Contains(r.stdout, stale) || strings.Contains(r.stdout, recent) {
		t.Errorf("state prune --older-than 48h --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := left(); !slices.Equal(got, sorted(old, stale, recent)) {
		t.Fatalf("--dry-run deleted conversations: %q left", got)
	}

	r = prune()
	if r.code != 0 || r.stdout != "Deleted 1 conversation idle for longer than 720h0m0s.\n" {
		t.Errorf("state prune: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := left(); !slices.Equal(got, sorted(stale, recent)) {
		t.Errorf("after state prune: %q left, want the stale and the recent one", got)
	}
	r = prune("-older-than=48h") // flags after the command, in either spelling
	if r.code != 0 || r.stdout != "Deleted 1 conversation idle for longer than 48h0m0s.\n" {
		t.Errorf("state prune -older-than=48h: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := left(); !slices.Equal(got, []string{recent}) {
		t.Errorf("after state prune -older-than 48h: %q left, want the recent one", got)
	}
	r = prune("--dry-run", "--older-than", "1h")
	if r.code != 0 || r.stdout != "No conversations idle for longer than 1h0m0s.\n" {
		t.Errorf("state prune with nothing to prune: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", env, "run", "-config", conf, "-model", "test", "-conversation", recent, "Still there?")
	if r.code != 0 {
		t.Errorf("continuing the conversation that stayed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestStatePruneErrors(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "agent.toml", "[state]\npath = \"state.db\"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-older-than", "0"}, "state prune: -older-than must be positive (got 0s)"},
		{[]string{"-older-than", "-1h"}, "state prune: -older-than must be positive (got -1h0m0s)"},
		{[]string{"-older-than", "30d"}, `invalid value "30d" for flag -older-than`},
		{[]string{"abc"}, `state prune takes no arguments (got ["abc"])`},
	} {
		r := agenthost(t, dir, "", nil, append([]string{"state", "prune", "-config", conf}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("state prune %q: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
