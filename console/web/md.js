// md.js: a small, safe markdown renderer for answers. Only the constructs below become markup, everything else is
// escaped text: paragraphs, **bold**, *em*, `code`, fenced code blocks, lists, headings, quotes, links whose URL is
// http(s), entities (decoded as text), and citations ([1], [1][2], <sup>1,2</sup>) of the answer's references as
// superscript links to the sources.

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
// esc escapes s for text and attribute values alike; it drops NUL, which the renderer reserves for its slots.
export const esc = (s) => String(s ?? '').replace(/\u0000/g, '').replace(/[&<>"']/g, (c) => ESC[c]);

// NAMED are the named entities decoded as text (CommonMark decodes entities); others stay as written.
const NAMED = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', copy: '©', reg: '®', trade: '™', hellip: '…',
  mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”', laquo: '«', raquo: '»', middot: '·',
  bull: '•', times: '×', divide: '÷', deg: '°', euro: '€', pound: '£', yen: '¥', cent: '¢', sect: '§', para: '¶',
  larr: '←', rarr: '→', uarr: '↑', darr: '↓', harr: '↔', le: '≤', ge: '≥', ne: '≠', plusmn: '±', hearts: '♥',
};
const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z][a-zA-Z0-9]{1,31}));/g;

// decode decodes the numeric and the common named entities of s; NUL and invalid code points become U+FFFD.
export function decode(s) {
  return String(s ?? '').replace(ENTITY, (m, dec, hex, name) => {
    if (name) return Object.hasOwn(NAMED, name) ? NAMED[name] : m;
    const cp = dec ? parseInt(dec, 10) : parseInt(hex, 16);
    return cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? '\ufffd' : String.fromCodePoint(cp);
  });
}

// stripSources cuts the "Sources:" list the host appends to an answer (after a blank line, or as the whole text);
// the page lists the references itself. Titles in the list are flattened to one line by the host, so only the last
// "\n\nSources:\n" can start it.
export function stripSources(text, refs) {
  if (!refs || !refs.length) return text;
  if (text.startsWith('Sources:\n')) return '';
  const i = text.lastIndexOf('\n\nSources:\n');
  return i < 0 ? text : text.slice(0, i).trimEnd();
}

// MAX_QUOTE_DEPTH bounds nested quotes: deeper '>' are text, so that no input recurses without end.
const MAX_QUOTE_DEPTH = 8;

// headingText is a heading's text without its closing #s (kept when not after a space: "C#"). A loop, not a
// regular expression: one with \s* around #* backtracks cubically on a long line of spaces.
function headingText(t) {
  t = t.trimEnd();
  let e = t.length;
  while (e && t[e - 1] === '#') e--;
  if (e < t.length && (!e || t[e - 1] === ' ' || t[e - 1] === '\t')) t = t.slice(0, e).trimEnd();
  return t;
}

// render returns the HTML of text. refs are the answer's references (number, title, uri), for citation titles.
export function render(text, refs = [], depth = 0) {
  const byNum = new Map(refs.map((r) => [r.number, r]));
  const lines = String(text || '').replace(/\u0000/g, '').replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let para = [], list = null, quote = [];
  const flushPara = () => { if (para.length) out.push('<p>' + inline(para.join('\n'), byNum) + '</p>'); para = []; };
  const flushList = () => { if (list) out.push(`<${list.tag}>` + list.items.map((it) => '<li>' + inline(it, byNum) + '</li>').join('') + `</${list.tag}>`); list = null; };
  const flushQuote = () => { if (quote.length) out.push('<blockquote>' + render(quote.join('\n'), refs, depth + 1) + '</blockquote>'); quote = []; };
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
    if (depth < MAX_QUOTE_DEPTH && (m = line.match(/^\s*>\s?(.*)$/))) { flushPara(); flushList(); quote.push(m[1]); continue; }
    flushQuote();
    if ((m = line.match(/^(#{1,6})[ \t]+(.*)$/))) { flush(); const n = Math.min(m[1].length + 1, 6); out.push(`<h${n}>` + inline(headingText(m[2]), byNum) + `</h${n}>`); continue; }
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

// TOKENS are the inline constructs, tried left to right on the raw text: a code span, <sup>N</sup> citations, a
// link, an [N] citation, a bare URL, an entity. URLs never hold NUL (the slots' mark), quotes or angle brackets.
const TOKENS = new RegExp([
  '`(?<code>[^`\\n]+)`',
  '(?<![ \\t])[ \\t]*<sup>\\s*(?<sup>\\d+(?:\\s*,\\s*\\d+)*)\\s*</sup>',
  '\\[(?<label>[^\\[\\]\\n]+)\\]\\((?<href>https?://[^\\s()<>"\\u0000]+)\\)',
  '(?<![ \\t])[ \\t]*\\[(?<cite>\\d{1,4})\\](?!\\()',
  '(?<=^|[\\s(])(?<url>https?://[^\\s()<>"\\u0000]*[^\\s()<>"\\u0000.,;:!?\'])',
  '&(?:#\\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});',
].join('|'), 'g');

// link is an anchor to url (raw, http(s) by the patterns above) around html.
const link = (url, html) => '<a href="' + esc(decode(url)) + '" target="_blank" rel="noopener noreferrer">' + html + '</a>';

// inline renders the inline constructs of one block. Text between them is escaped; generated markup is parked in
// slots (NUL, index, NUL) that only text positions hold, so that emphasis never rewrites it, and put back at the
// end. Attribute values are built from raw strings escaped on their own, never from the slotted text. plain (a
// link's label) renders no links or citations.
function inline(src, byNum, plain = false) {
  const slots = [];
  const park = (html) => '\u0000' + (slots.push(html) - 1) + '\u0000';
  const cite = (nums) => nums.map((n) => {
    const r = byNum.get(n);
    const title = r.title || r.uri || '';
    return '<sup class="cite"><a href="#" data-testid="citation" data-ref="' + n + '"' + (title ? ' title="' + esc(title) + '"' : '') + '>' + n + '</a></sup>';
  }).join('');
  src = String(src).replace(/\u0000/g, '');
  let s = '', last = 0;
  for (const m of src.matchAll(TOKENS)) {
    const g = m.groups;
    let html = null;
    if (g.code != null) html = '<code>' + esc(g.code) + '</code>';
    else if (g.sup != null) {
      const nums = g.sup.split(',').map((x) => +x.trim());
      if (!plain && nums.every((n) => byNum.has(n))) html = cite(nums);
    } else if (g.label != null) { if (!plain) html = link(g.href, inline(g.label, byNum, true)); }
    else if (g.cite != null) { if (!plain && byNum.has(+g.cite)) html = cite([+g.cite]); }
    else if (g.url != null) { if (!plain) html = link(g.url, esc(decode(g.url))); }
    else html = esc(decode(m[0]).replace(/\u0000/g, '\ufffd'));
    if (html == null) continue; // not rendered: stays in the text before the next construct
    s += esc(src.slice(last, m.index)) + park(html);
    last = m.index + m[0].length;
  }
  s += esc(src.slice(last));
  s = s.replace(/\*\*([^*\n]+?)\*\*|__([^_\n]+?)__/g, (_, a, b) => '<strong>' + (a || b) + '</strong>');
  s = s.replace(/(^|[^*\w])\*([^*\s][^*\n]*?)\*(?!\*)|(^|[^_\w])_([^_\s][^_\n]*?)_(?![_\w])/g, (_, p1, a, p2, b) => (p1 ?? p2 ?? '') + '<em>' + (a ?? b) + '</em>');
  s = s.replace(/\n/g, '<br>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => slots[+i]);
}
