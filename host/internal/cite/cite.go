// Package cite rewrites the citations in a model's final answer.
//
// During a run the orchestrator numbers every reference a tool returns with a global source number (1, 2, 3 ...,
// across tools and rounds) and tells the model to cite as "[source N]". Render finds every citation form a model
// writes in practice, gives each cited document a reference number k in the order of first citation, writes k in
// the configured style and appends the list of sources. It owns the citation grammar and nothing else: numbering
// the sources is the orchestrator's job.
//
// cite imports the standard library only.
//
// # Recognised citations
//
// A keyword citation is an opening bracket "[", "(" or "【", optional spaces, the word "source" or "sources" (any
// case), an optional ":" or "#", and a list of numbers, then the matching closing bracket on the same line. Numbers
// are separated by ",", ";", "&", "and", "、" or "，", each optionally preceded by the word again ("[source 1,
// source 2]"); "a-b" or "a–b" is a range (one longer than 100 cites its two ends). Text after the list up to the
// closing bracket is ignored ("[source 2, p. 4]" cites 2) when it stays on one line, holds no other bracket and the
// whole marker is at most 200 bytes.
// Examples: "[source 3]", "[source3]", "[Source 3]", "[sources 1, 2]", "[source 1,2]", "【source 3】",
// "(source 3)".
//
// A bare citation is "[" or "【", a comma-separated list of numbers and the closing bracket: "[3]", "[1, 2]". Bare
// brackets are common in ordinary markdown, so one counts as a citation only when it is unambiguous:
//   - every number in it is a known source number (so with no sources, no bare bracket is ever touched);
//   - it is not a markdown link or link reference: not followed by "(" (an inline link "[3](...)"), not followed by
//     "[]" or by "[label]" where label is defined in the text, not a definition "[3]: ..." at the start of a line,
//     and its label is not defined by such a definition anywhere in the text;
//   - it is not escaped with a backslash ("\[3]").
//
// Citations inside code are never touched: fenced blocks (``` or ~~~, closed by a fence of the same character at
// least as long, or running to the end of the text) and inline code spans (a run of backticks closed by a run of
// the same length before the next blank line). Indented code blocks are not recognised, because nested list items
// are indented the same way and hold citations far more often than answers hold indented code.
//
// # Output
//
// Citations next to each other (touching, or separated by spaces or tabs only) form one group, written once with
// each k at most once, in order of appearance. Numbers that are not sources are dropped; a group left empty is
// removed, together with the space before it when punctuation or the end of the line follows ("word [source 9]."
// becomes "word."), and an emptied pair of parentheses around it.
//
//   - StyleMarkdown: "[1]", "[1][2]", then a blank line, "Sources:" and one line per cited document:
//     "[1] Title — URI" (the title or the URI alone when the other is missing; "[1] untitled source" when both are).
//   - StyleSup: "<sup>1</sup>", "<sup>1,2</sup>", then a blank line, "Sources:" and a numbered markdown list:
//     "1. Title — URI", which renders with the same numbers as the superscripts.
//   - StyleNone: citations are removed and no list is appended.
//   - StyleKeyword: "[source 1]", "[source 1, 2]", and no list: the answer of a nested run, whose citations the
//     calling run maps onto its own source numbers with Renumber.
//
// Removing a citation never leaves one behind: text that closes up into a new keyword citation ("[source [source
// 9]1]") is cleaned again, and nesting deeper than a few levels has its keyword defused to "src". A markdown "[1]"
// followed by "(" gets a space, so that it does not read as a link.
//
// When a list is appended and the text ends inside an unclosed code fence, the fence is closed first so the list
// does not render as code. No list is appended when nothing was cited.
package cite

import (
	"slices"
	"strconv"
	"strings"
)

// Source is a numbered reference as it was shown to the model.
type Source struct {
	Number     int
	Title, URI string
}

// Style says how reference numbers are written in the answer.
type Style string

