package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchSources are the synthetic catalogue's servers, each with the things it manages.
var benchSources = []struct {
	name, about string
	nouns       []string
}{
	{"github", "GitHub repositories, issues and pull requests.", []string{"issue", "pull request", "repository", "branch", "commit", "release", "workflow run", "gist"}},
	{"gitlab", "GitLab projects and merge requests.", []string{"merge request", "pipeline", "project", "tag", "runner"}},
	{"slack", "Slack workspace messaging.", []string{"message", "channel", "reaction", "user group", "reminder"}},
	{"jira", "Jira issue tracking.", []string{"ticket", "sprint", "epic", "board", "worklog"}},
	{"postgres", "A PostgreSQL database.", []string{"table", "row", "index", "schema", "query plan"}},
	{"s3", "Amazon S3 object storage.", []string{"bucket", "object", "lifecycle rule", "presigned URL"}},
	{"kubernetes", "A Kubernetes cluster.", []string{"pod", "deployment", "service", "config map", "secret", "namespace", "node"}},
	{"stripe", "Stripe payments.", []string{"charge", "customer", "invoice", "refund", "subscription", "payout"}},
	{"calendar", "Google Calendar.", []string{"event", "calendar", "attendee", "free slot"}},
	{"gmail", "Gmail mailboxes.", []string{"email", "draft", "label", "thread", "attachment"}},
	{"drive", "Google Drive files.", []string{"file", "folder", "permission", "comment", "revision"}},
	{"notion", "Notion pages and databases.", []string{"page", "database", "block", "property"}},
	{"linear", "Linear issue tracking.", []string{"issue", "cycle", "team", "label", "project update"}},
	{"sentry", "Sentry error monitoring.", []string{"error event", "issue", "alert rule", "release health"}},
	{"datadog", "Datadog monitoring.", []string{"metric", "monitor", "dashboard", "log query", "incident"}},
	{"pagerduty", "PagerDuty on-call.", []string{"incident", "on-call schedule", "escalation policy", "service"}},
	{"weather", "Weather data from national services.", []string{"forecast", "current conditions", "severe weather alert", "air quality"}},
	{"maps", "Maps and places.", []string{"route", "place", "geocode", "travel time", "elevation"}},
	{"crm", "A customer relationship system.", []string{"contact", "deal", "company", "note", "pipeline stage"}},
	{"search", "Web search.", []string{"web page", "news article", "image", "video"}},
}

var benchVerbs = []struct{ verb, says string }{
	{"list", "Lists the %ss, newest first, with paging."},
	{"get", "Returns one %s by its id, with all its fields."},
	{"create", "Creates a new %s from the given fields."},
	{"update", "Changes the fields of an existing %s."},
	{"delete", "Deletes a %s permanently; this cannot be undone."},
	{"search", "Finds %ss matching a free-text query and filters."},
	{"archive", "Archives a %s so that it no longer shows by default."},
	{"export", "Exports %ss as CSV or JSON for reporting."},
}

// benchTools builds n tools over the sources, varied in name, description and parameters.
func benchTools(n int) []Toolset {
	sets := make([]*staticSet, len(benchSources))
	for i, s := range benchSources {
		sets[i] = &staticSet{name: "mcp:" + s.name}
	}
	for i := 0; i < n; i++ {
		s, j := benchSources[i%len(benchSources)], i/len(benchSources)
		noun := s.nouns[j%len(s.nouns)]
		v := benchVerbs[(j/len(s.nouns))%len(benchVerbs)]
		variant := j / (len(s.nouns) * len(benchVerbs))
		name := fmt.Sprintf("%s_%s_%s", s.name, v.verb, strings.ReplaceAll(noun, " ", "_"))
		if variant > 0 {
			name += fmt.Sprintf("_v%d", variant)
		}
		schema := fmt.Sprintf(`{"type":"object","properties":{"%s_id":{"type":"string","description":"The id of the %s."},`+
			`"limit":{"type":"integer","description":"At most this many results."},"filter":{"type":"object","properties":{`+
			`"owner":{"description":"Only those of this owner."},"since":{"description":"Only those changed since this time."}}}}}`,
			strings.ReplaceAll(noun, " ", "_"), noun)
		sets[i%len(benchSources)].tools = append(sets[i%len(benchSources)].tools, &funcTool{spec: ToolSpec{Name: name,
			Description: fmt.Sprintf(v.says, noun) + " " + s.about, InputSchema: json.RawMessage(schema)}})
	}
	out := make([]Toolset, len(sets))
	for i, s := range sets {
		out[i] = s
	}
	return out
}

var benchQueries = []string{
	"open a pull request for my branch",
	"send a message to the team channel",
	"what is the weather forecast for Lyon tomorrow",
	"refund the customer's last charge",
	"restart the crashed pod in production",
	"find free slots in my calendar next week",
	"export all invoices for accounting",
	"who is on call right now",
	"create a jira ticket for this bug",
	"search the web for news about Go 1.26",
	"delete the old S3 bucket",
	"list recent errors in sentry",
	"kubernetes_delete_deployment",
	"draft an email reply with the attachment",
	"how long does it take to drive from Paris to Lyon",
	"update the deal stage in the CRM",
	"show the dashboard for API latency metrics",
	"archive the notion page about onboarding",
	"merge request pipeline failed",
	"share the drive folder with Alice",
}

// BenchmarkToolSearch times ToolManager.Search over catalogues of 1,000 and 10,000 tools from 20 sources, and reports
// the median and 99th percentile of one search besides the mean.
func BenchmarkToolSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			m := NewToolManager(benchTools(n), nil)
			ctx := context.Background()
			if hits, err := m.Search(ctx, benchQueries[0], nil); err != nil || len(hits) == 0 {
				b.Fatalf("search: %v %v", hits, err)
			}
			var took []time.Duration
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, err := m.Search(ctx, benchQueries[i%len(benchQueries)], nil); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				i++
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkToolSearchBuild times building the index of a new list of 10,000 tools.
func BenchmarkToolSearchBuild(b *testing.B) {
	sets := benchTools(10000)
	ctx := context.Background()
	for b.Loop() {
		m := NewToolManager(sets, nil)
		if _, err := m.Search(ctx, "weather", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchToolsAreDistinct keeps the benchmark's catalogue honest: every tool is valid and named once.
func TestBenchToolsAreDistinct(t *testing.T) {
	m := NewToolManager(benchTools(10000), nil)
	tools, err := m.Tools(t.Context())
	if err != nil || len(tools) != 10000 {
		t.Fatalf("the catalogue has %d tools (%v), want 10000", len(tools), err)
	}
	if got := searchTools(t, m, "kubernetes_delete_deployment", nil); len(got) == 0 || got[0] != "kubernetes_delete_deployment" {
		t.Errorf("search for a tool's exact name = %v, want it first", got)
	}
}
