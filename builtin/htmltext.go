package builtin

import (
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// markdownConverter turns cleaned HTML into markdown. It is built once and safe for concurrent use.
var markdownConverter = sync.OnceValue(func() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			// Links without text or target (icons, javascript:) and "<!--THE END-->" between lists are noise.
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithListEndComment(false),
		),
		// Aligned columns would pad every cell to the widest one of its column: characters the model pays for.
		table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal)),
	))
})

// droppedElements are page furniture and what cannot be read as text.
var droppedElements = map[atom.Atom]bool{
	atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Script: true, atom.Style: true,
	atom.Noscript: true, atom.Iframe: true, atom.Form: true, atom.Svg: true, atom.Template: true,
}

// droppedRoles are the ARIA roles of the same furniture built from generic elements.
var droppedRoles = map[string]bool{"navigation": true, "banner": true, "contentinfo": true}

const (
	// maxSpan is the largest colspan HTML allows, and the cap of rowspan too.
	maxSpan = 1000
	// maxTitleRunes bounds a title taken from the page.
	maxTitleRunes = 300
)

// htmlToMarkdown converts an HTML document to markdown and finds its title: the <title>, else the first heading.
// Page furniture (navigation, headers, footers, scripts, forms) is dropped, tables become markdown tables, and
// links and images are made absolute against base, the page's URL (which a <base href> refines). The output grows
// at most linearly with the input, whatever the input.
func htmlToMarkdown(src string, base *url.URL) (title, markdown string) {
	src = strings.ToValidUTF8(src, "\uFFFD")
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		// The parser refuses documents nested more than 512 elements deep; their text is still worth having.
		return plainText(src)
	}
	c := &cleaner{base: base, budget: len(src)}
	c.walk(doc, 0)
	if c.indented > len(src) {
		// Lists and blockquotes indent every line inside them, so deep ones around many short lines would
		// multiply the size of the text: such a document is written without them.
		for _, n := range c.lists {
			n.Data, n.DataAtom = "div", atom.Div
		}
	}
	out, err := markdownConverter().ConvertNode(doc)
	if err != nil {
		return plainText(src)
	}
	title = c.title
	if title == "" {
		title = c.heading
	}
	return title, strings.ToValidUTF8(string(out), "\uFFFD")
}

// cleaner prepares a parsed document for the converter.
type cleaner struct {
	base *url.URL
	// budget is how many bytes links may still grow by when made absolute: a long page URL times many short
	// relative links must not make a huge text.
	budget  int
	baseSet bool
	title   string
	heading string
	// tables is the stack of tables being walked, innermost last.
	tables []*tableShape
	// lists are the document's lists and blockquotes; indented is at most how many bytes of indentation they add.
	lists    []*html.Node
	indented int
}

// walk cleans the children of n, whose lines the lists and blockquotes around it indent by indent bytes.
func (c *cleaner) walk(n *html.Node, indent int) {
	var next *html.Node
	for child := n.FirstChild; child != nil; child = next {
		next = child.NextSibling
		if child.Type == html.TextNode {
			c.indented += indent * strings.Count(child.Data, "\n")
		}
		if child.Type != html.ElementNode {
			continue
		}
		if droppedElements[child.DataAtom] || droppedRoles[attr(child, "role")] {
			n.RemoveChild(child)
			continue
		}
		c.indented += indent // an element may start a line
		inner := indent
		var shape *tableShape
		switch child.DataAtom {
		case atom.Title:
			if c.title == "" {
				c.title = textOf(child)
			}
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			if c.heading == "" {
				c.heading = textOf(child)
			}
		case atom.Base:
			c.setBase(attr(child, "href"))
		case atom.A:
			c.absolutize(child, "href")
		case atom.Img:
			c.absolutize(child, "src")
		case atom.Ul, atom.Ol, atom.Blockquote:
			c.lists = append(c.lists, child)
			inner += prefixWidth(child)
		case atom.Table:
			shape = &tableShape{}
			if len(c.tables) > 0 {
				c.tables[len(c.tables)-1].nested = true
			}
			c.tables = append(c.tables, shape)
		case atom.Tr:
			if len(c.tables) > 0 {
				c.tables[len(c.tables)-1].rows++
			}
		case atom.Td, atom.Th:
			if len(c.tables) > 0 {
				c.tables[len(c.tables)-1].addCell(child)
			}
			// A table the converter cannot lay out is written row by row: keep its cells apart.
			if prev := child.PrevSibling; prev != nil && (prev.DataAtom == atom.Td || prev.DataAtom == atom.Th) {
				n.InsertBefore(&html.Node{Type: html.TextNode, Data: " "}, child)
			}
		}
		c.walk(child, inner)
		if shape != nil {
			c.tables = c.tables[:len(c.tables)-1]
			shape.fit(child)
		}
	}
}

// prefixWidth is how far a list or blockquote indents the lines inside it, at most: "> ", "- ", or the widest
// number of an ordered list, which the converter gives every item.
func prefixWidth(n *html.Node) int {
	if n.DataAtom != atom.Ol {
		return 2
	}
	start, err := strconv.Atoi(attr(n, "start"))
	if err != nil {
		start = 1
	}
	items := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		items++
	}
	return len(strconv.Itoa(start+items)) + 2
}

