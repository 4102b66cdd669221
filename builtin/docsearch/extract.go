package docsearch

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// document is what the index keeps of a file: its title and its text.
type document struct {
	title, body string
}

var errBinary = errors.New("not text (a NUL byte or invalid UTF-8)")

// extract reads the title and text of a file: HTML by its elements, anything else as text whose title is a
// front-matter title or the first markdown heading. The file name is the title of last resort.
func extract(path string, data []byte) (document, error) {
	if bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 || !utf8.Valid(data) {
		return document{}, errBinary
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var doc document
	switch strings.ToLower(filepath.Ext(path)) {
	case ".html", ".htm", ".xhtml":
		doc = extractHTML(data)
	default:
		doc = document{title: markdownTitle(string(data)), body: string(data)}
	}
	doc.title = strings.Join(strings.Fields(doc.title), " ")
	if doc.title == "" {
		doc.title = name
	}
	return doc, nil
}

// markdownTitle is the title: of YAML front matter, else the first "# " heading.
func markdownTitle(text string) string {
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		if fm, _, ok := strings.Cut(rest, "\n---"); ok {
			for line := range strings.Lines(fm) {
				if v, ok := strings.CutPrefix(line, "title:"); ok {
					return strings.Trim(strings.TrimSpace(v), `"'`)
				}
			}
		}
	}
	for line := range strings.Lines(text) {
		if h, ok := strings.CutPrefix(line, "# "); ok {
			return strings.TrimSpace(h)
		}
	}
	return ""
}

// skipped are the elements whose text is not the document's.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Nav: true,
	atom.Header: true, atom.Footer: true, atom.Svg: true,
}

// extractHTML is the <title> (else the first <h1>) and the text of a page without its furniture.
func extractHTML(data []byte) document {
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return document{body: string(data)}
	}
	var title, h1 string
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.DataAtom == atom.Title:
				if title == "" {
					title = text(n)
				}
				return
			case skipped[n.DataAtom]:
				return
			case n.DataAtom == atom.H1 && h1 == "":
				h1 = text(n)
			}
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	if title == "" {
		title = h1
	}
	return document{title: title, body: strings.Join(strings.Fields(b.String()), " ")}
}

func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}
