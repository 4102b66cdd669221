// md.js: a small, safe markdown renderer for answers. Only the constructs below become markup, everything else is
// escaped text: paragraphs, **bold**, *em*, `code`, fenced code blocks, lists, headings, quotes, links whose URL is
// http(s), entities (decoded as text), and citations ([1], [1][2], <sup>1,2</sup>) of the answer's references as
// superscript links to the sources; while an answer streams, a marker that may cite a source not known yet is a
// pending citation (no link).

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
// pending is how many references may be cited while their sources are not known yet (the answer still streams): a
// marker [N] with N up to pending and not in refs is a pending citation, styled but no link.
export function render(text, refs = [], pending = 0) {
  return blocks(text, { byNum: new Map(refs.map((r) => [r.number, r])), pending }, 0);
}

// blocks renders the block constructs of text, quotes depth deep; cites are the citations' references.
function blocks(text, cites, depth) {
  const lines = String(text || '').replace(/\u0000/g, '').replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let para = [], list = null, quote = [];
  const flushPara = () => { if (para.length) out.push('<p>' + inline(para.join('\n'), cites) + '</p>'); para = []; };
  const flushList = () => { if (list) out.push(`<${list.tag}>` + list.items.map((it) => '<li>' + inline(it, cites) + '</li>').join('') + `</${list.tag}>`); list = null; };
  const flushQuote = () => { if (quote.length) out.push('<blockquote>' + blocks(quote.join('\n'), cites, depth + 1) + '</blockquote>'); quote = []; };
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
    if ((m = line.match(/^(#{1,6})[ \t]+(.*)$/))) { flush(); const n = Math.min(m[1].length + 1, 6); out.push(`<h${n}>` + inline(headingText(m[2]), cites) + `</h${n}>`); continue; }
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

// URL_CHAR is a character of a link's destination other than a parenthesis; DEST a destination, whose balanced
// parentheses (nested two deep) belong to it as in CommonMark: "https://en.wikipedia.org/wiki/Go_(lang)". Each
// alternative starts with its own character, so a destination that fails gives back in linear time.
const URL_CHAR = '[^\\s()<>"\\u0000]';
const DEST = `(?:${URL_CHAR}|\\((?:${URL_CHAR}|\\(${URL_CHAR}*\\))*\\))+`;

// TOKENS are the inline constructs, tried left to right on the raw text: a code span, <sup>N</sup> citations, a
// link, an [N] citation, a bare URL, an entity. URLs never hold NUL (the slots' mark), quotes or angle brackets. A
// bare URL is a destination as a link's is (its parentheses balanced), less its trailing punctuation (see bareURL):
// "(see https://example.com/a)[1]" links the URL and leaves ")" and the citation after it.
const TOKENS = new RegExp([
  '`(?<code>[^`\\n]+)`',
  '(?<![ \\t])[ \\t]*<sup>\\s*(?<sup>\\d+(?:\\s*,\\s*\\d+)*)\\s*</sup>',
  `\\[(?<label>[^\\[\\]\\n]+)\\]\\((?<href>https?://${DEST})\\)`,
  '(?<![ \\t])[ \\t]*\\[(?<cite>\\d{1,4})\\](?!\\()',
  `(?<=^|[\\s(])(?<url>https?://${DEST})`,
  '&(?:#\\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});',
].join('|'), 'g');

// bareURL is how much of a bare URL's match is the link: not its trailing punctuation ("see https://go.dev."); 0
// when nothing is left after the scheme.
function bareURL(url) {
  let end = url.length;
  while (".,;:!?'".includes(url[end - 1])) end--;
  return end > url.indexOf('://') + 3 ? end : 0;
}

// link is an anchor to url (raw, http(s) by the patterns above) around html.
const link = (url, html) => '<a href="' + esc(decode(url)) + '" target="_blank" rel="noopener noreferrer">' + html + '</a>';

// inline renders the inline constructs of one block. Text between them is escaped; generated markup is parked in
// slots (NUL, index, NUL) that only text positions hold, so that emphasis never rewrites it, and put back at the
// end. Attribute values are built from raw strings escaped on their own, never from the slotted text. plain (a
// link's label) renders no links or citations. cites: byNum, the references by number, and pending (see render).
function inline(src, cites, plain = false) {
  const { byNum, pending } = cites;
  const slots = [];
  const park = (html) => '\u0000' + (slots.push(html) - 1) + '\u0000';
  const citable = (n) => byNum.has(n) || (n >= 1 && n <= pending);
  const cite = (nums) => nums.map((n) => {
    const r = byNum.get(n);
    if (!r) return '<sup class="cite pending" data-testid="citation-pending" data-ref="' + n + '" title="Source not known yet">' + n + '</sup>';
    const title = r.title || r.uri || '';
    return '<sup class="cite"><a href="#" data-testid="citation" data-ref="' + n + '"' + (title ? ' title="' + esc(title) + '"' : '') + '>' + n + '</a></sup>';
  }).join('');
  src = String(src).replace(/\u0000/g, '');
  let s = '', last = 0;
  for (const m of src.matchAll(TOKENS)) {
    const g = m.groups;
    let html = null, len = m[0].length;
    if (g.code != null) html = '<code>' + esc(g.code) + '</code>';
    else if (g.sup != null) {
      const nums = g.sup.split(',').map((x) => +x.trim());
      if (!plain && nums.every(citable)) html = cite(nums);
    } else if (g.label != null) { if (!plain) html = link(g.href, inline(g.label, cites, true)); }
    else if (g.cite != null) { if (!plain && citable(+g.cite)) html = cite([+g.cite]); }
    else if (g.url != null) { // its trimmed end (punctuation) is text: no construct starts there
      len = bareURL(g.url);
      if (!plain && len) html = link(g.url.slice(0, len), esc(decode(g.url.slice(0, len))));
    } else html = esc(decode(m[0]).replace(/\u0000/g, '\ufffd'));
    if (html == null) continue; // not rendered: stays in the text before the next construct
    s += esc(src.slice(last, m.index)) + park(html);
    last = m.index + len;
  }
  s += esc(src.slice(last));
  s = s.replace(/\*\*([^*\n]+?)\*\*|__([^_\n]+?)__/g, (_, a, b) => '<strong>' + (a || b) + '</strong>');
  s = s.replace(/(^|[^*\w])\*([^*\s][^*\n]*?)\*(?!\*)|(^|[^_\w])_([^_\s][^_\n]*?)_(?![_\w])/g, (_, p1, a, p2, b) => (p1 ?? p2 ?? '') + '<em>' + (a ?? b) + '</em>');
  s = s.replace(/\n/g, '<br>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => slots[+i]);
}
