package cite

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testSources has two sources for one document (1 and 3 share a URI), one titled source without a URI and two
// sources that share only a title.
var testSources = []Source{
	{Number: 1, Title: "Alpha", URI: "https://a.example"},
	{Number: 2, Title: "Beta", URI: "https://b.example"},
	{Number: 3, Title: "Alpha, page 2", URI: "https://a.example"},
	{Number: 4, Title: "Gamma"},
	{Number: 5, URI: "https://e.example"},
	{Number: 6, Title: "Gamma"},
	{Number: 7},
}

func TestRenderForms(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"keyword", "Paris [source 2].", "Paris [1]."},
		{"no space", "Paris [source2].", "Paris [1]."},
		{"capitalised", "Paris [Source 2].", "Paris [1]."},
		{"upper case", "Paris [SOURCES 2].", "Paris [1]."},
		{"colon", "Paris [source: 2].", "Paris [1]."},
		{"hash", "Paris [source #2].", "Paris [1]."},
		{"plural list", "Paris [sources 2, 4].", "Paris [1][2]."},
		{"singular list", "Paris [source 2, 4].", "Paris [1][2]."},
		{"list without space", "Paris [source 2,4].", "Paris [1][2]."},
		{"list with and", "Paris [sources 2 and 4].", "Paris [1][2]."},
		{"list with semicolon and keyword", "Paris [source 2; source 4].", "Paris [1][2]."},
		{"range", "Paris [sources 4-5].", "Paris [1][2]."},
		{"en dash range", "Paris [sources 4–5].", "Paris [1][2]."},
		{"trailing text", "Paris [source 2, p. 4].", "Paris [1]."},
		{"adjacent", "Paris [source 2][source 4].", "Paris [1][2]."},
		{"adjacent with space", "Paris [source 2] [source 4].", "Paris [1][2]."},
		{"fullwidth", "Paris【source 2】.", "Paris[1]."},
		{"parenthesised", "Paris (source 2).", "Paris [1]."},
		{"parenthesised list", "Paris (sources 2, 4).", "Paris [1][2]."},
		{"bare", "Paris [2].", "Paris [1]."},
		{"bare list", "Paris [2, 4].", "Paris [1][2]."},
		{"bare fullwidth", "Paris 【2】.", "Paris [1]."},
		{"bare after keyword", "Paris [source 2][4].", "Paris [1][2]."},
		{"bare mixed with keyword later", "[4] then [source 2]", "[1] then [2]"},
		{"order of first citation", "A [source 4]. B [source 2]. C [source 4].", "A [1]. B [2]. C [1]."},
		{"same document collapses", "A [source 1][source 3].", "A [1]."},
		{"same document in a list", "A [sources 3, 1, 2].", "A [1][2]."},
		{"same title without URI", "A [source 4] B [source 6]", "A [1] B [1]"},
		{"repeated", "A [source 2][source 2] [2].", "A [1]."},

		{"unknown removed before period", "A claim [source 9].", "A claim."},
		{"unknown removed mid sentence", "A claim [source 9] goes on.", "A claim goes on."},
		{"unknown removed without space", "A claim[source 9] goes on.", "A claim goes on."},
		{"unknown removed at end", "A claim [source 9]", "A claim"},
		{"unknown removed at line end", "A claim [source 9]\nNext", "A claim\nNext"},
		{"unknown removed at line start", "[source 9] A claim", "A claim"},
		{"unknown in parentheses", "A claim ([source 9]).", "A claim."},
		{"unknown with known", "A claim [source 9, 2].", "A claim [1]."},
		{"unknown next to known", "A claim [source 9][source 2].", "A claim [1]."},
		{"huge number", "A claim [source 99999999999999999999].", "A claim."},
		{"huge range", "A [sources 1-99999].", "A [1]."},
		{"nested markers", "A [source [source 9]1] b", "A b"},

		{"bare unknown untouched", "see [9] and [2, 9]", "see [9] and [2, 9]"},
		{"bare zero untouched", "see [0]", "see [0]"},
		{"inline link untouched", "see [2](https://x) now", "see [2](https://x) now"},
		{"reference definition untouched", "see [2] now\n\n[2]: https://x", "see [2] now\n\n[2]: https://x"},
		{"reference link untouched", "see [text][2]\n\n[2]: https://x", "see [text][2]\n\n[2]: https://x"},
		{"reference label after bare", "see [2][docs]\n\n[docs]: https://x", "see [2][docs]\n\n[docs]: https://x"},
		{"collapsed reference untouched", "see [2][]", "see [2][]"},
		{"escaped untouched", `see \[2]`, `see \[2]`},
		{"bare colon mid line is a citation", "as [2]: yes", "as [1]: yes"},
		{"footnote untouched", "see [^2]", "see [^2]"},
		{"bare in parentheses untouched", "see (2)", "see (2)"},
		{"ranges are not bare", "see [2-4]", "see [2-4]"},
		{"not a keyword", "see [sourcecode 2] and [sourced 2]", "see [sourcecode 2] and [sourced 2]"},
		{"keyword without number", "see [source] and [source x]", "see [source] and [source x]"},
		{"unclosed", "see [source 2 and more", "see [source 2 and more"},
		{"markdown link text", "see [source code](https://x)", "see [source code](https://x)"},
		{"link after citation", "A [source 2](x)", "A [1] (x)"},

		{"inline code", "use `[source 2]` and `x[2]`", "use `[source 2]` and `x[2]`"},
		{"double backtick code", "use ``a ` [source 2]`` ok [source 2]", "use ``a ` [source 2]`` ok [1]"},
		{"unmatched backtick", "a ` b [source 2]", "a ` b [1]"},
		{"code span stops at blank line", "a ` b\n\n[source 2] `", "a ` b\n\n[1] `"},
		{"fenced code", "```\n[source 2] [2]\n```\nA [source 2].", "```\n[source 2] [2]\n```\nA [1]."},
		{"tilde fence", "~~~~\n[source 2]\n~~~\n~~~~\nA [source 2].", "~~~~\n[source 2]\n~~~\n~~~~\nA [1]."},
		{"indented fence in list", "- item\n  ```\n  [source 2]\n  ```\n- A [source 2]", "- item\n  ```\n  [source 2]\n  ```\n- A [1]"},
		{"one-line triple backticks are a span", "```x [source 2]``` A [source 2]", "```x [source 2]``` A [1]"},
		{"no citations", "plain text", "plain text"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := body(t, tt.in, StyleMarkdown)
			if got != tt.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// body renders in with testSources and returns the text without the appended list.
func body(t *testing.T, in string, style Style) string {
	t.Helper()
	out, refs := Render(in, testSources, style)
	if len(refs) == 0 {
		return out
	}
	i := strings.LastIndex(out, "\n\nSources:\n")
	if i < 0 {
		t.Fatalf("Render(%q) cited %d documents but appended no list:\n%s", in, len(refs), out)
	}
	return out[:i]
}

func TestRenderStyles(t *testing.T) {
	const in = "Alpha [source 1]. Beta and Gamma [source 2][source 4]. E [sources 5, 7], again [source 3]. Bad [source 8]."
	tests := []struct {
		style Style
		want  string
	}{
		{StyleMarkdown, "Alpha [1]. Beta and Gamma [2][3]. E [4][5], again [1]. Bad.\n\nSources:\n" +
			"[1] Alpha — https://a.example\n[2] Beta — https://b.example\n[3] Gamma\n[4] https://e.example\n[5] untitled source"},
		{"", "Alpha [1]. Beta and Gamma [2][3]. E [4][5], again [1]. Bad.\n\nSources:\n" +
			"[1] Alpha — https://a.example\n[2] Beta — https://b.example\n[3] Gamma\n[4] https://e.example\n[5] untitled source"},
		{StyleSup, "Alpha <sup>1</sup>. Beta and Gamma <sup>2,3</sup>. E <sup>4,5</sup>, again <sup>1</sup>. Bad.\n\nSources:\n" +
			"1. Alpha — https://a.example\n2. Beta — https://b.example\n3. Gamma\n4. https://e.example\n5. untitled source"},
		{StyleNone, "Alpha. Beta and Gamma. E, again. Bad."},
	}
	wantRefs := []Ref{
		{Number: 1, Title: "Alpha", URI: "https://a.example", Sources: []int{1, 3}},
		{Number: 2, Title: "Beta", URI: "https://b.example", Sources: []int{2}},
		{Number: 3, Title: "Gamma", Sources: []int{4, 6}},
		{Number: 4, URI: "https://e.example", Sources: []int{5}},
		{Number: 5, Sources: []int{7}},
	}
	for _, tt := range tests {
		t.Run(string(tt.style), func(t *testing.T) {
			got, refs := Render(in, testSources, tt.style)
			if got != tt.want {
				t.Errorf("text\n got %q\nwant %q", got, tt.want)
			}
			if !reflect.DeepEqual(refs, wantRefs) {
				t.Errorf("refs\n got %+v\nwant %+v", refs, wantRefs)
			}
		})
	}
}

func TestRenderList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		sources []Source
		style   Style
		want    string
	}{
		{
			name:    "trailing newlines trimmed before the list",
			in:      "A [source 1].\n\n\n",
			sources: []Source{{Number: 1, Title: "T", URI: "u"}},
			want:    "A [1].\n\nSources:\n[1] T — u",
		},
		{
			name:    "open fence closed before the list",
			in:      "A [source 1].\n```go\nx := 1",
			sources: []Source{{Number: 1, Title: "T"}},
			want:    "A [1].\n```go\nx := 1\n```\n\nSources:\n[1] T",
		},
		{
			name:    "open fence in a list item closed at its indentation",
			in:      "- A [source 1].\n  ```go\n  x := 1\n",
			sources: []Source{{Number: 1, Title: "T"}},
			style:   StyleSup,
			want:    "- A <sup>1</sup>.\n  ```go\n  x := 1\n  ```\n\nSources:\n1. T",
		},
		{
			name:    "open fence left alone without a list",
			in:      "A.\n```go\nx := 1",
			sources: []Source{{Number: 1, Title: "T"}},
			want:    "A.\n```go\nx := 1",
		},
		{
			name:    "title flattened and stripped of citations",
			in:      "A [source 1].",
			sources: []Source{{Number: 1, Title: "Two\nlines [source 3]  `[source 4]`", URI: "u"}},
			want:    "A [1].\n\nSources:\n[1] Two lines `` — u",
		},
		{
			name:    "first title of a document wins, later sources fill a missing one",
			in:      "[source 2] [source 1]",
			sources: []Source{{Number: 1, URI: "u"}, {Number: 2, Title: "Later", URI: "u"}},
			want:    "[1]\n\nSources:\n[1] Later — u",
		},
		{
			name:    "duplicate source number: first wins",
			in:      "A [source 1].",
			sources: []Source{{Number: 1, Title: "First"}, {Number: 1, Title: "Second"}},
			want:    "A [1].\n\nSources:\n[1] First",
		},
		{
			name:    "citation only",
			in:      "[source 1]",
			sources: []Source{{Number: 1, Title: "T"}},
			style:   StyleSup,
			want:    "<sup>1</sup>\n\nSources:\n1. T",
		},
		{
			name:  "empty sources: keyword markers removed, bare brackets kept",
			in:    "A [source 1], B [1] and C (source 2).",
			style: StyleMarkdown,
			want:  "A, B [1] and C.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Render(tt.in, tt.sources, tt.style)
			if got != tt.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRenderDeeplyNestedMarkers(t *testing.T) {
	const depth = 3 * maxStripPasses
	in := strings.Repeat("[source ", depth) + "9]" + strings.Repeat("1]", depth-1) + " end [source 2]"
	out, refs := Render(in, testSources, StyleMarkdown)
	if m := keywordMarker.FindString(out); m != "" {
		t.Fatalf("output keeps a citation %q:\n%s", m, out)
	}
	if len(refs) != 1 || !strings.Contains(out, "end [1]") {
		t.Errorf("the citation after the nest was lost: refs %+v\n%s", refs, out)
	}
}

func TestRenderRefsNilWhenNothingCited(t *testing.T) {
	for _, style := range []Style{StyleMarkdown, StyleSup, StyleNone} {
		out, refs := Render("No citations [source 9] here.", testSources, style)
		if refs != nil {
			t.Errorf("%s: refs = %+v, want nil", style, refs)
		}
		if out != "No citations here." {
			t.Errorf("%s: out = %q", style, out)
		}
	}
}

// keywordMarker matches the keyword citations the package promises to leave nowhere outside code. It is written
// independently of the scanner, from the documented grammar.
var keywordMarker = regexp.MustCompile(`` +
	`\[[ \t]{0,3}[sS][oO][uU][rR][cC][eE][sS]?[ \t]{0,3}[:#]?[ \t]{0,3}[0-9][^\[\]()【】\n]{0,150}\]|` +
	`\([ \t]{0,3}[sS][oO][uU][rR][cC][eE][sS]?[ \t]{0,3}[:#]?[ \t]{0,3}[0-9][^\[\]()【】\n]{0,150}\)|` +
	`【[ \t]{0,3}[sS][oO][uU][rR][cC][eE][sS]?[ \t]{0,3}[:#]?[ \t]{0,3}[0-9][^\[\]()【】\n]{0,150}】`)

func FuzzRender(f *testing.F) {
	f.Add("Paris [source 2]. Rome [source3][1, 4] (source 9) 【source 1】", 5, "Title", "https://x")
	f.Add("```\n[source 1]\n```\n`[2]` [source [source 9]1] [2](x) [3]: y", 3, "", "")
	f.Add("[sources 1-3; source 7, p. 4] ([source 8]) [^1] \\[1]", 8, "`[source 1]`", "u")
	f.Fuzz(func(t *testing.T, text string, n int, title, uri string) {
		n = n % 20
		var sources []Source
		for i := 0; i < n; i++ {
			s := Source{Number: i + 1, Title: title, URI: uri}
			if i%3 == 1 {
				s.URI = ""
			}
			if i%3 == 2 {
				s.Title, s.URI = "", ""
			}
			sources = append(sources, s)
		}
		for _, style := range []Style{StyleMarkdown, StyleSup, StyleNone} {
			out, refs := Render(text, sources, style)
			for _, tok := range newScanner(out, nil).scan() {
				if tok.kind == tokCite {
					t.Fatalf("%s: output keeps a citation %q:\n%q\n→ %q", style, tok.text, text, out)
				}
			}
			if !strings.ContainsAny(text, "`~") {
				if m := keywordMarker.FindString(out); m != "" {
					t.Fatalf("%s: output keeps a citation %q:\n%q\n→ %q", style, m, text, out)
				}
			}
			for i, r := range refs {
				if r.Number != i+1 || len(r.Sources) == 0 {
					t.Fatalf("%s: bad refs %+v", style, refs)
				}
			}
		}
	})
}

func TestKeywordStyle(t *testing.T) {
	sources := []Source{{Number: 4, Title: "A", URI: "https://a"}, {Number: 7, Title: "B", URI: "https://b"}, {Number: 9, URI: "https://a"}}
	text := "One [source 7]. Two [source 4][source 9]. Gone [source 12]. Code `[source 4]`. Odd \uE000x\uE001."
	got, refs := Render(text, sources, StyleKeyword)
	want := "One [source 1]. Two [source 2]. Gone. Code `[source 4]`. Odd x."
	if got != want {
		t.Errorf("Render =\n%q\nwant\n%q", got, want)
	}
	if len(refs) != 2 || refs[0].URI != "https://b" || refs[1].URI != "https://a" || !slices.Equal(refs[1].Sources, []int{4, 9}) {
		t.Errorf("refs = %+v", refs)
	}
}

func TestRenumber(t *testing.T) {
	tests := []struct {
		text    string
		numbers []int
		want    string
	}{
		{"A [source 1]. B [source 2, 1].", []int{5, 6}, "A [source 5]. B [source 6, 5]."},
		{"A [source 3] and [2].", []int{8, 9}, "A and [source 9]."},
		{"No citations.", []int{1}, "No citations."},
		{"Nested [source [source 2]1].", []int{3, 4}, "Nested [source [source 4]1]."},
		{"`[source 1]` stays", []int{2}, "`[source 1]` stays"},
	}
	for _, tt := range tests {
		if got := Renumber(tt.text, tt.numbers); got != tt.want {
			t.Errorf("Renumber(%q, %v) = %q, want %q", tt.text, tt.numbers, got, tt.want)
		}
	}
}

func TestSentences(t *testing.T) {
	sources := []Source{{Number: 1, Title: "a", URI: "https://a"}, {Number: 2, Title: "b", URI: "https://b"}}
	text := "Lyon is big [source 1]. It has a river. [source 2] [source 1] Paris is bigger! [source 9]\n" +
		"- a list item [source 2]\nPi is 3.14 [1].\n\n```\ncode. [source 2]\n```\nDone?"
	got := Sentences(text, sources)
	want := []Sentence{
		{"Lyon is big [source 1].", []int{1}},
		{"It has a river. [source 2] [source 1]", []int{2, 1}},
		{"Paris is bigger! [source 9]", nil},
		{"- a list item [source 2]", []int{2}},
		{"Pi is 3.14 [1].", []int{1}},
		{"```\ncode. [source 2]\n```", nil},
		{"Done?", nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sentences =\n%+v\nwant\n%+v", got, want)
	}
	if got := Sentences("", sources); got != nil {
		t.Errorf("Sentences of nothing = %+v", got)
	}
}

func TestAudit(t *testing.T) {
	sources := []Source{{Number: 1, Title: "a", URI: "https://a"}, {Number: 2, Title: "b", URI: "https://b"}}
	unknown, cited := Audit("One [source 1], two [source 2, 7], again [source 1] and [source 9]. `[source 8]` is code.", sources)
	if !slices.Equal(unknown, []int{7, 9}) || !slices.Equal(cited, []int{1, 2}) {
		t.Errorf("Audit = unknown %v, cited %v", unknown, cited)
	}
	if unknown, cited := Audit("No citations.", sources); unknown != nil || cited != nil {
		t.Errorf("Audit of a plain text = %v, %v", unknown, cited)
	}
}
