package host

import (
	"strings"
	"unicode"

	"github.com/agenthost/agenthost/host/internal/cite"
)

// citeStream renders citations in streamed text as it arrives, so that what a front-end shows while the model writes
// is what the final answer says. It holds back text that may still change: a citation that is not finished or may
// be joined by the next one, and trailing white space (tidying may remove it). What it emits is always a prefix of
// the rendering of all the text so far; the rest comes with the final answer.
type citeStream struct {
	sources  func() []cite.Source // called once, at the first text: most model calls stream none
	style    CitationStyle
	renderer *cite.Renderer
	raw      strings.Builder
	emitted  string
}

func newCiteStream(sources func() []cite.Source, style CitationStyle) *citeStream {
	return &citeStream{sources: sources, style: style}
}

// write takes a delta and returns the text to emit now, possibly empty.
func (s *citeStream) write(delta string) string {
	if delta == "" {
		return ""
	}
	s.raw.WriteString(delta)
	stable := stablePrefix(s.raw.String())
	if len(stable) <= len(s.emitted) {
		return ""
	}
	if s.renderer == nil {
		s.renderer = cite.NewRenderer(s.sources(), cite.Style(s.style))
	}
	body := s.renderer.Body(stable)
	body = strings.TrimRightFunc(body, unicode.IsSpace)
	if !strings.HasPrefix(body, s.emitted) {
		return "" // the rendering of the held-back part changed what came before: wait for the final answer
	}
	out := body[len(s.emitted):]
	s.emitted = body
	return out
}

// stablePrefix returns the part of raw whose rendering the rest of the text cannot change: raw without trailing
// white space, without an unfinished bracket near its end, and without the citation-like brackets it ends with
// (the next one may join their group: "[source 1][source 2]" renders as one group).
func stablePrefix(raw string) string {
	const near = 256 // a citation is short and on one line
	for {
		raw = strings.TrimRightFunc(raw, unicode.IsSpace)
		last := max(strings.LastIndexAny(raw, "[("), strings.LastIndex(raw, "【"))
		if last < 0 {
			break
		}
		tail := raw[last:]
		if len(tail) > near || strings.ContainsRune(tail, '\n') {
			break
		}
		closed := strings.ContainsAny(tail, "])") || strings.Contains(tail, "】")
		atEnd := strings.HasSuffix(raw, "]") || strings.HasSuffix(raw, ")") || strings.HasSuffix(raw, "】")
		if closed && !atEnd {
			break
		}
		raw = raw[:last]
	}
	// An unfinished code span or fence changes how everything after it renders: hold back from its start.
	if strings.Count(raw, "`")%2 == 1 {
		raw = raw[:strings.LastIndex(raw, "`")]
	}
	return raw
}
