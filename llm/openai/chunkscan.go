package openai

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanChunk decodes data into c without reflection. It handles the shapes servers send, and reports false for
// anything else (invalid JSON, a type it does not expect, a key that matches a member only case-insensitively,
// invalid UTF-8), which decodeChunk then hands to encoding/json. When it reports true, c is what encoding/json
// would have decoded; FuzzScanChunk checks this.
//
// Decoding a chunk is on the path of every streamed token, and encoding/json spends most of its time there on
// reflection and on validating the input twice.
func scanChunk(data []byte, c *chunk) bool {
	s := &scanner{b: data}
	ok := s.object(chunkKeys, func(key string) bool {
		switch key {
		case "model":
			return s.stringInto(&c.Model)
		case "choices":
			return array(s, &c.Choices, s.choice)
		case "usage":
			if s.null() {
				c.Usage = nil
				return true
			}
			c.Usage = new(usage)
			u := c.Usage
			return s.object(usageKeys, func(key string) bool {
				switch key {
				case "prompt_tokens":
					return s.intInto(&u.PromptTokens)
				case "completion_tokens":
					return s.intInto(&u.CompletionTokens)
				default:
					return s.intInto(&u.TotalTokens)
				}
			})
		default: // "error"
			raw, ok := s.value()
			if ok {
				c.Error = append(c.Error[:0], raw...)
			}
			return ok
		}
	})
	s.space()
	return ok && s.i == len(s.b)
}

// The members each object of a chunk has that this package reads; all others are skipped.
var (
	chunkKeys    = []string{"model", "choices", "usage", "error"}
	usageKeys    = []string{"prompt_tokens", "completion_tokens", "total_tokens"}
	choiceKeys   = []string{"index", "finish_reason", "delta"}
	deltaKeys    = []string{"content", "refusal", "tool_calls"}
	toolCallKeys = []string{"index", "id", "function"}
	functionKeys = []string{"name", "arguments"}
)

func (s *scanner) choice(ch *chunkChoice) bool {
	return s.object(choiceKeys, func(key string) bool {
		switch key {
		case "index":
			return s.intInto(&ch.Index)
		case "finish_reason":
			return s.stringInto(&ch.FinishReason)
		default: // "delta"
			if s.null() {
				return true
			}
			d := &ch.Delta
			return s.object(deltaKeys, func(key string) bool {
				switch key {
				case "content":
					return s.stringInto(&d.Content)
				case "refusal":
					return s.stringInto(&d.Refusal)
				default: // "tool_calls"
					return array(s, &d.ToolCalls, s.toolCall)
				}
			})
		}
	})
}

func (s *scanner) toolCall(tc *chunkToolCall) bool {
	return s.object(toolCallKeys, func(key string) bool {
		switch key {
		case "index":
			return s.intInto(&tc.Index)
		case "id":
			return s.stringInto(&tc.ID)
		default: // "function"
			if s.null() {
				return true
			}
			f := &tc.Function
			return s.object(functionKeys, func(key string) bool {
				if key == "name" {
					return s.stringInto(&f.Name)
				}
				raw, ok := s.value() // "arguments"
				if !ok {
					return false
				}
				return f.Arguments.UnmarshalJSON(raw) == nil
			})
		}
	})
}

// scanner reads JSON from b, from position i. Each method reports false when the input is not what it expects.
type scanner struct {
	b     []byte
	i     int
	depth int // of nested objects and arrays
}

