package console

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/browser"
)

// The page's markdown renderer, run in Chromium on hostile and pathological answers: what it makes holds only the
// elements and attributes it means to, links only to http(s), and every input renders at once, without deep
// recursion or regular expressions that backtrack without end (a render the harness' 10 s bound does not see end
// fails the test; each took seconds to minutes, or overflowed the stack, before).
func TestMarkdownRenderer(t *testing.T) {
	f := newFixture(t, nil)
	b := browser.Start(t)
	b.Visit(f.srv.URL + "/")
	b.WaitVisible("body")
	// Built in the page, so that a failure's message quotes the script, not 100 KB of spaces.
	const inputs = `[
		'# a' + ' '.repeat(10000) + 'b',
		'a' + ' '.repeat(10000) + 'b',
		' <sup>' + ' '.repeat(10000),
		'['.repeat(10000),
		' ['.repeat(5000),
		'>'.repeat(10000),
		'> '.repeat(5000) + 'deep',
		'[g](https://u/&#34;&#32;data-pwned=1)',
		"https://x[a](https://y/onmouseover=document.title='pwned'//)",
		'[x](javascript:alert(1)) [y](data:text/html,hi) <img src=x onerror=alert(1)>',
		'&#106;avascript: [z](https://ok.example/&quot;onclick=1) ` + "`<b>`" + ` **[a](https://b/)** _c_',
		'` + "```" + `js\n<script>alert(1)</script>\n` + "```" + `\n- [1] item\n1. two [2]\n> quote [source 1]',
		'# C# heading ##\n## ok ##',
		'https://' + '('.repeat(50000),
		' https://' + ')'.repeat(50000),
		'[a](https://' + '('.repeat(50000),
		'[a](https://x' + '(b)'.repeat(20000),
		'[a](https://x' + '((b)'.repeat(15000),
		'[a](https://(b)'.repeat(8000),
		'(https://a'.repeat(10000),
		'https://a' + '(b)'.repeat(20000) + ')'.repeat(20000),
		'https://a' + '.)'.repeat(25000),
		' [1]'.repeat(20000),
	]`
	var problems []string
	b.Eval(`(async (inputs) => {
		const md = await import('/md.js');
		const allowedTags = new Set(['A', 'SUP', 'CODE', 'PRE', 'STRONG', 'EM', 'P', 'UL', 'OL', 'LI', 'H1', 'H2', 'H3',
			'H4', 'H5', 'H6', 'BR', 'BLOCKQUOTE', 'HR']);
		const allowedAttrs = new Set(['href', 'title', 'class', 'target', 'rel', 'data-testid', 'data-ref', 'data-lang']);
		const refs = [{ number: 1, title: '\u00000\u0000" onclick="x', uri: 'https://doc.example/1' }];
		const out = [];
		for (const input of inputs) {
			let html;
			try { html = md.render(input, refs); } catch (e) { out.push('render threw on ' + input.slice(0, 40) + ': ' + e); continue; }
			const tpl = document.createElement('template');
			tpl.innerHTML = html;
			for (const el of tpl.content.querySelectorAll('*')) {
				if (!allowedTags.has(el.tagName)) out.push('element ' + el.tagName + ' from ' + input.slice(0, 40));
				for (const a of el.attributes) {
					if (!allowedAttrs.has(a.name)) out.push('attribute ' + a.name + ' from ' + input.slice(0, 40));
				}
				if (el.tagName === 'A' && !/^(https?:\/\/|#$)/.test(el.getAttribute('href') || '')) {
					out.push('href ' + el.getAttribute('href') + ' from ' + input.slice(0, 40));
				}
			}
		}
		return out;
	})(`+inputs+`)`, &problems)
	for _, p := range problems {
		t.Error(p)
	}
	var heading string
	b.Eval(`import('/md.js').then((md) => md.render('# C# heading ##\n# C#'))`, &heading)
	if heading != "<h2>C# heading</h2><h2>C#</h2>" {
		t.Errorf("headings render as %q", heading)
	}
	b.AssertNoErrors()
}

