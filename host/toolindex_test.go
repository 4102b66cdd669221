package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// changingSet is a Toolset whose list changes, saying so through its Signal.
type changingSet struct {
	Signal
	name  string
	about string
	mu    sync.Mutex
	tools []Tool
}

func (s *changingSet) Name() string { return s.name }
func (s *changingSet) Instructions() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.about
}
func (s *changingSet) Tools(context.Context) ([]Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, nil
}

func (s *changingSet) set(tools ...Tool) {
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	s.Notify()
}

func described(name, description string) Tool {
	return &funcTool{spec: ToolSpec{Name: name, Description: description}}
}

func hitNames(hits []SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Tool.Spec.Name
	}
	return out
}

func searchTools(t *testing.T, m *ToolManager, query string, opts *SearchOptions) []string {
	t.Helper()
	hits, err := m.Search(t.Context(), query, opts)
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("Search(%q) = %v: not best first", query, hits)
		}
	}
	return hitNames(hits)
}

func TestToolSearchFollowsListChanges(t *testing.T) {
	set := &changingSet{name: "mcp:tracker"}
	set.set(described("tracker_create_issue", "Open a new issue."), described("tracker_close_issue", "Close an issue."))
	m := NewToolManager([]Toolset{set}, nil)
	if got := searchTools(t, m, "open a new issue", nil); len(got) == 0 || got[0] != "tracker_create_issue" {
		t.Fatalf("before the change: %v, want tracker_create_issue first", got)
	}
	if got := searchTools(t, m, "deploy", nil); len(got) != 0 {
		t.Fatalf("before the change, deploy found %v", got)
	}
	set.set(described("tracker_close_issue", "Close an issue."), described("tracker_deploy", "Deploy a release to production."))
	if got := searchTools(t, m, "deploy a release", nil); len(got) == 0 || got[0] != "tracker_deploy" {
		t.Errorf("after the change: %v, want tracker_deploy first", got)
	}
	if got := searchTools(t, m, "open a new issue", nil); strings.Contains(strings.Join(got, " "), "tracker_create_issue") {
		t.Errorf("after the change, the removed tool is still found: %v", got)
	}
}

func TestToolSearchHonoursPolicyAndAllow(t *testing.T) {
	set := &changingSet{name: "mcp:files"}
	set.set(described("read_file", "Read a file."), described("write_file", "Write a file."), described("delete_file", "Delete a file."))
	m := NewToolManager([]Toolset{set}, &ToolManagerOptions{Policies: map[string]ToolPolicy{"delete_file": {Disabled: true}}})
	got := searchTools(t, m, "delete a file", &SearchOptions{MaxResults: 10})
	if strings.Contains(strings.Join(got, " "), "delete_file") || len(got) != 2 {
		t.Errorf("search found %v: want read_file and write_file, never the disabled delete_file", got)
	}
	got = searchTools(t, m, "file", &SearchOptions{Allow: func(t *ManagedTool) bool { return t.Spec.Name != "read_file" }})
	if strings.Join(got, " ") != "write_file" {
		t.Errorf("search with Allow found %v, want write_file only", got)
	}
	if got := searchTools(t, m, "file", &SearchOptions{MaxResults: 1}); len(got) != 1 {
		t.Errorf("MaxResults 1 gave %v", got)
	}
	sub := m.Restrict([]string{"write_file"})
	if got := searchTools(t, sub, "read or write a file", nil); strings.Join(got, " ") != "write_file" {
		t.Errorf("restricted view found %v, want write_file only", got)
	}
}

func TestToolSearchFields(t *testing.T) {
	weather := &changingSet{name: "mcp:weather", about: "Meteorological observations from national services."}
	weather.set(described("weather_now", "Current conditions at a place."))
	db := &changingSet{name: "mcp:db"}
	db.set(&funcTool{spec: ToolSpec{Name: "db_run", Description: "Run something.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"statement":{"type":"string","description":"the SQL to execute"},` +
			`"options":{"type":"object","properties":{"timeout":{"description":"seconds before cancellation"}}}}}`)}})
	m := NewToolManager([]Toolset{weather, db}, nil)
	for query, want := range map[string]string{
		"meteorological":        "weather_now", // the source's description
		"execute SQL":           "db_run",      // a parameter's description
		"cancellation":          "db_run",      // a nested parameter's description
		"weather":               "weather_now", // the source's name
		"weather_now":           "weather_now",
		"what is the statement": "db_run", // a parameter's name, stemmed
	} {
		if got := searchTools(t, m, query, nil); len(got) == 0 || got[0] != want {
			t.Errorf("Search(%q) = %v, want %s first", query, got, want)
		}
	}
}

// conceptEmbedder embeds a text as its counts of words of a few concepts: words that share no letters are close.
type conceptEmbedder struct {
	mu    sync.Mutex
	texts int
	calls int // Embed calls, failed ones included
	fail  bool
}

var concepts = [][]string{{"weather", "forecast", "rain", "drizzle", "umbrella"}, {"invoice", "payment", "charge", "bill"}, {"issue", "bug", "ticket"}}

