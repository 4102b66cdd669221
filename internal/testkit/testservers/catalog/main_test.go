package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestThemes checks every theme against the package doc's promises: at least 25 tools, names unique within the
// theme, descriptions of two or three sentences, two to five parameters each described, required ones among them.
func TestThemes(t *testing.T) {
	if len(themes) < 20 {
		t.Errorf("%d themes, want at least 20", len(themes))
	}
	seenTheme := map[string]bool{}
	for _, th := range themes {
		if seenTheme[th.name] {
			t.Errorf("theme %s twice", th.name)
		}
		seenTheme[th.name] = true
		tools := th.tools()
		if len(tools) < 25 {
			t.Errorf("%s: %d tools, want at least 25", th.name, len(tools))
		}
		seen := map[string]bool{}
		for _, tool := range tools {
			where := th.name + "." + tool.name
			if seen[tool.name] {
				t.Errorf("%s: twice", where)
			}
			seen[tool.name] = true
			if n := strings.Count(tool.desc, ". "); n < 1 || n > 2 || !strings.HasSuffix(tool.desc, ".") {
				t.Errorf("%s: description %q is not two or three sentences", where, tool.desc)
			}
			if len(tool.params) < 2 || len(tool.params) > 5 {
				t.Errorf("%s: %d parameters", where, len(tool.params))
			}
			names := map[string]bool{}
			for _, q := range tool.params {
				if names[q.name] {
					t.Errorf("%s: parameter %s twice", where, q.name)
				}
				names[q.name] = true
				if q.desc == "" || q.typ == "" {
					t.Errorf("%s: parameter %s undescribed", where, q.name)
				}
			}
			for _, r := range tool.required {
				if !names[r] {
					t.Errorf("%s: required %s is no parameter", where, r)
				}
			}
		}
	}
}

// TestServer connects a go-sdk client in memory to a small catalogue, lists it and calls a tool right and wrong.
func TestServer(t *testing.T) {
	server, err := newServer("jira", 7)
	if err != nil {
		t.Fatal(err)
	}
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := server.Connect(t.Context(), serverT, nil); err != nil {
		t.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "dev"}, nil).Connect(t.Context(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if got := session.InitializeResult().Instructions; !strings.HasPrefix(got, "Jira:") {
		t.Errorf("instructions %q", got)
	}
	res, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	// The first seven: list of each of the five kinds, the first action, then the first create.
	want := "list_boards list_components list_sprints list_tickets list_versions transition_ticket create_ticket"
	if got := strings.Join(names, " "); !sameWords(got, want) {
		t.Errorf("tools %s, want %s", got, want)
	}
	for _, c := range []struct {
		args, text string
		isError    bool
	}{
		{`{"project_key":"OPS","ticket_id":"OPS-1","status":"Done"}`, `jira.transition_ticket called with {"project_key":"OPS","status":"Done","ticket_id":"OPS-1"}`, false},
		{`{"project_key":"OPS","ticket_id":"OPS-1"}`, `transition_ticket: missing required parameter "status"`, true},
	} {
		r, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "transition_ticket", Arguments: json.RawMessage(c.args)})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Content[0].(*mcp.TextContent).Text; got != c.text || r.IsError != c.isError {
			t.Errorf("%s: %q isError %v, want %q %v", c.args, got, r.IsError, c.text, c.isError)
		}
	}
}

func TestNewServerErrors(t *testing.T) {
	for _, c := range []struct {
		theme string
		n     int
		want  string
	}{
		{"nope", 25, `unknown theme "nope"`},
		{"github", 0, "theme github has 1 to"},
		{"github", 1000, "not 1000"},
	} {
		if _, err := newServer(c.theme, c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d: %v, want %q", c.theme, c.n, err, c.want)
		}
	}
}

func sameWords(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	count := map[string]int{}
	for _, w := range fa {
		count[w]++
	}
	for _, w := range fb {
		count[w]--
		if count[w] < 0 {
			return false
		}
	}
	return true
}