const (
	// StyleMarkdown writes "[1]" and appends a "Sources:" list. An empty or unknown Style means this too.
	StyleMarkdown Style = "markdown"
	// StyleSup writes "<sup>1</sup>" and appends a numbered "Sources:" list.
	StyleSup Style = "sup"
	// StyleNone removes citations and appends nothing.
	StyleNone Style = "none"
	// StyleKeyword writes "[source 1, 2]" with reference numbers and appends nothing.
	StyleKeyword Style = "source"
)

// Ref is a cited document. Number is its reference number k (1, 2, ... in order of first citation).
type Ref struct {
	Number     int
	Title, URI string
	// Sources are all the source numbers that name this document, ascending: two sources with the same URI (or,
	// without a URI, the same title) are one document.
	Sources []int
}

// Render rewrites the citations in text as described in the package documentation and returns the new text and
// the cited documents in reference-number order (nil when nothing was cited). Whatever the style, the returned text
// holds no keyword citation ("[source N]" and the like) outside code but those StyleKeyword writes.
func Render(text string, sources []Source, style Style) (string, []Ref) {
	style = normalStyle(style)
	body, fence, refs := renderBody(text, newIndex(sources), style)
	if style == StyleNone || style == StyleKeyword || len(refs) == 0 {
		return body, refs
	}

	var b strings.Builder
	b.WriteString(strings.TrimRight(body, " \t\r\n"))
	if fence != "" {
		b.WriteString("\n")
		b.WriteString(fence)
	}
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("Sources:")
	for _, r := range refs {
		b.WriteString("\n")
		b.WriteString(listLine(r, style))
	}
	return b.String(), refs
}

// listLine is one line of the appended list. Titles and URIs come from tools, so the line is flattened to one line
// and stripped of anything that would read as a citation.
// Renderer renders the bodies of many texts against one set of sources, building its index once: what a streamed
// answer needs, rendered again as each piece arrives. It is not safe for concurrent use.
type Renderer struct {
	style Style
	idx   *index
}

// NewRenderer returns a Renderer for sources in style.
func NewRenderer(sources []Source, style Style) *Renderer {
	return &Renderer{style: normalStyle(style), idx: newIndex(sources)}
}

// Body renders text as Render does, without the list of sources: what a stream of the answer shows while it is
// being written. Numbers are given in order of first citation, so the Body of a prefix of an answer is, but for its
// last citation group and trailing white space, a prefix of the Body of the whole answer.
func (r *Renderer) Body(text string) string {
	r.idx.reset()
	body, _, _ := renderBody(text, r.idx, r.style)
	return body
}

func normalStyle(style Style) Style {
	if style != StyleSup && style != StyleNone && style != StyleKeyword {
		return StyleMarkdown
	}
	return style
}

func renderBody(text string, idx *index, style Style) (body, fence string, refs []Ref) {
	if style == StyleKeyword {
		text = strings.NewReplacer(keywordOpen, "", keywordClose, "").Replace(text)
	}
	s := newScanner(text, idx.known)
	body = render(s.scan(), idx.cite, style)
	body, fence = strip(body, false)
	if style == StyleKeyword {
		body = unsentinel(body)
	}
	for _, d := range idx.cited {
		refs = append(refs, Ref{Number: d.k, Title: d.title, URI: d.uri, Sources: slices.Clone(d.sources)})
	}
	return body, fence, refs
}

func listLine(r Ref, style Style) string {
	title := strings.Join(strings.Fields(r.Title), " ")
	uri := strings.Join(strings.Fields(r.URI), " ")
	var desc string
	switch {
	case title != "" && uri != "":
		desc = title + " — " + uri
	case title != "":
		desc = title
	case uri != "":
		desc = uri
	default:
		desc = "untitled source"
	}
	num := strconv.Itoa(r.Number)
	line := "[" + num + "] " + desc
	if style == StyleSup {
		line = num + ". " + desc
	}
	line, _ = strip(line, true)
	return line
}

