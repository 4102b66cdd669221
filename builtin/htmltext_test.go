package builtin

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// testBase is the URL the pages of these tests are fetched from.
var testBase, _ = url.Parse("https://example.com/guide/page.html?lang=en")

func TestHTMLTextConvert(t *testing.T) {
	tests := []struct {
		name, html      string
		wantTitle, want string
	}{
		{
			name: "page",
			html: `<!DOCTYPE html>
<html><head><title> Example
  Page </title><style>body { color: red }</style><script>var x = "<p>not text</p>";</script></head>
<body>
<header><a href="/">Site</a></header>
<nav><ul><li><a href="/menu">Menu</a></li></ul></nav>
<main>
<h1>Main heading</h1>
<p>First <strong>bold</strong> paragraph with a <a href="docs/intro.html">relative link</a>, a <a href="/root?q=a b">root
link</a>, an <a href="https://other.example/x">absolute link</a>, a <a href="#sec">fragment</a> and
<a href="javascript:void(0)">a script link</a>.</p>
<h2 id="sec">Section</h2>
<ul><li>one</li><li>two <a href="../up">up</a></li></ul>
<ol><li>first</li><li>second</li></ol>
<table><thead><tr><th>Name</th><th>Value</th></tr></thead>
<tbody><tr><td>a</td><td>1</td></tr><tr><td>b|c</td><td>2</td></tr></tbody></table>
<p><img src="img/pic.png" alt="A picture"></p>
<form><input name=q><button>Search</button></form>
<aside>Related stuff</aside>
<noscript>Enable JavaScript</noscript>
<iframe src="/ad"></iframe>
<svg><title>icon</title><text>drawn</text></svg>
<template><p>later</p></template>
<div role="navigation">Skip to content</div>
<div role="banner">Banner</div>
</main>
<div role="contentinfo">Contact</div>
<footer>Copyright</footer>
</body></html>`,
			wantTitle: "Example Page",
			want: "# Main heading\n\n" +
				"First **bold** paragraph with a [relative link](https://example.com/guide/docs/intro.html), a " +
				"[root link](https://example.com/root?q=a%20b), an [absolute link](https://other.example/x), a " +
				"[fragment](https://example.com/guide/page.html?lang=en#sec) and a script link.\n\n" +
				"## Section\n\n" +
				"- one\n- two [up](https://example.com/up)\n\n" +
				"1. first\n2. second\n\n" +
				"| Name | Value |\n|---|---|\n| a | 1 |\n| b\\|c | 2 |\n\n" +
				"![A picture](https://example.com/guide/img/pic.png)",
		},
		{
			name:      "title from the first heading",
			html:      `<header><h1>Site</h1></header><p>intro</p><h3>First <em>real</em>  heading</h3><h1>Big</h1>`,
			wantTitle: "First real heading",
			want:      "intro\n\n### First *real* heading\n\n# Big",
		},
		{
			name:      "long title",
			html:      "<title>" + strings.Repeat("ab ", 200) + "</title><p>x</p>",
			wantTitle: strings.TrimSpace(strings.Repeat("ab ", 100)),
			want:      "x",
		},
		{
			name: "base href",
			html: `<head><base href="https://cdn.example/assets/"><base href="/ignored/"></head>` +
				`<a href="x.html">x</a> <img src="/i.png" alt="i">`,
			want: "[x](https://cdn.example/assets/x.html) ![i](https://cdn.example/i.png)",
		},
		{
			name: "table with spans",
			html: `<table><tr><th colspan="2">Both</th><th>C</th></tr>` +
				`<tr><td rowspan="2">a</td><td>1</td><td>x</td></tr><tr><td>2</td><td>y</td></tr></table>`,
			want: "| Both |  | C |\n|---|---|---|\n| a | 1 | x |\n|  | 2 | y |",
		},
		{
			name: "spans beyond the table",
			html: `<table><tr><th>A</th><th>B</th></tr><tr><td rowspan="99999" colspan="2">a</td></tr></table>`,
			want: "| A | B |\n|---|---|\n| a |  |",
		},
		{
			name: "huge spans are written row by row",
			html: `<table><tr><td colspan="100000" rowspan="100000">x</td><td>y</td></tr></table>`,
			want: "x y",
		},
		{
			name: "ragged table is written row by row",
			html: "<table><tr>" + strings.Repeat("<td>h</td>", 40) + "</tr>" + strings.Repeat("<tr><td>r</td></tr>", 40) +
				"</table>",
			want: strings.TrimSpace(strings.Repeat("h ", 40)) + strings.Repeat("\n\nr", 40),
		},
		{
			name: "layout table keeps cells apart",
			html: `<table><tr><td>Left</td><td><table><tr><td>in</td><td>ner</td></tr></table></td></tr>` +
				`<tr><td>A</td><td>B</td></tr></table>`,
			want: "Left\n\n|  |  |\n|---|---|\n| in | ner |\n\nA B",
		},
		{
			name: "nested lists",
			html: `<ul><li>a<ol start="9"><li>b<ul><li>c</li></ul></li><li>d</li></ol></li><li>e</li></ul>` +
				`<blockquote><p>q</p><blockquote>qq</blockquote></blockquote>`,
			want: "- a\n  \n  09. b\n      \n      - c\n  10. d\n- e\n\n> q\n> \n> > qq",
		},
		{
			name: "lists around too many lines are written without them",
			html: strings.Repeat(`<ol start="99999"><li>`, 6) + "<pre>" + strings.Repeat("x\n", 200) + "</pre>",
			want: "```\n" + strings.Repeat("x\n", 200) + "```",
		},
		{
			name: "empty links",
			html: `<p><a href="/x"><img src="" alt=""></a><a href="">text</a> <a>anchor</a></p>`,
			want: "text anchor",
		},
		{
			name:      "too deep for the parser",
			html:      "<title>Deep</title><script>skip()</script>" + strings.Repeat("<div>", 600) + "<p>one</p><p>two  words</p>",
			wantTitle: "Deep",
			want:      "one\n\ntwo words",
		},
		{
			name: "invalid UTF-8",
			html: "<p>a\xffb\xc3</p>",
			want: "a\uFFFDb\uFFFD",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, md := htmlToMarkdown(tt.html, testBase)
			if title != tt.wantTitle {
				t.Errorf("title = %q, want %q", title, tt.wantTitle)
			}
			if md != tt.want {
				t.Errorf("markdown:\n%s\nwant:\n%s", md, tt.want)
			}
		})
	}
}

