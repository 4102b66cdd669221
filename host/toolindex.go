package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/internal/toolsearch"
	"github.com/agenthost/agenthost/llm"
)

// This file is tool search's ranking: an index over the merged list, rebuilt when the list changes, and, with an
// embedder, the fusion of its ranking with one by meaning.

// embedBatch is how many tool documents go to the embedder in one request.
const embedBatch = 64

// fusionDepth is how many hits of each ranking are fused, at least: enough that a tool ranked low by words but high
// by meaning still makes the top.
const fusionDepth = 50

// embedRetry is how long searches rank by words alone after the embedder failed, before they try it again: a
// failing endpoint costs one search a minute, not every search.
const embedRetry = time.Minute

// embedQueryTimeout and embedToolsTimeout bound embedding a query and a list's tools, whatever the caller's
// deadline: a search that waits on a hanging endpoint longer than that ranks by words, and the endpoint rests.
// Variables for tests.
var (
	embedQueryTimeout = 10 * time.Second
	embedToolsTimeout = time.Minute
)

// toolSearch is a ToolManager's search state.
type toolSearch struct {
	embedder llm.Embedder
	vectors  *vectorCache // shared by a manager and its restricted views, with the embedder's health

	mu       sync.Mutex
	cur      *toolIndex
	building *indexBuild
}

// indexBuild is a build under way, which searches over the same list wait for rather than build again.
type indexBuild struct {
	list  []*ManagedTool
	about map[string]string
	done  chan struct{}
	ix    *toolIndex
}

// toolIndex is the index of one merged list.
type toolIndex struct {
	list   []*ManagedTool    // the list it was built from: a new slice means a new list
	about  map[string]string // what the sources said of themselves then (sourceDescriptions)
	tools  []*ManagedTool    // the enabled tools, by document
	pos    []int             // each document's position in list
	ix     *toolsearch.Index
	texts  []string // what is embedded of each tool
	hashes []string // sha256 of each text

	embedding chan struct{} // a semaphore of one: who embeds the tools now
	vecs      [][]float32   // unit vectors by document, nil until embedded
}

// sameList reports whether an index of a serves b: the same slice, or one merged again from sources that changed
// nothing the index reads (ToolManager.Tools merges anew on every call while a source fails to list).
func sameList(a, b []*ManagedTool) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i, t := range a {
		u := b[i]
		if t != u && (t.Spec.Name != u.Spec.Name || t.Source != u.Source || t.Policy.Disabled != u.Policy.Disabled ||
			t.Spec.Title != u.Spec.Title || t.Spec.Description != u.Spec.Description ||
			string(t.Spec.InputSchema) != string(u.Spec.InputSchema)) {
			return false
		}
	}
	return true
}

// Search ranks the enabled tools for query, best first. Disabled tools are never found; opts.Allow narrows further.
//
// The ranking is BM25F over each tool's name, source, description, parameters and its source's description (see
// host/internal/toolsearch). With an Embedder, the tools and the query are embedded as well and the two rankings are
// fused; a failing embedder is logged once and leaves the ranking by words. A search fails only when ctx ends while
// it waits for the index of a new list.
func (m *ToolManager) Search(ctx context.Context, query string, opts *SearchOptions) ([]SearchHit, error) {
	if opts == nil {
		opts = &SearchOptions{}
	}
	limit := opts.MaxResults
	if limit <= 0 {
		limit = DefaultSearchResults
	}
	tools := m.currentTools(ctx)
	ix, err := m.index(ctx, tools)
	if err != nil {
		return nil, err
	}
	// The hits are tools of the caller's list: the index may have been built from an earlier merge of the same tools.
	tool := func(d int) *ManagedTool { return tools[ix.pos[d]] }
	var allow func(int) bool
	if opts.Allow != nil {
		allow = func(d int) bool { return opts.Allow(tool(d)) }
	}
	var hits []toolsearch.Hit
	if m.search.embedderReady() {
		if vecs := m.toolVectors(ctx, ix); vecs != nil {
			if q := m.queryVector(ctx, query); q != nil {
				depth := max(limit, fusionDepth)
				hits = toolsearch.Fuse(toolsearch.DefaultFusionK, limit, ix.ix.Search(query, depth, allow), toolsearch.CosineRank(q, vecs, depth, allow))
			}
		}
	}
	if hits == nil {
		hits = ix.ix.Search(query, limit, allow)
	}
	out := make([]SearchHit, len(hits))
	for i, h := range hits {
		out[i] = SearchHit{Tool: tool(h.Doc), Score: h.Score}
	}
	return out, nil
}