// setBase applies the document's <base href>; only the first counts.
func (c *cleaner) setBase(href string) {
	if c.baseSet || c.base == nil {
		return
	}
	c.baseSet = true
	if ref, err := url.Parse(strings.TrimSpace(href)); err == nil {
		if b := c.base.ResolveReference(ref); b.Scheme == "http" || b.Scheme == "https" {
			c.base = b
		}
	}
}

// absolutize makes the URL in n's attribute key absolute, while the budget lasts. javascript: links lead nowhere
// a reader can follow, so they lose their target.
func (c *cleaner) absolutize(n *html.Node, key string) {
	for i, a := range n.Attr {
		if a.Key != key || a.Namespace != "" {
			continue
		}
		ref, err := url.Parse(strings.TrimSpace(a.Val))
		switch {
		case err != nil || strings.TrimSpace(a.Val) == "": // no target: the converter writes the text alone
		case strings.EqualFold(ref.Scheme, "javascript"):
			n.Attr = append(n.Attr[:i], n.Attr[i+1:]...)
		case !ref.IsAbs() && c.base != nil:
			abs := c.base.ResolveReference(ref).String()
			if grow := len(abs) - len(a.Val); grow <= c.budget {
				n.Attr[i].Val = abs
				c.budget -= max(grow, 0)
			}
		}
		return
	}
}

// tableShape is what the table converter will make of a table: it pads every row to the widest one and repeats
// spanned cells, so a few bytes of ragged or spanned HTML could become megabytes of pipes.
type tableShape struct {
	rows   int
	cells  []tableCell
	nested bool // it holds a table, so the converter writes it row by row anyway
}

type tableCell struct {
	node             *html.Node
	row              int
	colspan, rowspan int
}

func (s *tableShape) addCell(n *html.Node) {
	s.cells = append(s.cells, tableCell{node: n, row: max(s.rows-1, 0), colspan: span(n, "colspan"),
		rowspan: span(n, "rowspan")})
}

// fit keeps table t a markdown table when its grid stays in proportion to its cells, spans clamped to the rows
// there are; otherwise t is marked as a layout table, which the converter writes row by row.
func (s *tableShape) fit(t *html.Node) {
	if s.nested || len(s.cells) == 0 {
		return
	}
	rows := max(s.rows, 1)
	own := make([]int, rows)
	carried := make([]int, rows+1) // differences: a rowspan widens the rows below
	for i := range s.cells {
		cell := &s.cells[i]
		cell.rowspan = min(cell.rowspan, rows-cell.row)
		own[cell.row] += cell.colspan
		if cell.rowspan > 1 {
			carried[cell.row+1] += cell.colspan
			carried[cell.row+cell.rowspan] -= cell.colspan
		}
	}
	width, carry := 0, 0
	for r := range rows {
		carry += carried[r]
		width = max(width, own[r]+carry)
	}
	// The header row the converter adds when the table has none is the +1.
	if (rows+1)*width > 8*len(s.cells)+64 {
		setAttr(t, "role", "presentation")
		return
	}
	// The converter reads the attributes again: give it the numbers counted here.
	for _, cell := range s.cells {
		if attr(cell.node, "colspan") != "" {
			setAttr(cell.node, "colspan", strconv.Itoa(cell.colspan))
		}
		if attr(cell.node, "rowspan") != "" {
			setAttr(cell.node, "rowspan", strconv.Itoa(cell.rowspan))
		}
	}
}

// span reads a colspan or rowspan as the table converter does, clamped to maxSpan.
func span(n *html.Node, key string) int {
	s := attr(n, key)
	if s == "" {
		return 1
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 1
	}
	return min(v, maxSpan)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

// textOf is the text inside n on one line.
func textOf(n *html.Node) string {
	var b strings.Builder
	var collect func(*html.Node)
	collect = func(n *html.Node) {
		for c := n.FirstChild; c != nil && b.Len() < 4*maxTitleRunes; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				b.WriteString(c.Data)
				b.WriteByte(' ')
			case html.ElementNode:
				collect(c)
			}
		}
	}
	collect(n)
	return oneLine(b.String())
}

// oneLine is s with its white space collapsed, cut to maxTitleRunes.
func oneLine(s string) string {
	return strings.TrimSpace(cutRunes(strings.Join(strings.Fields(s), " "), maxTitleRunes))
}

// cutRunes cuts s to at most n runes.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// blockElements end a paragraph in plainText.
var blockElements = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Br: true, atom.Li: true, atom.Tr: true, atom.Table: true, atom.Ul: true,
	atom.Ol: true, atom.Pre: true, atom.Blockquote: true, atom.Section: true, atom.Article: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// plainText is the text of a document the parser refused, a paragraph per block, read with the tokenizer, which
// keeps no stack.
func plainText(src string) (title, text string) {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	var inside atom.Atom // the element whose raw text is being read: title, or one whose text is skipped
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			var paras []string
			for p := range strings.SplitSeq(b.String(), "\n\n") {
				if p = strings.Join(strings.Fields(p), " "); p != "" {
					paras = append(paras, p)
				}
			}
			return title, strings.Join(paras, "\n\n")
		case html.StartTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Title || a == atom.Script || a == atom.Style || a == atom.Noscript || a == atom.Template:
				inside = 0
				if tt == html.StartTagToken {
					inside = a
				}
			case blockElements[a]:
				b.WriteString("\n\n")
			}
		case html.TextToken:
			switch inside {
			case 0:
				b.Write(z.Text())
			case atom.Title:
				if title == "" {
					title = oneLine(string(z.Text()))
				}
			}
		}
	}
}