func (e *conceptEmbedder) Model() string { return "concepts" }

func (e *conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.fail {
		return nil, errors.New("embeddings endpoint down")
	}
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, len(concepts)+1)
		v[len(concepts)] = 0.1
		for _, w := range strings.Fields(strings.ToLower(text)) {
			for c, words := range concepts {
				for _, cw := range words {
					if strings.Contains(w, cw) {
						v[c]++
					}
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func (e *conceptEmbedder) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.texts
}

// mapCache is an EmbeddingCache in a map.
type mapCache struct {
	mu   sync.Mutex
	vecs map[string][]float32
	puts int
}

func (c *mapCache) Embeddings(_ context.Context, model string, hashes []string) (map[string][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]float32{}
	for _, h := range hashes {
		if v, ok := c.vecs[model+"/"+h]; ok {
			out[h] = append([]float32(nil), v...)
		}
	}
	return out, nil
}

func (c *mapCache) PutEmbeddings(_ context.Context, model string, vectors map[string][]float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, v := range vectors {
		c.vecs[model+"/"+h] = append([]float32(nil), v...)
		c.puts++
	}
	return nil
}

func hybridTools() *changingSet {
	set := &changingSet{name: "mcp:ops"}
	var tools []Tool
	tools = append(tools, described("get_forecast", "The weather forecast for a city."), described("charge_card", "Charge a payment card."),
		described("create_issue", "File a bug in the tracker."))
	for i := range 100 {
		tools = append(tools, described(fmt.Sprintf("misc_%03d", i), fmt.Sprintf("Miscellaneous operation number %d.", i)))
	}
	set.set(tools...)
	return set
}

func TestToolSearchHybrid(t *testing.T) {
	set := hybridTools()
	if got := searchTools(t, NewToolManager([]Toolset{set}, nil), "will I need an umbrella", nil); len(got) != 0 {
		t.Fatalf("by words alone, the query found %v: the test needs a query that shares no word with the tools", got)
	}
	emb := &conceptEmbedder{}
	cache := &mapCache{vecs: map[string][]float32{}}
	m := NewToolManager([]Toolset{set}, &ToolManagerOptions{Embedder: emb, EmbeddingCache: cache})
	if got := searchTools(t, m, "will I need an umbrella", nil); len(got) == 0 || got[0] != "get_forecast" {
		t.Fatalf("hybrid search = %v, want get_forecast first", got)
	}
	if got := searchTools(t, m, "file a bug", nil); len(got) == 0 || got[0] != "create_issue" {
		t.Errorf("hybrid search = %v, want create_issue first", got)
	}
	if emb.count() != 103+2 || cache.puts != 103 {
		t.Errorf("embedded %d texts and cached %d vectors; want the 103 tools once, then each query, and 103 cached", emb.count(), cache.puts)
	}
	// A new manager (a restart) finds the vectors in the cache and embeds only the query.
	emb2 := &conceptEmbedder{}
	m2 := NewToolManager([]Toolset{set}, &ToolManagerOptions{Embedder: emb2, EmbeddingCache: cache})
	if got := searchTools(t, m2, "will I need an umbrella", nil); len(got) == 0 || got[0] != "get_forecast" {
		t.Errorf("after a restart, hybrid search = %v, want get_forecast first", got)
	}
	if emb2.count() != 1 {
		t.Errorf("after a restart, embedded %d texts, want the query only", emb2.count())
	}
	// A changed list embeds only the new tool.
	tools, _ := set.Tools(t.Context())
	set.set(append([]Tool{described("pay_invoice", "Settle an invoice.")}, tools...)...)
	if got := searchTools(t, m2, "pay this bill", nil); len(got) == 0 || got[0] != "pay_invoice" {
		t.Errorf("after a change, hybrid search = %v, want pay_invoice first", got)
	}
	if emb2.count() != 1+1+1 {
		t.Errorf("after a change, embedded %d texts in all, want the two queries and the new tool", emb2.count())
	}
}

func TestToolSearchEmbedderFailure(t *testing.T) {
	var logs bytes.Buffer
	emb := &conceptEmbedder{fail: true}
	m := NewToolManager([]Toolset{hybridTools()}, &ToolManagerOptions{Embedder: emb, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 {
		if got := searchTools(t, m, "charge a card", nil); len(got) == 0 || got[0] != "charge_card" {
			t.Fatalf("with a failing embedder, search = %v, want charge_card first by words", got)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "embeddings endpoint down") {
		t.Errorf("want one warning naming the failure, got %d:\n%s", n, logs.String())
	}
	// The searches after the failure rank by words without asking the embedder, until embedRetry has passed.
	if emb.calls != 1 {
		t.Errorf("the embedder was asked %d times in 3 searches, want once: the others rest", emb.calls)
	}
	m.search.vectors.failMu.Lock()
	m.search.vectors.failedAt = time.Now().Add(-embedRetry)
	m.search.vectors.failMu.Unlock()
	emb.mu.Lock()
	emb.fail = false
	emb.mu.Unlock()
	if got := searchTools(t, m, "umbrella", nil); len(got) == 0 || got[0] != "get_forecast" || emb.calls < 3 {
		t.Errorf("after the rest, search = %v with %d embedder calls; want get_forecast first by meaning, the tools and the query embedded again", got, emb.calls)
	}
}

func TestToolSearchConcurrentWithChanges(t *testing.T) {
	set := hybridTools()
	m := NewToolManager([]Toolset{set}, &ToolManagerOptions{Embedder: &conceptEmbedder{}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				hits, err := m.Search(context.Background(), "weather forecast", nil)
				if err != nil || len(hits) == 0 {
					t.Errorf("searcher %d, search %d: %v %v", g, i, hits, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 10 {
			tools, _ := set.Tools(context.Background())
			set.set(append(tools[:len(tools):len(tools)], described(fmt.Sprintf("extra_%d", i), "Extra weather tool."))...)
		}
	})
	wg.Wait()
	if got := searchTools(t, m, "extra weather", &SearchOptions{MaxResults: 20}); !strings.Contains(strings.Join(got, " "), "extra_9") {
		t.Errorf("after the changes, search = %v, want extra_9 among them", got)
	}
}

// hangingEmbedder answers nothing until its caller gives up.
type hangingEmbedder struct{ calls atomic.Int32 }

func (e *hangingEmbedder) Model() string { return "hanging" }

func (e *hangingEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	e.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// An endpoint that hangs costs one search its own short timeout, not the caller's deadline, and then rests for the
// manager and its restricted views alike.
func TestToolSearchHangingEmbedder(t *testing.T) {
	defer func(q, tl time.Duration) { embedQueryTimeout, embedToolsTimeout = q, tl }(embedQueryTimeout, embedToolsTimeout)
	embedQueryTimeout, embedToolsTimeout = 20*time.Millisecond, 20*time.Millisecond
	emb := &hangingEmbedder{}
	m := NewToolManager([]Toolset{hybridTools()}, &ToolManagerOptions{Embedder: emb})
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour) // the caller's deadline is far away
	defer cancel()
	hits, err := m.Search(ctx, "charge a card", nil)
	if err != nil || len(hits) == 0 || hits[0].Tool.Spec.Name != "charge_card" {
		t.Fatalf("search = %v, %v; want charge_card first by words", hits, err)
	}
	view := m.Restrict([]string{"charge_card", "get_forecast"})
	for _, mm := range []*ToolManager{m, view} {
		if hits, err := mm.Search(ctx, "charge a card", nil); err != nil || len(hits) == 0 {
			t.Fatalf("search after the failure = %v, %v", hits, err)
		}
	}
	if n := emb.calls.Load(); n != 1 {
		t.Errorf("the hanging embedder was asked %d times, want once: the later searches, the view's too, rest", n)
	}
}

// A list merged anew is served by the old index only when nothing the index reads changed: a tool's title, or what
// its source says of itself, makes a new index.
func TestToolSearchReindexesTitlesAndInstructions(t *testing.T) {
	set := &changingSet{name: "mcp:zoo", about: "Keeps animals."}
	set.set(&funcTool{spec: ToolSpec{Name: "finder", Title: "Alpha finder", Description: "Finds things."}})
	m := NewToolManager([]Toolset{set}, nil)
	if got := searchTools(t, m, "zebra", nil); len(got) != 0 {
		t.Fatalf("before any change, zebra finds %v", got)
	}
	set.set(&funcTool{spec: ToolSpec{Name: "finder", Title: "Zebra finder", Description: "Finds things."}})
	if got := searchTools(t, m, "zebra", nil); !slices.Equal(got, []string{"finder"}) {
		t.Errorf("after the title changed, zebra finds %v", got)
	}
	set.mu.Lock()
	set.about = "Keeps giraffes."
	set.mu.Unlock()
	if got := searchTools(t, m, "giraffes", nil); !slices.Equal(got, []string{"finder"}) {
		t.Errorf("after the source's instructions changed, giraffes finds %v", got)
	}
}

// Searches that queue for the embedder while it hangs do not each wait out its timeout: the first failure rests it
// for those waiting too.
func TestToolSearchHangingEmbedderConcurrent(t *testing.T) {
	defer func(q, tl time.Duration) { embedQueryTimeout, embedToolsTimeout = q, tl }(embedQueryTimeout, embedToolsTimeout)
	embedQueryTimeout, embedToolsTimeout = 50*time.Millisecond, 50*time.Millisecond
	emb := &hangingEmbedder{}
	m := NewToolManager([]Toolset{hybridTools()}, &ToolManagerOptions{Embedder: emb})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if hits, err := m.Search(t.Context(), "charge a card", nil); err != nil || len(hits) == 0 {
				t.Errorf("search = %v, %v", hits, err)
			}
		})
	}
	wg.Wait()
	if n := emb.calls.Load(); n != 1 {
		t.Errorf("the hanging embedder was asked %d times by 4 searches at once, want once", n)
	}
}