// maxDepth bounds nesting; deeper input is left to encoding/json, which has a bound of its own.
const maxDepth = 100

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) literal(lit string) bool {
	if s.peek() == lit[0] && bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// null consumes a null, if that is what comes next.
func (s *scanner) null() bool { return s.literal("null") }

// object reads an object. For each key among known it calls member with the scanner at the start of the key's
// value, which member must consume; the values of other keys are skipped.
//
// Input that encoding/json would decode differently is not handled here: a key that matches one of known only
// when case is ignored (encoding/json would decode it), and a known key that comes twice (encoding/json decodes both,
// the second into what the first left).
func (s *scanner) object(known []string, member func(key string) bool) bool {
	if s.peek() != '{' || s.depth >= maxDepth {
		return false
	}
	s.i++
	s.depth++
	defer func() { s.depth-- }()
	if s.peek() == '}' {
		s.i++
		return true
	}
	var seen uint64 // bit i: known[i] was read
	for {
		if s.peek() != '"' {
			return false
		}
		key, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		switch i := knownKey(known, key); {
		case i >= 0:
			if seen&(1<<i) != 0 || !member(known[i]) {
				return false
			}
			seen |= 1 << i
		case i == foldedKey:
			return false
		default:
			if _, ok := s.value(); !ok {
				return false
			}
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// foldedKey is what knownKey returns for a key that matches a known one only when case is ignored.
const foldedKey = -2

// knownKey returns the index of key in known, foldedKey, or -1 for a key that is none of them.
func knownKey(known []string, key []byte) int {
	for i, k := range known {
		if string(key) == k {
			return i
		}
	}
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return foldedKey
		}
	}
	return -1
}

// array reads null or an array of objects into *dst, as encoding/json would: null leaves *dst nil, [] makes it
// empty. Null elements are not expected.
func array[T any](s *scanner, dst *[]T, elem func(*T) bool) bool {
	if s.null() {
		*dst = nil
		return true
	}
	if s.peek() != '[' {
		return false
	}
	s.i++
	out := make([]T, 0, 1)
	if s.peek() == ']' {
		s.i++
		*dst = out
		return true
	}
	for {
		if s.peek() != '{' {
			return false
		}
		out = append(out, *new(T))
		if !elem(&out[len(out)-1]) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			*dst = out
			return true
		default:
			return false
		}
	}
}

// stringInto reads a string or null into *dst; null leaves *dst as it is.
func (s *scanner) stringInto(dst *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	v, ok := s.str()
	if ok {
		*dst = string(v)
	}
	return ok
}

// intInto reads an integer or null into *dst; null leaves *dst as it is.
func (s *scanner) intInto(dst *int64) bool {
	if s.null() {
		return true
	}
	start := s.i
	if !s.number() {
		return false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		return false // a fraction, an exponent or out of range: encoding/json has its own way with them
	}
	*dst = n
	return true
}

// value skips any JSON value and returns its text.
func (s *scanner) value() ([]byte, bool) {
	c := s.peek()
	start := s.i
	switch {
	case c == '"':
		if _, ok := s.str(); !ok {
			return nil, false
		}
	case c == '{':
		if !s.object(nil, nil) {
			return nil, false
		}
	case c == '[':
		if s.depth >= maxDepth {
			return nil, false
		}
		s.i++
		s.depth++
		defer func() { s.depth-- }()
		if s.peek() == ']' {
			s.i++
			break
		}
		for {
			if _, ok := s.value(); !ok {
				return nil, false
			}
			if c := s.peek(); c == ',' {
				s.i++
				continue
			} else if c == ']' {
				s.i++
				break
			}
			return nil, false
		}
	case c == '-' || ('0' <= c && c <= '9'):
		if !s.number() {
			return nil, false
		}
	case c == 't' || c == 'f' || c == 'n':
		if !s.literal("true") && !s.literal("false") && !s.literal("null") {
			return nil, false
		}
	default:
		return nil, false
	}
	return s.b[start:s.i], true
}

// number reads a number as JSON's grammar has it.
func (s *scanner) number() bool {
	s.space()
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return true
}

// str reads a string at s.i (which is at its opening quote) and returns it unescaped. Without escapes the result
// is a slice of the input.
func (s *scanner) str() ([]byte, bool) {
	b := s.b
	i := s.i + 1
	start := i
	// The common case: no escapes, plain ASCII or valid UTF-8.
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	if i >= len(b) {
		return nil, false
	}
	if b[i] == '"' {
		if !utf8.Valid(b[start:i]) {
			return nil, false // encoding/json replaces invalid bytes; leave that to it
		}
		s.i = i + 1
		return b[start:i], true
	}
	out := append(make([]byte, 0, i-start+16), b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return nil, false
			}
			s.i = i + 1
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return nil, false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i+2)
			if !ok {
				return nil, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A pair, or a lone half that encoding/json turns into U+FFFD.
				r2, ok := rune(-1), false
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					r2, ok = hex4(b, i+2)
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return nil, false
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
