package cite

import (
	"strings"
)

type tokenKind int

const (
	tokText tokenKind = iota // prose, copied as it is
	tokCode                  // a code block or span, never touched
	tokCite                  // a citation
)

// token is a piece of the scanned text. Tokens never have empty text, and their texts concatenated give back the
// input.
type token struct {
	kind tokenKind
	text string
	nums []int // tokCite: the numbers as written, unknown ones included
}

// maxMarker bounds a keyword citation with trailing text ("[source 2, p. 4]"), so that a stray "[source 1" does not
// swallow a whole line.
const maxMarker = 200

// maxLabel is the longest markdown link label (CommonMark allows 999 characters).
const maxLabel = 999

// maxRange bounds the expansion of a range "[source 1-5]"; a longer range cites its two ends only.
const maxRange = 100

type scanner struct {
	text string
	// known reports whether a number is a source number; nil means none is, so no bare citation is recognised.
	known func(int) bool
	// plain disables code detection and markdown link rules, for text that is not markdown.
	plain bool
	// labels are the link reference labels defined in the text ("[3]: https://..."), normalised.
	labels map[string]bool

	tokens    []token
	textStart int
	// noSpanBefore[n] is where the last search for a closing run of n backticks gave up: a later search starting
	// before it would give up too. It keeps text full of stray backticks linear.
	noSpanBefore map[int]int
	// openFence is the fence of a code block still open at the end of the text with its indentation, e.g. "  ```".
	openFence string
}

func newScanner(text string, known func(int) bool) *scanner {
	return &scanner{text: text, known: known}
}

// scan splits the text into tokens.
func (s *scanner) scan() []token {
	if !s.plain && s.known != nil {
		s.labels = linkLabels(s.text)
	}
	text := s.text
	for i := 0; i < len(text); {
		if !s.plain && (i == 0 || text[i-1] == '\n') {
			if end, fence, closed := fencedBlock(text, i); end > i {
				s.emit(i, end, tokCode, nil)
				if !closed {
					s.openFence = fence
				}
				i = end
				continue
			}
		}
		c := text[i]
		switch {
		case c == '`' && !s.plain:
			n := runLen(text, i, '`')
			if end := s.codeSpan(i+n, n); end > 0 {
				s.emit(i, end, tokCode, nil)
				i = end
			} else {
				i += n // an unmatched run is literal text
			}
			continue
		case c == '[' || c == '(' || strings.HasPrefix(text[i:], "【"):
			if end, nums, ok := s.marker(i); ok {
				s.emit(i, end, tokCite, nums)
				i = end
				continue
			}
		}
		i++
	}
	if s.textStart < len(text) {
		s.tokens = append(s.tokens, token{kind: tokText, text: text[s.textStart:]})
	}
	return s.tokens
}

// emit flushes the pending text and adds a token for text[start:end].
func (s *scanner) emit(start, end int, kind tokenKind, nums []int) {
	if s.textStart < start {
		s.tokens = append(s.tokens, token{kind: tokText, text: s.text[s.textStart:start]})
	}
	s.tokens = append(s.tokens, token{kind: kind, text: s.text[start:end], nums: nums})
	s.textStart = end
}

// marker parses a citation starting with the bracket at i and returns where it ends and the numbers it cites.
func (s *scanner) marker(i int) (end int, nums []int, ok bool) {
	text := s.text
	var closer string
	pos := i + 1
	switch {
	case text[i] == '[':
		closer = "]"
	case text[i] == '(':
		closer = ")"
	default: // 【
		closer = "】"
		pos = i + len("【")
	}
	pos = skipHSpace(text, pos)
	if kw := keyword(text, pos); kw > 0 {
		pos = skipHSpace(text, pos+kw)
		if pos < len(text) && (text[pos] == ':' || text[pos] == '#') {
			pos = skipHSpace(text, pos+1)
		}
		nums, pos = numberList(text, pos, true)
		if len(nums) == 0 {
			return 0, nil, false
		}
		pos = skipHSpace(text, pos)
		if strings.HasPrefix(text[pos:], closer) {
			return pos + len(closer), nums, true
		}
		// trailing text: "[source 2, p. 4]"
		for j := pos; j < len(text) && j-i < maxMarker; j++ {
			if strings.HasPrefix(text[j:], closer) {
				return j + len(closer), nums, true
			}
			if text[j] == '\n' || strings.IndexByte("[]()", text[j]) >= 0 ||
				strings.HasPrefix(text[j:], "【") || strings.HasPrefix(text[j:], "】") {
				break
			}
		}
		return 0, nil, false
	}

	// a bare citation: "[3]", "[1, 2]", "【3】"
	if closer == ")" || s.known == nil {
		return 0, nil, false
	}
	nums, pos = numberList(text, pos, false)
	if len(nums) == 0 {
		return 0, nil, false
	}
	pos = skipHSpace(text, pos)
	if !strings.HasPrefix(text[pos:], closer) {
		return 0, nil, false
	}
	end = pos + len(closer)
	for _, n := range nums {
		if !s.known(n) {
			return 0, nil, false
		}
	}
	if closer == "]" && !s.plain && s.linkLike(i, end) {
		return 0, nil, false
	}
	return end, nums, true
}

