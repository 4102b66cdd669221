package toolsearch

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in      string
		terms   []string
		primary int
	}{
		{"create_issue", []string{"creat", "issu"}, 2},
		{"GitHub", []string{"git", "hub", "github"}, 2},
		{"getHTTPServer v2", []string{"get", "http", "server", "2", "gethttpserv", "v2"}, 4},
		{"list-pull.requests", []string{"list", "pull", "request"}, 3},
		{"What is the weather in Paris?", []string{"weather", "pari"}, 2},
		{"résumé Überblick", []string{"résumé", "überblick"}, 2},
		{"", nil, 0},
	} {
		got := Tokenize(tc.in)
		if !slices.Equal(got.Terms, tc.terms) || got.Primary != tc.primary {
			t.Errorf("Tokenize(%q) = %q (%d primary), want %q (%d)", tc.in, got.Terms, got.Primary, tc.terms, tc.primary)
		}
	}
}

func docs() []Fields {
	return []Fields{
		{FieldName: "create_issue", FieldSource: "github", FieldDescription: "Create a new issue in a repository.", FieldParams: "title The issue's title\nbody"},
		{FieldName: "list_issues", FieldSource: "github", FieldDescription: "List the issues of a repository, open or closed."},
		{FieldName: "send_message", FieldSource: "slack", FieldDescription: "Post a message to a channel.", FieldParams: "channel\ntext"},
		{FieldName: "get_forecast", FieldSource: "weather", FieldDescription: "The weather forecast for a city for the next days.",
			FieldSourceDescription: "Meteorological data from national services."},
		{FieldName: "query", FieldSource: "postgres", FieldDescription: "Run a read-only SQL query.", FieldParams: "sql The statement"},
	}
}

func TestSearchRanks(t *testing.T) {
	ix := Build(docs(), nil)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"open a new issue", 0},
		{"create_issue", 0},
		{"which issues are open", 1},
		{"post to a slack channel", 2},
		{"will it rain in Paris tomorrow forecast", 3},
		{"meteorological", 3},       // the source's description
		{"run an SQL statement", 4}, // parameters
	} {
		hits := ix.Search(tc.query, 3, nil)
		if len(hits) == 0 || hits[0].Doc != tc.want {
			t.Errorf("Search(%q) = %v, want doc %d first", tc.query, hits, tc.want)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("Search(%q) = %v: not best first", tc.query, hits)
			}
		}
	}
	if hits := ix.Search("zebra", 5, nil); len(hits) != 0 {
		t.Errorf("Search(zebra) = %v, want nothing", hits)
	}
	if hits := ix.Search("issue", 5, func(d int) bool { return d != 0 }); len(hits) != 1 || hits[0].Doc != 1 {
		t.Errorf("Search(issue) without doc 0 = %v, want doc 1 only", hits)
	}
	if hits := ix.Search("issue repository", 1, nil); len(hits) != 1 {
		t.Errorf("Search with limit 1 = %v", hits)
	}
}

// TestSearchReusesScratch checks that a search leaves no score behind for the next one.
func TestSearchReusesScratch(t *testing.T) {
	ix := Build(docs(), nil)
	first := ix.Search("slack message", 5, nil)
	for range 3 {
		ix.Search("slack message channel post", 5, nil)
	}
	if again := ix.Search("slack message", 5, nil); !slices.Equal(first, again) {
		t.Errorf("second search = %v, first %v", again, first)
	}
}

func TestFuse(t *testing.T) {
	lex := []Hit{{Doc: 1}, {Doc: 2}, {Doc: 3}}
	vec := []Hit{{Doc: 3}, {Doc: 4}, {Doc: 1}}
	got := Fuse(DefaultFusionK, 3, lex, vec)
	var order []int
	for _, h := range got {
		order = append(order, h.Doc)
	}
	// 1: 1/61+1/63, 3: 1/63+1/61 (tie, earlier doc first), 2: 1/62, 4: 1/62.
	if want := []int{1, 3, 2}; !slices.Equal(order, want) {
		t.Errorf("Fuse order = %v, want %v", order, want)
	}
}

func TestCosineRank(t *testing.T) {
	vecs := [][]float32{{1, 0}, {0, 1}, {0.7, 0.7}, nil, {1, 0, 0}}
	for _, v := range vecs {
		Normalize(v)
	}
	q := []float32{0.9, 0.1}
	Normalize(q)
	got := CosineRank(q, vecs, 2, nil)
	if len(got) != 2 || got[0].Doc != 0 || got[1].Doc != 2 {
		t.Errorf("CosineRank = %v, want docs 0 then 2", got)
	}
	if got := CosineRank(q, vecs, 5, func(d int) bool { return d != 0 }); len(got) != 2 || got[0].Doc != 2 {
		t.Errorf("CosineRank without doc 0 = %v", got)
	}
}