// Links whose URL holds parentheses, as CommonMark and GFM read them: balanced parentheses belong to the URL, of a
// link and of a bare URL; a bare URL's trailing ")" that closes nothing in it (nor its trailing punctuation) does
// not.
func TestMarkdownLinksWithParentheses(t *testing.T) {
	f := newFixture(t, nil)
	b := browser.Start(t)
	b.Visit(f.srv.URL + "/")
	b.WaitVisible("body")
	const wiki = "https://en.wikipedia.org/wiki/Go_(programming_language)"
	for _, c := range []struct{ in, href, after string }{
		{"[Go](" + wiki + ")", wiki, ""},
		{"Read " + wiki + " first.", wiki, " first."},
		{"(see https://example.com/a)", "https://example.com/a", ")"},
		{"(see " + wiki + ").", wiki, ")."},
		{"[n](https://x.example/a_(b_(c)))", "https://x.example/a_(b_(c))", ""},
		{"https://x.example/a_(b)c, then", "https://x.example/a_(b)c", ", then"},
		// What follows the closing parenthesis is not the URL's: a citation, emphasis.
		{"the docs (https://go.dev/doc)[1], ok", "https://go.dev/doc", ")[1], ok"},
		{"(https://go.dev/doc)**bold**", "https://go.dev/doc", ")bold"},
		{"(https://x.example/z);[2]", "https://x.example/z", ");[2]"},
	} {
		var got struct {
			Links []string
			After string
		}
		b.Eval(`import('/md.js').then((md) => { const d = document.createElement('div'); d.innerHTML = md.render(`+jsQuote(c.in)+`);
			const a = [...d.querySelectorAll('a')]; let after = '';
			for (let n = a[0]?.nextSibling; n; n = n.nextSibling) after += n.textContent;
			return { Links: a.map((x) => x.getAttribute('href')), After: after }; })`, &got)
		if len(got.Links) != 1 || got.Links[0] != c.href || got.After != c.after {
			t.Errorf("%q renders links %q followed by %q, want one to %q followed by %q", c.in, got.Links, got.After, c.href, c.after)
		}
	}
	b.AssertNoErrors()
}

// While an answer streams, a marker whose source is not known yet renders as a pending citation: styled, no link,
// no href; a marker of a known reference is a citation link, and a number beyond those that may be cited is text.
func TestMarkdownPendingCitations(t *testing.T) {
	f := newFixture(t, nil)
	b := browser.Start(t)
	b.Visit(f.srv.URL + "/")
	b.WaitVisible("body")
	var got struct {
		Links, Pending []string
		Anchors        int
		Text           string
	}
	b.Eval(`import('/md.js').then((md) => { const d = document.createElement('div');
		d.innerHTML = md.render('One [1], two [2], both <sup>1,2</sup>, three [3].', [{ number: 1, title: 'Doc', uri: 'https://doc.example/' }], 2);
		return { Links: [...d.querySelectorAll('a[data-testid="citation"]')].map((a) => a.dataset.ref),
			Pending: [...d.querySelectorAll('[data-testid="citation-pending"]')].map((p) => p.dataset.ref + (p.closest('a') || p.querySelector('a') || p.hasAttribute('href') ? ' linked' : '')),
			Anchors: d.querySelectorAll('a').length, Text: d.textContent }; })`, &got)
	if strings.Join(got.Links, ",") != "1,1" || strings.Join(got.Pending, ",") != "2,2" || got.Anchors != 2 {
		t.Errorf("citations %q, pending %q, %d anchors; want citations 1,1, pending 2,2 not linked, 2 anchors", got.Links, got.Pending, got.Anchors)
	}
	if !strings.HasSuffix(got.Text, "three [3].") {
		t.Errorf("the text reads %q, want [3] as text", got.Text)
	}
	b.AssertNoErrors()
}

// jsQuote quotes s as a JavaScript string literal.
func jsQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