func TestHTMLTextLinkBudget(t *testing.T) {
	long, _ := url.Parse("https://example.com/" + strings.Repeat("p", 200) + "/page.html")
	src := strings.Repeat(`<a href="x">x</a> `, 100)
	_, md := htmlToMarkdown(src, long)
	abs := strings.Count(md, "(https://example.com/")
	// Each link grows by 220 bytes when made absolute; the budget is the size of the page, 1800 bytes.
	if abs != 8 || strings.Count(md, "[x](x)") != 92 {
		t.Errorf("%d absolute links in %s", abs, md)
	}
}

func FuzzHTMLToMarkdown(f *testing.F) {
	for _, seed := range []string{
		"",
		"<title>t</title><h1>h</h1><p>p <a href='../x'>x</a></p>",
		"<table><tr><th colspan=3>a<td rowspan=9>b<tr><td>c</table>",
		"<table><tr><td colspan=1000 rowspan=65534>x</table>",
		"<ul><li><ol start=99999><li><blockquote><ul><li>x</ul></blockquote></ol></ul>",
		"<pre><code>```\ncode\n```</code></pre>",
		"<a href='javascript:x'>j</a><img src='data:image/png;base64,AAAA'>",
		strings.Repeat("<div>", 600) + "deep",
		"<svg><title>s</title></svg><nav>n</nav><main>m</main>",
		"\xff\xfe<p>\x00</p>",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		title, md := htmlToMarkdown(src, testBase)
		if !utf8.ValidString(title) || !utf8.ValidString(md) {
			t.Fatalf("invalid UTF-8: title %q, markdown %q", title, md)
		}
		if utf8.RuneCountInString(title) > maxTitleRunes {
			t.Fatalf("title of %d runes", utf8.RuneCountInString(title))
		}
		if limit := 16*len(src) + 256; len(md) > limit {
			t.Fatalf("%d bytes of markdown from %d bytes of HTML (limit %d)", len(md), len(src), limit)
		}
	})
}