// index returns the index of tools, building it when the list, or what a source says of itself, is new. The build
// runs outside the lock, so searches over the previous list go on meanwhile; searches over the new one wait for it.
func (m *ToolManager) index(ctx context.Context, tools []*ManagedTool) (*toolIndex, error) {
	s := &m.search
	about := m.sourceDescriptions()
	s.mu.Lock()
	if s.cur != nil && sameList(s.cur.list, tools) && maps.Equal(s.cur.about, about) {
		ix := s.cur
		s.mu.Unlock()
		return ix, nil
	}
	if b := s.building; b != nil && sameList(b.list, tools) && maps.Equal(b.about, about) {
		s.mu.Unlock()
		select {
		case <-b.done:
			return b.ix, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b := &indexBuild{list: tools, about: about, done: make(chan struct{})}
	s.building = b
	s.mu.Unlock()

	b.ix = m.buildIndex(tools, about)
	s.mu.Lock()
	if s.building == b { // else a build for a newer list started meanwhile: it will be the current index
		s.building = nil
		s.cur = b.ix
	}
	s.mu.Unlock()
	close(b.done)
	return b.ix, nil
}

// sourceDescriptions returns what each source that is an Instructor says of itself, by source name.
func (m *ToolManager) sourceDescriptions() map[string]string {
	about := map[string]string{}
	for _, set := range m.sources() {
		if in, ok := set.(Instructor); ok {
			about[set.Name()] = in.Instructions()
		}
	}
	return about
}

// buildIndex indexes the enabled tools of list, whose sources say about of themselves.
func (m *ToolManager) buildIndex(list []*ManagedTool, about map[string]string) *toolIndex {
	ix := &toolIndex{list: list, about: about, embedding: make(chan struct{}, 1)}
	var docs []toolsearch.Fields
	for i, t := range list {
		if t.Policy.Disabled {
			continue
		}
		fields := toolFields(t, about[t.Source])
		ix.tools = append(ix.tools, t)
		ix.pos = append(ix.pos, i)
		docs = append(docs, fields)
		if m.search.embedder != nil {
			text := embeddingText(t, fields)
			sum := sha256.Sum256([]byte(text))
			ix.texts = append(ix.texts, text)
			ix.hashes = append(ix.hashes, hex.EncodeToString(sum[:]))
		}
	}
	ix.ix = toolsearch.Build(docs, nil)
	return ix
}

// toolFields is the document of t, whose source says about of itself.
func toolFields(t *ManagedTool, about string) toolsearch.Fields {
	var f toolsearch.Fields
	source := t.Source
	if i := strings.IndexByte(source, ':'); i >= 0 {
		source = source[i+1:]
	}
	name := t.Spec.Name
	// A name that starts with its source's name ("github_create_issue" of "mcp:github") has that prefix in the
	// source field only: it says where the tool is, not what it does.
	if n := len(source); n > 0 && len(name) > n+1 && strings.EqualFold(name[:n], source) && strings.ContainsRune("_-.", rune(name[n])) {
		name = name[n+1:]
	}
	f[toolsearch.FieldName] = name + " " + t.Spec.Title
	f[toolsearch.FieldSource] = source
	f[toolsearch.FieldDescription] = t.Spec.Description
	f[toolsearch.FieldParams] = paramText(t.Spec.InputSchema)
	f[toolsearch.FieldSourceDescription] = about
	return f
}

// schemaProps is what search reads of an input schema: properties, one level of nesting deep.
type schemaProps struct {
	Properties map[string]struct {
		Description string       `json:"description"`
		Properties  schemaNested `json:"properties"`
		Items       struct {
			Properties schemaNested `json:"properties"`
		} `json:"items"`
	} `json:"properties"`
}

type schemaNested map[string]struct {
	Description string `json:"description"`
}

// paramText is the parameters' names and descriptions, in a fixed order.
func paramText(schema json.RawMessage) string {
	if len(schema) == 0 {
		return ""
	}
	var s schemaProps
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var b strings.Builder
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		b.WriteString(name + " " + p.Description + "\n")
		for _, nested := range []schemaNested{p.Properties, p.Items.Properties} {
			for _, n := range sortedKeys(nested) {
				b.WriteString(n + " " + nested[n].Description + "\n")
			}
		}
	}
	return b.String()
}

// embeddingText is what is embedded of a tool: its name, source, description and parameter names.
func embeddingText(t *ManagedTool, f toolsearch.Fields) string {
	var params []string
	var s schemaProps
	if json.Unmarshal(t.Spec.InputSchema, &s) == nil {
		params = sortedKeys(s.Properties)
	}
	text := t.Spec.Name + " (" + f[toolsearch.FieldSource] + "): " + t.Spec.Description
	if len(params) > 0 {
		text += "\nParameters: " + strings.Join(params, ", ")
	}
	return text
}

// toolVectors returns the unit vectors of ix's tools, embedding those neither in memory nor in the cache; nil when
// there is no embedder or embedding failed.
func (m *ToolManager) toolVectors(ctx context.Context, ix *toolIndex) [][]float32 {
	e := m.search.embedder
	if e == nil || len(ix.tools) == 0 {
		return nil
	}
	select {
	case ix.embedding <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-ix.embedding }()
	if ix.vecs != nil {
		return ix.vecs
	}
	if !m.search.vectors.healthy() { // it failed while this search waited its turn
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, embedToolsTimeout)
	defer cancel()
	vecs, err := m.search.vectors.get(ectx, e, ix.texts, ix.hashes, m.warnOnce)
	if err != nil {
		m.warnOnce("tool search ranks by words only: embedding the tools failed", "model", e.Model(), "err", err)
		m.search.vectors.failed(ctx)
		return nil
	}
	ix.vecs = vecs
	return vecs
}

// queryVector embeds query; nil when that fails.
func (m *ToolManager) queryVector(ctx context.Context, query string) []float32 {
	e := m.search.embedder
	ectx, cancel := context.WithTimeout(ctx, embedQueryTimeout)
	defer cancel()
	vs, err := e.Embed(ectx, []string{query})
	if err == nil && (len(vs) != 1 || len(vs[0]) == 0) {
		err = errEmbedCount
	}
	if err != nil {
		m.warnOnce("tool search ranks by words only: embedding the query failed", "model", e.Model(), "err", err)
		m.search.vectors.failed(ctx)
		return nil
	}
	q := vs[0]
	toolsearch.Normalize(q)
	return q
}

// embedderReady reports whether searches may use the embedder: there is one, and it did not fail within embedRetry.
func (s *toolSearch) embedderReady() bool {
	return s.embedder != nil && s.vectors.healthy()
}

// warnOnce logs msg the first time only.
func (m *ToolManager) warnOnce(msg string, args ...any) {
	m.mu.Lock()
	seen := m.warned[msg]
	m.warned[msg] = true
	m.mu.Unlock()
	if !seen {
		m.logger.Warn(msg, args...)
	}
}

// healthy reports whether the embedder did not fail within embedRetry.
func (c *vectorCache) healthy() bool {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	return c.failedAt.IsZero() || time.Since(c.failedAt) >= embedRetry
}

// failed starts a rest of embedRetry, unless ctx, the search's, ended: a cancelled search says nothing of the
// embedder, while one that ran out of embedQueryTimeout or embedToolsTimeout does.
func (c *vectorCache) failed(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	c.failMu.Lock()
	c.failedAt = time.Now()
	c.failMu.Unlock()
}

// vectorCache keeps tool vectors in memory by model and content hash, in front of an EmbeddingCache.
type vectorCache struct {
	store EmbeddingCache // nil: memory only

	failMu   sync.Mutex
	failedAt time.Time // when the embedder last failed; zero when it did not

	mu      sync.Mutex
	byModel map[string]map[string][]float32
}

func newVectorCache(store EmbeddingCache) *vectorCache {
	return &vectorCache{store: store, byModel: map[string]map[string][]float32{}}
}

// get returns the unit vectors of texts, by their hashes: from memory, else from the store, else embedded (in
// batches) and kept in both. A failing store is warned about and worked around; a failing embedder is an error.
func (c *vectorCache) get(ctx context.Context, e llm.Embedder, texts, hashes []string, warn func(string, ...any)) ([][]float32, error) {
	model := e.Model()
	out := make([][]float32, len(texts))
	var missing []int
	c.mu.Lock()
	mem := c.byModel[model]
	if mem == nil {
		mem = map[string][]float32{}
		c.byModel[model] = mem
	}
	for i, h := range hashes {
		if v, ok := mem[h]; ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	c.mu.Unlock()
	if len(missing) > 0 && c.store != nil {
		want := make([]string, len(missing))
		for j, i := range missing {
			want[j] = hashes[i]
		}
		found, err := c.store.Embeddings(ctx, model, want)
		if err != nil {
			warn("tool search: reading cached tool vectors failed", "model", model, "err", err)
		}
		still := missing[:0]
		c.mu.Lock()
		for _, i := range missing {
			if v, ok := found[hashes[i]]; ok && len(v) > 0 {
				toolsearch.Normalize(v)
				out[i], mem[hashes[i]] = v, v
			} else {
				still = append(still, i)
			}
		}
		c.mu.Unlock()
		missing = still
	}
	for start := 0; start < len(missing); start += embedBatch {
		batch := missing[start:min(start+embedBatch, len(missing))]
		in := make([]string, len(batch))
		for j, i := range batch {
			in[j] = texts[i]
		}
		vs, err := e.Embed(ctx, in)
		if err == nil && len(vs) != len(in) {
			err = errEmbedCount
		}
		if err != nil {
			return nil, err
		}
		put := make(map[string][]float32, len(batch))
		c.mu.Lock()
		for j, i := range batch {
			v := vs[j]
			toolsearch.Normalize(v)
			out[i], mem[hashes[i]], put[hashes[i]] = v, v, v
		}
		c.mu.Unlock()
		if c.store != nil {
			if err := c.store.PutEmbeddings(ctx, model, put); err != nil {
				warn("tool search: caching tool vectors failed", "model", model, "err", err)
			}
		}
	}
	return out, nil
}

var errEmbedCount = errors.New("the embedder returned a different number of vectors than texts")

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
