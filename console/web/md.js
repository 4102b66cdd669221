// md.js: a small, safe markdown renderer for answers. Everything is HTML-escaped first; only the constructs below
// are then turned into markup: paragraphs, **bold**, *em*, `code`, fenced code blocks, lists, headings, quotes,
// links whose URL is http(s), and citations ([1], [1][2], <sup>1,2</sup>) as superscript links to the sources.

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

// stripSources cuts the "Sources:" list the host appends to an answer; the page lists the references itself.
export function stripSources(text, refs) {
  if (!refs || !refs.length) return text;
  const i = text.lastIndexOf('Sources:');
  if (i < 0 || (i > 0 && !/\n\s*$/.test(text.slice(0, i)))) return text;
  return text.slice(0, i).trimEnd();
}

// render returns the HTML of text. refs are the answer's references (number, title, uri), for citation titles.
export function render(text, refs = []) {
  const byNum = new Map(refs.map((r) => [r.number, r]));
  const lines = String(text || '').replace(/\u0000/g, '').replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let para = [], list = null, quote = [];
  const flushPara = () => { if (para.length) out.push('<p>' + inline(para.join('\n'), byNum) + '</p>'); para = []; };
  const flushList = () => { if (list) out.push(`<${list.tag}>` + list.items.map((it) => '<li>' + inline(it, byNum) + '</li>').join('') + `</${list.tag}>`); list = null; };
  const flushQuote = () => { if (quote.length) out.push('<blockquote>' + render(quote.join('\n'), refs) + '</blockquote>'); quote = []; };
  const flush = () => { flushPara(); flushList(); flushQuote(); };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      out.push('<pre class="code"' + (fence[2] ? ` data-lang="${esc(fence[2])}"` : '') + '><code>' + esc(body.join('\n')) + '</code></pre>');
      continue;
    }
    if (/^\s*$/.test(line)) { flush(); continue; }
    let m;
    if ((m = line.match(/^\s*>\s?(.*)$/))) { flushPara(); flushList(); quote.push(m[1]); continue; }
    flushQuote();
    if ((m = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/))) { flush(); const n = Math.min(m[1].length + 1, 6); out.push(`<h${n}>` + inline(m[2], byNum) + `</h${n}>`); continue; }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.push('<hr>'); continue; }
    if ((m = line.match(/^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/))) {
      flushPara();
      const tag = /\d/.test(m[1]) ? 'ol' : 'ul';
      if (!list || list.tag !== tag) { flushList(); list = { tag, items: [] }; }
      list.items.push(m[2]);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) { list.items[list.items.length - 1] += '\n' + line.trim(); continue; }
    flushList();
    para.push(line);
  }
  flush();
  return out.join('');
}

// inline renders the inline constructs of one block. Generated markup is parked in slots so that later rules
// never rewrite it.
function inline(src, byNum) {
  const slots = [];
  const park = (html) => '\u0000' + (slots.push(html) - 1) + '\u0000';
  let s = src.replace(/`([^`\n]+)`/g, (_, c) => park('<code>' + esc(c) + '</code>'));
  s = esc(s);
  const cite = (nums) => nums.map((n) => {
    const r = byNum.get(n);
    const title = r ? r.title || r.uri || '' : '';
    return '<sup class="cite"><a href="#" data-testid="citation" data-ref="' + n + '"' + (title ? ' title="' + esc(title) + '"' : '') + '>' + n + '</a></sup>';
  }).join('');
  s = s.replace(/[ \t]*&lt;sup&gt;\s*(\d+(?:\s*,\s*\d+)*)\s*&lt;\/sup&gt;/g, (_, ns) => park(cite(ns.split(',').map((x) => +x.trim()))));
  s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_, label, url) => park('<a href="' + url + '" target="_blank" rel="noopener noreferrer">' + label + '</a>'));
  s = s.replace(/[ \t]*\[(\d{1,4})\](?!\()/g, (_, n) => park(cite([+n])));
  s = s.replace(/(^|[\s(])(https?:\/\/[^\s<)]+[^\s<).,;:!?'"])/g, (_, pre, url) => pre + park('<a href="' + url + '" target="_blank" rel="noopener noreferrer">' + url + '</a>'));
  s = s.replace(/\*\*([^*\n]+?)\*\*|__([^_\n]+?)__/g, (_, a, b) => '<strong>' + (a || b) + '</strong>');
  s = s.replace(/(^|[^*\w])\*([^*\s][^*\n]*?)\*(?!\*)|(^|[^_\w])_([^_\s][^_\n]*?)_(?![_\w])/g, (_, p1, a, p2, b) => (p1 ?? p2 ?? '') + '<em>' + (a ?? b) + '</em>');
  s = s.replace(/\n/g, '<br>');
  while (s.includes('\u0000')) s = s.replace(/\u0000(\d+)\u0000/g, (_, i) => slots[+i]);
  return s;
}
