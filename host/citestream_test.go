package host

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/cite"
)

func TestCiteStream(t *testing.T) {
	sources := []cite.Source{{Number: 1, Title: "A", URI: "u:a"}, {Number: 2, Title: "B", URI: "u:b"}, {Number: 3, Title: "A again", URI: "u:a"}}
	texts := []string{
		"Go is fast [source 2]. Rust too [source 1][source 3] and [source 2, 1].",
		"Unknown [source 9] markers go. See [link](http://x.test/a) and `code [source 1]` here [1].",
		"Ends with a citation [source 1]",
		"```\n[source 1] in a fence\n```\nafter [sources 1 and 2]",
		"Plain text without any citation at all, in several words.",
	}
	for _, style := range []CitationStyle{CitationMarkdown, CitationSup, CitationNone} {
		for _, text := range texts {
			for _, size := range []int{1, 3, 7, 1000} {
				s := newCiteStream(func() []cite.Source { return sources }, style)
				var streamed strings.Builder
				for i := 0; i < len(text); i += size {
					streamed.WriteString(s.write(text[i:min(i+size, len(text))]))
				}
				final, _ := cite.Render(text, sources, cite.Style(style))
				if !strings.HasPrefix(final, streamed.String()) {
					t.Errorf("%s, chunks of %d: streamed %q is not a prefix of the answer %q", style, size, streamed.String(), final)
				}
				// The stream must not hold back more than its last sentence's citation.
				body := strings.TrimSpace(cite.NewRenderer(sources, cite.Style(style)).Body(text))
				if len(body)-streamed.Len() > 40 {
					t.Errorf("%s, chunks of %d: streamed only %q of %q", style, size, streamed.String(), body)
				}
			}
		}
	}
}