// linkLike reports whether the bare bracket text[i:end] may be markdown link syntax rather than a citation.
func (s *scanner) linkLike(i, end int) bool {
	text := s.text
	if i > 0 && text[i-1] == '\\' {
		return true // escaped: "\[3]"
	}
	rest := text[end:]
	if strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, "[]") {
		return true // inline link "[3](...)", collapsed reference "[3][]"
	}
	if s.labels[normLabel(text[i+1:end-1])] {
		return true // "[3]" used as a link label defined elsewhere
	}
	if strings.HasPrefix(rest, "[") && len(s.labels) > 0 {
		label := rest[1:min(len(rest), maxLabel+1)]
		if j := strings.IndexAny(label, "]\n"); j > 0 && label[j] == ']' && s.labels[normLabel(label[:j])] {
			return true // full reference link "[3][label]"
		}
	}
	if strings.HasPrefix(rest, ":") {
		j := i
		for j > 0 && text[j-1] == ' ' && i-j < 3 {
			j--
		}
		if j == 0 || text[j-1] == '\n' {
			return true // a link reference definition "[3]: https://..."
		}
	}
	return false
}

// keyword returns the length of "source" or "sources" (any ASCII case) at pos, when it is a whole word.
func keyword(text string, pos int) int {
	const kw = "source"
	if len(text)-pos < len(kw) || !strings.EqualFold(text[pos:pos+len(kw)], kw) {
		return 0
	}
	n := len(kw)
	if pos+n < len(text) && (text[pos+n] == 's' || text[pos+n] == 'S') {
		n++
	}
	if pos+n < len(text) && isWordByte(text[pos+n]) && !isDigit(text[pos+n]) {
		return 0 // "sourcecode", "sourced"
	}
	return n
}

// numberList parses numbers separated by commas (and, in the keyword form, by ";", "&", "and", "、" or "，", with
// ranges and the keyword repeated). It returns the numbers and the position after the last one.
func numberList(text string, pos int, kwForm bool) ([]int, int) {
	n, p, ok := number(text, pos)
	if !ok {
		return nil, pos
	}
	var nums []int
	for {
		if hi, r, ok := rangeEnd(text, p); kwForm && ok {
			nums = appendRange(nums, n, hi)
			p = r
		} else {
			nums = append(nums, n)
		}
		q, ok := separator(text, p, kwForm)
		if !ok {
			return nums, p
		}
		if n, q, ok = number(text, q); !ok {
			return nums, p
		}
		p = q
	}
}

// rangeEnd parses the "-5" of "1-5" at p.
func rangeEnd(text string, p int) (int, int, bool) {
	q := skipHSpace(text, p)
	switch {
	case strings.HasPrefix(text[q:], "-"):
		q++
	case strings.HasPrefix(text[q:], "–"):
		q += len("–")
	default:
		return 0, p, false
	}
	return number(text, skipHSpace(text, q))
}

// separator parses what may stand between two numbers of a list, and returns where the next number should start.
func separator(text string, p int, kwForm bool) (int, bool) {
	q := skipHSpace(text, p)
	rest := text[q:]
	switch {
	case strings.HasPrefix(rest, ","):
		q++
	case !kwForm:
		return 0, false
	case strings.HasPrefix(rest, ";") || strings.HasPrefix(rest, "&"):
		q++
	case strings.HasPrefix(rest, "、") || strings.HasPrefix(rest, "，"):
		q += len("、")
	case len(rest) > 3 && strings.EqualFold(rest[:3], "and") && !isWordByte(rest[3]):
		q += 3
	default:
		return 0, false
	}
	q = skipHSpace(text, q)
	if kwForm {
		if kw := keyword(text, q); kw > 0 {
			q = skipHSpace(text, q+kw)
		}
	}
	return q, true
}

