package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/builtin/docsearch"
	"github.com/agenthost/agenthost/host"
)

// maxDocResults is the most results a doc_search call may ask for.
const maxDocResults = 50

// docSearch is the doc_search tool: the full-text index of the documents under its roots, kept up to date in the
// background.
type docSearch struct {
	ix         *docsearch.Index
	roots      []string
	maxResults int
	input      json.RawMessage

	mu        sync.Mutex
	state     string // "indexing", "ready", "failed"
	progress  docsearch.Progress
	err       error
	indexed   time.Time // end of the last refresh
	documents int
	now       func() time.Time
}

func newDocSearch(e *env) (host.Tool, error) {
	o := e.opts.DocSearch
	if len(o.Roots) == 0 {
		return nil, errors.New("roots is required: the directories whose documents are indexed")
	}
	if o.MaxResults < 0 || o.MaxResults > maxDocResults {
		return nil, fmt.Errorf("max_results must be between 1 and %d, not %d", maxDocResults, o.MaxResults)
	}
	var errs []error
	for _, r := range o.Roots {
		if fi, err := os.Stat(r); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", r, errors.Unwrap(err)))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("root %s: not a directory", r))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ix, err := e.opts.OpenDocIndex(e.logger)
	if err != nil {
		return nil, err
	}
	// Until the first refresh ends, check reports what an earlier run left in the index.
	documents, err := ix.Count(context.Background())
	if err != nil {
		ix.Close()
		return nil, err
	}
	t := &docSearch{
		documents:  documents,
		ix:         ix,
		roots:      o.Roots,
		maxResults: cmp.Or(o.MaxResults, 5),
		state:      "indexing",
		now:        e.now,
	}
	t.input = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"query":{"type":"string","description":"Words to search for, e.g. expense report deadline; documents with all of them rank first"},`+
		`"max_results":{"type":"integer","description":"How many documents to return, 1 to %d; default %d"}},`+
		`"required":["query"]}`, maxDocResults, t.maxResults))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.keepFresh(ctx, e, cmp.Or(o.RefreshInterval, 5*time.Minute))
	}()
	e.onClose(func() error {
		cancel()
		<-done
		return ix.Close()
	})
	e.reportStatus(t.status)
	return t, nil
}

// keepFresh refreshes the index now and then every interval (only now when interval is negative) until ctx ends.
func (t *docSearch) keepFresh(ctx context.Context, e *env, interval time.Duration) {
	for {
		t.refresh(ctx, e)
		if interval < 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (t *docSearch) refresh(ctx context.Context, e *env) {
	e.logger.Info("doc_search: indexing", "roots", strings.Join(t.roots, ", "))
	st, err := t.ix.Refresh(ctx, func(p docsearch.Progress) {
		t.mu.Lock()
		t.progress = p
		t.mu.Unlock()
		if p.Scanned%1000 == 0 {
			e.logger.Debug("doc_search: indexing", "scanned", p.Scanned, "total", p.Total)
		}
	})
	if ctx.Err() != nil {
		return
	}
	n, cerr := t.ix.Count(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err = cmp.Or(err, cerr); err != nil {
		t.state, t.err = "failed", err
		e.logger.Warn("doc_search: indexing failed", "err", err)
		return
	}
	t.state, t.err, t.indexed, t.documents = "ready", nil, t.now(), n
	e.logger.Info("doc_search: indexed", "documents", n, "read", st.Indexed, "removed", st.Removed,
		"skipped", st.Skipped, "duration", st.Duration.Round(time.Millisecond))
}

func (t *docSearch) status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Status{Tool: "doc_search", State: t.state}
	switch {
	case t.state == "failed":
		s.Detail = t.err.Error()
	case t.state == "indexing" || t.indexed.IsZero():
		s.Detail = fmt.Sprintf("%d/%d files scanned, %s in the index", t.progress.Scanned, t.progress.Total, documents(t.documents))
	default:
		s.Detail = fmt.Sprintf("%s, indexed %s ago", documents(t.documents), t.now().Sub(t.indexed).Round(time.Second))
	}
	return s
}

func documents(n int) string {
	if n == 1 {
		return "1 document"
	}
	return fmt.Sprintf("%d documents", n)
}

func (t *docSearch) Spec() host.ToolSpec {
	return host.ToolSpec{
		Name:  "doc_search",
		Title: "Document search",
		Description: "Searches the organisation's documents under " + strings.Join(t.roots, ", ") + " by full text " +
			"(BM25 ranking), and returns the best documents as sources with a snippet around the match.",
		Prompt: "Use doc_search for questions about the organisation's own documents: policies, guides, notes and " +
			"references kept under " + strings.Join(t.roots, ", ") + ". Search with a few distinctive words, cite " +
			"the documents you use, and read a document in full (with read_file, when you have it) when its " +
			"snippet is not enough.",
		InputSchema: t.input,
		Annotations: readOnly(false),
	}
}

func (t *docSearch) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		Query      string `json:"query"`
		MaxResults *int   `json:"max_results"`
	}
	const example = `{"query": "expense report deadline"}`
	if err := decodeArgs(args, &in, example); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	n := t.maxResults
	if in.MaxResults != nil {
		n = min(max(*in.MaxResults, 1), maxDocResults)
	}
	hits, err := t.ix.Search(ctx, in.Query, n)
	switch {
	case errors.Is(err, docsearch.ErrNoTerms):
		return errorResult("Invalid arguments: the query has no words to search for; for example %s", example), nil
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	var note string
	if st := t.status(); st.State == "indexing" {
		note = fmt.Sprintf(" The documents are still being indexed (%s), so some may be missing.", st.Detail)
	}
	if len(hits) == 0 {
		return &host.Result{Text: fmt.Sprintf("No document matches %q. Try other or fewer words.%s", in.Query, note)}, nil
	}
	refs := make([]host.Reference, len(hits))
	for i, h := range hits {
		refs[i] = host.Reference{
			Title:   h.Title,
			URI:     (&url.URL{Scheme: "file", Path: filepath.ToSlash(h.Path)}).String(),
			Content: h.Snippet,
		}
	}
	return &host.Result{
		Text:       fmt.Sprintf("%s found for %q, best first.%s", documents(len(hits)), in.Query, note),
		References: refs,
		Debug:      map[string]any{"results": len(hits)},
	}, nil
}
