package console

import (
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