// doc is one document: the sources that share a URI (or, without one, a title).
type doc struct {
	title, uri string
	sources    []int
	k          int // reference number; 0 until first cited
}

// index maps source numbers to documents and hands out reference numbers in order of first citation.
type index struct {
	byNumber map[int]*doc
	cited    []*doc
}

func newIndex(sources []Source) *index {
	idx := &index{byNumber: make(map[int]*doc, len(sources))}
	byKey := make(map[string]*doc)
	for _, s := range sources {
		if _, dup := idx.byNumber[s.Number]; dup {
			continue // the first source with a number wins
		}
		var key string
		switch {
		case s.URI != "":
			key = "uri\x00" + s.URI
		case s.Title != "":
			key = "title\x00" + s.Title
		}
		d := byKey[key]
		if d == nil || key == "" {
			d = &doc{uri: s.URI}
			if key != "" {
				byKey[key] = d
			}
		}
		if d.title == "" {
			d.title = s.Title
		}
		d.sources = append(d.sources, s.Number)
		idx.byNumber[s.Number] = d
	}
	for _, d := range idx.byNumber {
		slices.Sort(d.sources) // each doc is reached once per source; sorting twice is harmless
	}
	return idx
}

// reset forgets the reference numbers given by a previous render.
func (idx *index) reset() {
	for _, d := range idx.cited {
		d.k = 0
	}
	idx.cited = idx.cited[:0]
}

func (idx *index) known(n int) bool {
	_, ok := idx.byNumber[n]
	return ok
}

// cite returns the reference numbers of the known numbers in nums, assigning new ones as needed.
func (idx *index) cite(nums []int) []int {
	var ks []int
	for _, n := range nums {
		d := idx.byNumber[n]
		if d == nil {
			continue
		}
		if d.k == 0 {
			idx.cited = append(idx.cited, d)
			d.k = len(idx.cited)
		}
		ks = append(ks, d.k)
	}
	return ks
}

// render writes tokens back as text, replacing each group of adjacent citations by its reference numbers in style,
// or removing it when it cites nothing (or style is StyleNone). refs maps cited source numbers to reference numbers.
func render(tokens []token, refs func([]int) []int, style Style) string {
	n := 0
	for _, t := range tokens {
		n += len(t.text)
	}
	out := make([]byte, 0, n+16)
	for i := 0; i < len(tokens); {
		t := tokens[i]
		if t.kind != tokCite {
			out = append(out, t.text...)
			i++
			continue
		}
		var ks []int
		for {
			for _, k := range refs(tokens[i].nums) {
				if !slices.Contains(ks, k) {
					ks = append(ks, k)
				}
			}
			i++
			if i < len(tokens) && tokens[i].kind == tokCite {
				continue
			}
			if i+1 < len(tokens) && tokens[i].kind == tokText && isHSpace(tokens[i].text) && tokens[i+1].kind == tokCite {
				i++
				continue
			}
			break
		}
		next := ""
		if i < len(tokens) {
			next = tokens[i].text
		}
		if len(ks) == 0 || style == StyleNone {
			nextText := ""
			if i < len(tokens) && tokens[i].kind == tokText {
				nextText = next
			} else if next != "" {
				nextText = "`" // code follows: neither space nor punctuation
			}
			var skip int
			out, skip = removeGap(out, nextText)
			if skip > 0 {
				tokens[i].text = next[skip:]
			}
			continue
		}
		out = appendGroup(out, ks, style)
		if style == StyleMarkdown && strings.HasPrefix(next, "(") {
			out = append(out, ' ') // "[1](" would read as a link
		}
	}
	return string(out)
}

// keywordOpen and keywordClose stand for the brackets of the citations StyleKeyword writes until the text has been
// stripped of every other keyword citation; they are private-use characters, removed from the input beforehand.
const (
	keywordOpen  = "\uE000"
	keywordClose = "\uE001"
)

