package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML decoder keeps the position of each key to itself (MetaData offers no accessor for it, and the positions
// it keeps internally point at the end of multi-line strings), so the line of each key is found by the small
// scanner below. It runs only on documents the decoder accepted, never panics, and at worst misses a key: the
// error is then reported on the line of the nearest enclosing table, or without a line.

// keyLines maps each key of a TOML document, formatted as toml.Key.String, to the 1-based line where the key
// (or, for a table, its header) first appears. Tables implied by a dotted key or a header ("a" in [a.b]) get the
// line of their first mention. An element of an array of tables, whether a [[header]] section or an inline table
// in an array, is recorded with an indexPart after the array's key (serve.skills, indexPart(2), id), and so are
// the keys inside it; the other values inside arrays are not recorded.
func keyLines(src string) map[string]int {
	s := &lineScanner{src: src, lines: make(map[string]int), arrays: make(map[string]int)}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			s.newlines = append(s.newlines, i)
		}
	}
	s.document()
	return s.lines
}

type lineScanner struct {
	src      string
	i        int
	newlines []int // byte offsets of '\n'
	lines    map[string]int
	arrays   map[string]int // elements so far of each array of tables, by the toml.Key.String of its path
	headers  []tableHeader  // the table headers, in order
}

// tableHeader is a [header] or [[header]] of a document: its key and the byte offset of its "[".
type tableHeader struct {
	key    []string
	offset int
}

// tableHeaders returns the table headers of a TOML document the decoder accepted.
func tableHeaders(src string) []tableHeader {
	s := &lineScanner{src: src, lines: make(map[string]int), arrays: make(map[string]int)}
	s.document()
	return s.headers
}

func (s *lineScanner) eof() bool { return s.i >= len(s.src) }

func (s *lineScanner) peek(off int) byte {
	if s.i+off < len(s.src) {
		return s.src[s.i+off]
	}
	return 0
}

// lineAt returns the 1-based line of byte offset off.
func (s *lineScanner) lineAt(off int) int { return sort.SearchInts(s.newlines, off) + 1 }

// record gives path and each of its prefixes the line of off, unless they already have one.
func (s *lineScanner) record(path []string, off int) {
	line := s.lineAt(off)
	for n := 1; n <= len(path); n++ {
		k := toml.Key(path[:n]).String()
		if _, ok := s.lines[k]; !ok {
			s.lines[k] = line
		}
	}
}

func (s *lineScanner) document() {
	s.i = len(s.src) - len(strings.TrimPrefix(s.src, "\ufeff"))
	var table []string
	for {
		s.skipBlank(true)
		if s.eof() {
			return
		}
		start := s.i
		if s.peek(0) == '[' {
			s.i++
			array := s.peek(0) == '['
			if array {
				s.i++
			}
			key := s.key()
			s.headers = append(s.headers, tableHeader{key: key, offset: start})
			table = s.header(key, array)
			s.record(table, start)
		} else if key := s.key(); len(key) > 0 {
			s.skipSpace()
			if s.peek(0) == '=' {
				s.i++
				s.skipSpace()
				path := join(table, key)
				s.record(path, start)
				s.value(path, true)
			}
		}
		s.skipLine()
		if s.i == start {
			s.i++
		}
	}
}

// header turns the key of a table header into the table's path, in which each array of tables is followed by the
// indexPart of its last element. A [[header]] (array true) first adds an element to its array.
func (s *lineScanner) header(key []string, array bool) []string {
	path := make([]string, 0, len(key)+1)
	for i, part := range key {
		path = append(path, part)
		k := toml.Key(path).String()
		if array && i == len(key)-1 {
			s.arrays[k]++
		}
		if n := s.arrays[k]; n > 0 {
			path = append(path, indexPart(n))
		}
	}
	return path
}

// skipBlank skips spaces, tabs, comments and, when newlines is true, line breaks.
func (s *lineScanner) skipBlank(newlines bool) {
	for !s.eof() {
		switch s.src[s.i] {
		case ' ', '\t':
			s.i++
		case '\r', '\n':
			if !newlines {
				return
			}
			s.i++
		case '#':
			s.skipLine()
		default:
			return
		}
	}
}

func (s *lineScanner) skipSpace() {
	for !s.eof() && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
}

// skipLine moves to the next '\n' (not past it).
func (s *lineScanner) skipLine() {
	if j := strings.IndexByte(s.src[s.i:], '\n'); j >= 0 {
		s.i += j
	} else {
		s.i = len(s.src)
	}
}