func appendRange(nums []int, lo, hi int) []int {
	if lo < 0 || hi < lo || hi-lo > maxRange {
		return append(nums, lo, hi)
	}
	for k := lo; k <= hi; k++ {
		nums = append(nums, k)
	}
	return nums
}

// number parses decimal digits at pos. A number too long to be a source number parses as -1, which no source has.
func number(text string, pos int) (n, end int, ok bool) {
	end = pos
	for end < len(text) && isDigit(text[end]) {
		end++
	}
	if end == pos {
		return 0, pos, false
	}
	digits := strings.TrimLeft(text[pos:end], "0")
	if len(digits) > 9 {
		return -1, end, true
	}
	for i := 0; i < len(digits); i++ {
		n = n*10 + int(digits[i]-'0')
	}
	return n, end, true
}

// fencedBlock recognises a fenced code block starting at the line at i. It returns the end of the block (i when
// there is none), the opening fence with its indentation (without the info string) and whether a closing fence was
// found.
func fencedBlock(text string, i int) (end int, fence string, closed bool) {
	p := skipIndent(text, i)
	if p >= len(text) || (text[p] != '`' && text[p] != '~') {
		return i, "", false
	}
	ch := text[p]
	n := runLen(text, p, ch)
	if n < 3 {
		return i, "", false
	}
	lineEnd := strings.IndexByte(text[p:], '\n')
	if lineEnd < 0 {
		lineEnd = len(text)
	} else {
		lineEnd += p
	}
	if ch == '`' && strings.IndexByte(text[p+n:lineEnd], '`') >= 0 {
		return i, "", false // "```x```" is an inline code span, not a fence
	}
	for ls := lineEnd + 1; ls < len(text); {
		le := strings.IndexByte(text[ls:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += ls
		}
		q := skipIndent(text, ls)
		if m := runLen(text, q, ch); m >= n && strings.TrimRight(text[q+m:le], " \t\r") == "" {
			return le, text[i : p+n], true
		}
		ls = le + 1
	}
	return len(text), text[i : p+n], false
}

// codeSpan returns the end of an inline code span opened by n backticks, its content starting at pos, or 0 when
// the span is not closed before a blank line or a fence.
func (s *scanner) codeSpan(pos, n int) int {
	if pos < s.noSpanBefore[n] {
		return 0
	}
	text := s.text
	j := pos
	for j < len(text) {
		switch c := text[j]; {
		case c == '`':
			m := runLen(text, j, '`')
			if m == n {
				return j + m
			}
			j += m
			continue
		case c == '\n':
			next := j + 1
			q := skipHSpace(text, next)
			if q >= len(text) || text[q] == '\n' || text[q] == '\r' {
				break // blank line: the paragraph ends
			}
			if end, _, _ := fencedBlock(text, next); end > next {
				break
			}
			j++
			continue
		default:
			j++
			continue
		}
		break
	}
	if s.noSpanBefore == nil {
		s.noSpanBefore = make(map[int]int)
	}
	s.noSpanBefore[n] = j
	return 0
}

// linkLabels returns the labels of link reference definitions ("[label]: destination" at the start of a line).
func linkLabels(text string) map[string]bool {
	var labels map[string]bool
	for line := range strings.Lines(text) {
		p := 0
		for p < len(line) && p < 3 && line[p] == ' ' {
			p++
		}
		if p >= len(line) || line[p] != '[' {
			continue
		}
		j := strings.Index(line[p:], "]:")
		if j <= 1 {
			continue
		}
		if labels == nil {
			labels = make(map[string]bool)
		}
		labels[normLabel(line[p+1:p+j])] = true
	}
	return labels
}

func normLabel(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// skipIndent skips spaces, tabs and blockquote markers, so that fences inside list items and quotes are found.
func skipIndent(text string, p int) int {
	for p < len(text) && (text[p] == ' ' || text[p] == '\t' || text[p] == '>') {
		p++
	}
	return p
}

func skipHSpace(text string, p int) int {
	for p < len(text) && isHSpaceByte(text[p]) {
		p++
	}
	return p
}

func runLen(text string, p int, c byte) int {
	n := 0
	for p+n < len(text) && text[p+n] == c {
		n++
	}
	return n
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c >= 0x80
}