// unsentinel writes the citations StyleKeyword marked as "[source ...]".
func unsentinel(text string) string {
	return strings.NewReplacer(keywordOpen, "[source ", keywordClose, "]").Replace(text)
}

// Renumber rewrites the citations of a StyleKeyword text, whose numbers n are 1..len(numbers), as "[source
// numbers[n-1]]": what a run does with the answer of a run nested in it once it has numbered that answer's
// references among its own sources. Citations of other numbers are removed.
func Renumber(text string, numbers []int) string {
	text = strings.NewReplacer(keywordOpen, "", keywordClose, "").Replace(text)
	s := newScanner(text, func(n int) bool { return n >= 1 && n <= len(numbers) })
	body := render(s.scan(), func(nums []int) []int {
		var out []int
		for _, n := range nums {
			if n >= 1 && n <= len(numbers) {
				out = append(out, numbers[n-1])
			}
		}
		return out
	}, StyleKeyword)
	body, _ = strip(body, false)
	return unsentinel(body)
}

func appendGroup(out []byte, ks []int, style Style) []byte {
	if style == StyleKeyword {
		out = append(out, keywordOpen...)
		for j, k := range ks {
			if j > 0 {
				out = append(out, ", "...)
			}
			out = strconv.AppendInt(out, int64(k), 10)
		}
		return append(out, keywordClose...)
	}
	if style == StyleSup {
		out = append(out, "<sup>"...)
		for j, k := range ks {
			if j > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendInt(out, int64(k), 10)
		}
		return append(out, "</sup>"...)
	}
	for _, k := range ks {
		out = append(out, '[')
		out = strconv.AppendInt(out, int64(k), 10)
		out = append(out, ']')
	}
	return out
}

// removeGap tidies the text around a removed citation: out is the text before it and next the text of the token
// after it. It returns the new out and how many bytes of next to drop.
func removeGap(out []byte, next string) ([]byte, int) {
	skip := 0
	for {
		switch {
		case next[skip:] == "" || next[skip] == '\n' || next[skip] == '\r' || startsWithClosingPunct(next[skip:]):
			// "word [source 9]." → "word."; "see ([source 9])" → "see"
			out = trimHSpace(out)
			if len(out) > 0 && out[len(out)-1] == '(' && strings.HasPrefix(next[skip:], ")") {
				out = out[:len(out)-1]
				skip++
				continue
			}
		case isHSpaceByte(next[skip]):
			// "word [source 9] next" → "word next"; a removed citation at the start of a line takes its space along
			if len(out) == 0 || out[len(out)-1] == '\n' || isHSpaceByte(out[len(out)-1]) || out[len(out)-1] == '(' {
				for skip < len(next) && isHSpaceByte(next[skip]) {
					skip++
				}
				continue
			}
		}
		return out, skip
	}
}

