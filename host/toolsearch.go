package host

import (
	"context"
)

// This file is tool search's API: the ToolManager ranks its tools for a query, and a run that offers too many tools
// offers the pinned ones and search_tools instead (see ToolSearchOptions).

// ToolSearchMode says when a run offers search_tools in place of the tools it would otherwise offer.
type ToolSearchMode string

const (
	// ToolSearchAuto turns search on when the offered tools' definitions are estimated above the threshold.
	ToolSearchAuto   ToolSearchMode = "auto"
	ToolSearchAlways ToolSearchMode = "always"
	ToolSearchNever  ToolSearchMode = "never"
)

// SearchToolName is the name of the tool that searches and loads the other tools.
const SearchToolName = "search_tools"

// DefaultSearchResults is how many matches a search returns when the caller does not say.
const DefaultSearchResults = 5

// ToolSearchOptions configures tool search in a run (Options.ToolSearch).
type ToolSearchOptions struct {
	// Mode is when search is on; "" means ToolSearchAuto.
	Mode ToolSearchMode
	// Threshold is the estimated tokens of the offered tools' definitions (EstimateToolTokens) above which
	// ToolSearchAuto turns search on; 0 means DefaultToolSearchThreshold of the context budget.
	Threshold int
}

// DefaultToolSearchThreshold is the threshold for a context budget of contextTokens: 5% of it, the top of the
// 1–5% range past which the MCP client guidance says to stop sending every definition up front.
func DefaultToolSearchThreshold(contextTokens int) int {
	if contextTokens <= 0 {
		contextTokens = DefaultContextTokens
	}
	return contextTokens / 20
}

// EstimateToolTokens estimates the tokens that the definitions of tools cost in every model request: about four
// bytes a token over the name, description and input schema.
func EstimateToolTokens(tools []*ManagedTool) int {
	n := 0
	for _, t := range tools {
		n += len(t.Spec.Name) + len(t.Spec.Description) + len(t.Spec.InputSchema) + 16
	}
	return (n + 3) / 4
}

// SearchHit is one tool that matched a search, with its score: higher is better, comparable within one search only.
type SearchHit struct {
	Tool  *ManagedTool
	Score float64
}

// SearchOptions narrows a search. A nil *SearchOptions means all defaults.
type SearchOptions struct {
	// MaxResults bounds the hits; 0 means DefaultSearchResults.
	MaxResults int
	// Allow, when set, keeps only the tools it returns true for (a run's offered set, say).
	Allow func(*ManagedTool) bool
}

// EmbeddingCache keeps tool vectors by model and content hash. Implementations must be safe for concurrent use.
type EmbeddingCache interface {
	// Embeddings returns the vectors it has of hashes; missing ones are absent from the map.
	Embeddings(ctx context.Context, model string, hashes []string) (map[string][]float32, error)
	// PutEmbeddings keeps vectors by hash.
	PutEmbeddings(ctx context.Context, model string, vectors map[string][]float32) error
}