// key reads a dotted key such as a."b c".d and returns its parts; nil when there is none.
func (s *lineScanner) key() []string {
	var parts []string
	for {
		s.skipSpace()
		part, ok := s.keyPart()
		if !ok {
			return parts
		}
		parts = append(parts, part)
		s.skipSpace()
		if s.peek(0) != '.' {
			return parts
		}
		s.i++
	}
}

func (s *lineScanner) keyPart() (string, bool) {
	switch s.peek(0) {
	case '"':
		s.i++
		start := s.i
		for !s.eof() && s.src[s.i] != '"' && s.src[s.i] != '\n' {
			if s.src[s.i] == '\\' {
				s.i++
			}
			s.i++
		}
		end := min(s.i, len(s.src))
		s.i = min(s.i+1, len(s.src))
		return unescapeBasic(s.src[start:end]), true
	case '\'':
		s.i++
		start := s.i
		for !s.eof() && s.src[s.i] != '\'' && s.src[s.i] != '\n' {
			s.i++
		}
		end := s.i
		s.i = min(s.i+1, len(s.src))
		return s.src[start:end], true
	}
	start := s.i
	for !s.eof() && !strings.ContainsRune(" \t\r\n=.[]{}#,\"'", rune(s.src[s.i])) {
		s.i++
	}
	return s.src[start:s.i], s.i > start
}

// value skips one value. When record is true it records the keys of an inline table under path, and each inline
// table in an array, with its keys, under path and the table's indexPart.
func (s *lineScanner) value(path []string, record bool) {
	switch {
	case strings.HasPrefix(s.src[s.i:], `"""`):
		s.multiline(`"""`, true)
	case strings.HasPrefix(s.src[s.i:], `'''`):
		s.multiline(`'''`, false)
	case s.peek(0) == '"' || s.peek(0) == '\'':
		s.keyPart() // a single-line string reads like a quoted key
	case s.peek(0) == '[':
		s.i++
		n := 0 // elements so far
		for {
			s.skipBlank(true)
			switch s.peek(0) {
			case 0:
				return
			case ']':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			start := s.i
			n++
			elem := join(path, []string{indexPart(n)})
			if record && s.peek(0) == '{' {
				s.record(elem, start)
			}
			s.value(elem, record)
			if s.i == start {
				s.i++
			}
		}
	case s.peek(0) == '{':
		s.i++
		for {
			s.skipBlank(true)
			switch s.peek(0) {
			case 0:
				return
			case '}':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			start := s.i
			if key := s.key(); len(key) > 0 {
				s.skipSpace()
				if s.peek(0) == '=' {
					s.i++
					s.skipSpace()
					sub := join(path, key)
					if record {
						s.record(sub, start)
					}
					s.value(sub, record)
				}
			}
			if s.i == start {
				s.i++
			}
		}
	default: // number, boolean or date-time: up to the next delimiter
		for !s.eof() && !strings.ContainsRune(",]}\n#", rune(s.src[s.i])) {
			s.i++
		}
	}
}

// multiline skips a multi-line string opened by delim at s.i.
func (s *lineScanner) multiline(delim string, escapes bool) {
	s.i += len(delim)
	for !s.eof() {
		if escapes && s.src[s.i] == '\\' {
			s.i += 2
			continue
		}
		if strings.HasPrefix(s.src[s.i:], delim) {
			s.i += len(delim)
			// A closing delimiter may be preceded by up to two quotes that belong to the string.
			for n := 0; n < 2 && !s.eof() && s.src[s.i] == delim[0]; n++ {
				s.i++
			}
			return
		}
		s.i++
	}
	s.i = len(s.src)
}

func join(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// unescapeBasic decodes the escapes of a TOML basic string. The decoder has already accepted the document, so an
// escape it does not know cannot occur; one is kept as it is.
func unescapeBasic(raw string) string {
	if !strings.Contains(raw, `\`) {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 == len(raw) {
			b.WriteByte(raw[i])
			continue
		}
		i++
		switch c := raw[i]; c {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case '"', '\\':
			b.WriteByte(c)
		case 'x', 'u', 'U':
			n := 2
			if c == 'u' {
				n = 4
			} else if c == 'U' {
				n = 8
			}
			if i+1+n <= len(raw) {
				if r, err := strconv.ParseUint(raw[i+1:i+1+n], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