func startsWithClosingPunct(s string) bool {
	if s == "" {
		return false
	}
	if strings.IndexByte(".,;:!?)]}", s[0]) >= 0 {
		return true
	}
	for _, p := range []string{"。", "、", "，", "！", "？", "…", "】", "）"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func trimHSpace(b []byte) []byte {
	for len(b) > 0 && isHSpaceByte(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isHSpaceByte(c byte) bool { return c == ' ' || c == '\t' }

func isHSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHSpaceByte(s[i]) {
			return false
		}
	}
	return s != ""
}

// maxStripPasses bounds the removal passes of strip; nesting deeper than this is defused in one more pass.
const maxStripPasses = 8

// strip removes keyword citations from text until none is left. Removing one can join the text around it into a
// new one ("[source [source 9]1]" becomes "[source 1]"), hence the passes. Past maxStripPasses (deliberately nested
// markers), the citations left are defused instead: their keyword becomes "src", which cannot join anything into
// a new keyword, so one pass is enough. plain disables code detection, for text that is not markdown. strip also
// returns the fence left open at the end of the text, if any.
func strip(text string, plain bool) (string, string) {
	for pass := 0; ; pass++ {
		s := newScanner(text, nil)
		s.plain = plain
		tokens := s.scan()
		if !slices.ContainsFunc(tokens, func(t token) bool { return t.kind == tokCite }) {
			return text, s.openFence
		}
		if pass < maxStripPasses {
			text = render(tokens, func([]int) []int { return nil }, StyleNone)
			continue
		}
		var b strings.Builder
		for _, t := range tokens {
			if t.kind == tokCite {
				p := skipHSpace(t.text, len(openerAt(t.text)))
				t.text = t.text[:p] + "src" + t.text[p+keyword(t.text, p):]
			}
			b.WriteString(t.text)
		}
		text = b.String()
	}
}

// openerAt returns the opening bracket text starts with.
func openerAt(text string) string {
	if strings.HasPrefix(text, "【") {
		return "【"
	}
	return text[:1]
}

// Strings renders the citations of several texts against one set of sources, numbering the documents across them
// in order of first citation, without lists of sources: the strings of a structured answer. It is not safe for
// concurrent use.
type Strings struct {
	style Style
	idx   *index
	refs  []Ref
}

// NewStrings returns a Strings for sources in style.
func NewStrings(sources []Source, style Style) *Strings {
	return &Strings{style: normalStyle(style), idx: newIndex(sources)}
}

// Render renders the citations of text, continuing the numbering of the texts rendered before.
func (s *Strings) Render(text string) string {
	body, _, refs := renderBody(text, s.idx, s.style)
	s.refs = refs
	return body
}

// Refs returns the documents cited so far, in reference-number order.
func (s *Strings) Refs() []Ref { return s.refs }

// Sentence is a sentence (or a line) of a text, and the known sources it cites, each once.
type Sentence struct {
	Text  string
	Cited []int
}

// Sentences splits text into sentences and lines, each with the known sources it cites. Citations that follow a
// sentence's end on its line ("It rains. [1] [2] Then ...") belong to that sentence; code is never split.
func Sentences(text string, sources []Source) []Sentence {
	idx := newIndex(sources)
	var out []Sentence
	var cur strings.Builder
	var cited []int
	ended := false // cur holds a whole sentence: only spaces and citations may still join it
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, Sentence{Text: t, Cited: cited})
		}
		cur.Reset()
		cited, ended = nil, false
	}
	for _, t := range newScanner(text, idx.known).scan() {
		switch t.kind {
		case tokCite:
			cur.WriteString(t.text)
			for _, n := range t.nums {
				if idx.known(n) && !slices.Contains(cited, n) {
					cited = append(cited, n)
				}
			}
			continue
		case tokCode:
			if ended {
				flush()
			}
			cur.WriteString(t.text)
			continue
		}
		for i := 0; i < len(t.text); i++ {
			c := t.text[i]
			if ended && !isHSpaceByte(c) {
				flush()
			}
			if c == '\n' {
				flush()
				continue
			}
			cur.WriteByte(c)
			if (c == '.' || c == '!' || c == '?') && (i+1 == len(t.text) || isHSpaceByte(t.text[i+1]) || t.text[i+1] == '\n') {
				ended = true
			}
		}
	}
	flush()
	return out
}

// Audit reports what text cites: the numbers its citations name that are no source's, in order, and the sources it
// cites that are known, each once.
func Audit(text string, sources []Source) (unknown, cited []int) {
	idx := newIndex(sources)
	seen := map[int]bool{}
	for _, t := range newScanner(text, idx.known).scan() {
		if t.kind != tokCite {
			continue
		}
		for _, n := range t.nums {
			switch {
			case seen[n]:
			case idx.known(n):
				cited = append(cited, n)
			default:
				unknown = append(unknown, n)
			}
			seen[n] = true
		}
	}
	return unknown, cited
}
