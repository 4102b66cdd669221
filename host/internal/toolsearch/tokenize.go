package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Tokens are the terms of a text: Terms[:Primary] in text order, then the joined forms of split words
// ("GitHub" gives "git", "hub", then "github"), which count for matching but not for phrases.
type Tokens struct {
	Terms   []string
	Primary int
}

// stemmer stems words, remembering what it did when memo is not nil: an index build stems the same words many times.
type stemmer struct {
	memo map[string]string
}

func (s *stemmer) stem(w string) string {
	if s.memo != nil {
		if t, ok := s.memo[w]; ok {
			return t
		}
	}
	t := w
	if len(w) > 2 && isASCIILetters(w) {
		t = english.Stem(w, false)
	}
	if s.memo != nil {
		s.memo[w] = t
	}
	return t
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// Tokenize splits s into stemmed terms: lower-cased, split on anything that is not a letter or a digit (so on "_",
// "-", "." and spaces), on camelCase and on letter/digit boundaries; English stop words and single letters dropped.
func Tokenize(s string) Tokens {
	var st stemmer
	return st.tokenize(s, Tokens{})
}

func (st *stemmer) tokenize(s string, into Tokens) Tokens {
	terms := into.Terms[:0]
	var joined []string
	var parts [16]string
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		start := i
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !isWordRune(r) {
				break
			}
			i += size
		}
		word := s[start:i]
		split := splitWord(word, parts[:0])
		for _, p := range split {
			if t, ok := st.term(p); ok {
				terms = append(terms, t)
			}
		}
		if len(split) > 1 {
			if t, ok := st.term(word); ok {
				joined = append(joined, t)
			}
		}
	}
	primary := len(terms)
	terms = append(terms, joined...)
	return Tokens{Terms: terms, Primary: primary}
}

// term is the term of one word, or false for a stop word or a single letter.
func (st *stemmer) term(w string) (string, bool) {
	lw := lower(w)
	if len(lw) == 1 && (lw[0] < '0' || lw[0] > '9') {
		return "", false
	}
	if english.IsStopWord(lw) {
		return "", false
	}
	return st.stem(lw), true
}

func lower(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
			return strings.ToLower(w)
		}
	}
	return w
}

func isWordRune(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
		r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

type runeKind int8

const (
	kindLower runeKind = iota
	kindUpper
	kindDigit
)

func kindOf(r rune) runeKind {
	switch {
	case unicode.IsDigit(r):
		return kindDigit
	case unicode.IsUpper(r):
		return kindUpper
	}
	return kindLower
}

// splitWord splits a run of letters and digits at camelCase ("getIssue", "HTTPServer") and letter/digit boundaries.
func splitWord(w string, out []string) []string {
	start := 0
	var prev runeKind = -1
	prevAt := 0
	for i, r := range w {
		k := kindOf(r)
		if i > start {
			cut := -1
			switch {
			case (prev == kindDigit) != (k == kindDigit):
				cut = i
			case prev == kindLower && k == kindUpper:
				cut = i
			case prev == kindUpper && k == kindLower && prevAt > start:
				cut = prevAt // "HTTPServer": the "S" starts the next part
			}
			if cut > start {
				out = append(out, w[start:cut])
				start = cut
			}
		}
		prev, prevAt = k, i
	}
	return append(out, w[start:])
}
