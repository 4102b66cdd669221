// lib.js: the small toolkit every view shares: DOM building without HTML strings, the API client (CSRF, login),
// formatting, icons, and a virtualized list. Nothing here touches the network but /api.

// h builds an element: h('div', {class: 'x', 'data-testid': 'y', onclick: fn}, 'text', child, [more]).
// Strings become text nodes, never HTML; null, undefined and false children are skipped.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

// fill replaces el's children, add appends to them; like replaceChildren and append, but null, undefined and false
// are skipped (the DOM methods would write "null").
export function fill(el, ...children) { el.replaceChildren(); append(el, children); return el; }
export function add(el, ...children) { append(el, children); return el; }

function append(el, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// icon returns an inline SVG icon (trusted, static markup from ICONS).
export function icon(name, cls = '') {
  const span = document.createElement('span');
  span.className = 'icon ' + cls;
  span.setAttribute('aria-hidden', 'true');
  span.innerHTML = '<svg viewBox="0 0 16 16" width="16" height="16" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round">' + (ICONS[name] || '') + '</svg>';
  return span;
}

const ICONS = {
  chat: '<path d="M2.5 3.5h11v7h-6l-3 2.5v-2.5h-2z"/>',
  runs: '<path d="M2 4h7M2 8h11M2 12h5"/><circle cx="12" cy="4" r="1.2"/><circle cx="9.5" cy="12" r="1.2"/>',
  tools: '<path d="M10.5 2.5a3 3 0 0 0-2.8 4L2.5 11.7l1.8 1.8 5.2-5.2a3 3 0 0 0 4-2.8l-1.8 1.8-1.6-.4-.4-1.6z"/>',
  servers: '<rect x="2.5" y="2.5" width="11" height="4.5" rx="1"/><rect x="2.5" y="9" width="11" height="4.5" rx="1"/><path d="M5 4.75h.01M5 11.25h.01"/>',
  conversations: '<path d="M2.5 2.5h8v5.5h-4l-2.5 2v-2h-1.5z"/><path d="M12.5 6h1v5.5h-1.5v2l-2.5-2h-3"/>',
  evals: '<path d="M3 8.5l3 3 7-7"/>',
  sun: '<circle cx="8" cy="8" r="3"/><path d="M8 1v1.5M8 13.5V15M1 8h1.5M13.5 8H15M3 3l1 1M12 12l1 1M3 13l1-1M12 4l1-1"/>',
  moon: '<path d="M13.5 9.5A5.5 5.5 0 0 1 6.5 2.5a5.5 5.5 0 1 0 7 7z"/>',
  send: '<path d="M8 13V3M3.5 7.5L8 3l4.5 4.5"/>',
  stop: '<rect x="4" y="4" width="8" height="8" rx="1.5" fill="currentColor" stroke="none"/>',
  plus: '<path d="M8 3v10M3 8h10"/>',
  sliders: '<path d="M2.5 4.5h11M2.5 11.5h11"/><circle cx="6" cy="4.5" r="1.6"/><circle cx="10.5" cy="11.5" r="1.6"/>',
  history: '<path d="M2.5 8a5.5 5.5 0 1 0 1.6-3.9"/><path d="M2.5 2.5v2.5H5M8 5v3l2 1.5"/>',
  check: '<path d="M3.5 8.5l3 3 6-7"/>',
  x: '<path d="M4 4l8 8M12 4l-8 8"/>',
  chevron: '<path d="M6 4l4 4-4 4"/>',
  copy: '<rect x="5.5" y="5.5" width="8" height="8" rx="1.5"/><path d="M10.5 5.5v-2a1 1 0 0 0-1-1h-6a1 1 0 0 0-1 1v6a1 1 0 0 0 1 1h2"/>',
  search: '<circle cx="7" cy="7" r="4.5"/><path d="M10.5 10.5L14 14"/>',
  trash: '<path d="M2.5 4.5h11M6 4.5V3h4v1.5M4 4.5l.7 9h6.6l.7-9"/>',
  play: '<path d="M5 3.5v9l7-4.5z"/>',
  lock: '<rect x="3" y="7" width="10" height="7" rx="1.5"/><path d="M5 7V5a3 3 0 0 1 6 0v2"/>',
  logo: '<path d="M8 1.5l5.5 3.2v6.6L8 14.5l-5.5-3.2V4.7z"/><path d="M8 8l5.5-3.3M8 8v6.5M8 8L2.5 4.7"/>',
};

// ---- API ----

export const session = { csrf: '', data: null };
const listeners = new Set();
// onLogin registers fn to be called when the API answers 401 with a login method.
export function onLogin(fn) { listeners.add(fn); }

export class APIError extends Error {
  constructor(message, status, body) { super(message); this.status = status; this.body = body; }
}

// api calls /api+path. Requests that change something carry the CSRF token and a JSON body.
export async function api(path, { method = 'GET', body, signal } = {}) {
  const init = { method, signal, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (method !== 'GET') {
    init.headers['X-CSRF-Token'] = session.csrf;
    init.headers['Content-Type'] = 'application/json';
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  const res = await fetch('/api' + path, init);
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (res.status === 401 && data && data.login) for (const fn of listeners) fn(data.login);
  if (!res.ok) throw new APIError((data && data.error) || `${res.status} ${res.statusText}`, res.status, data);
  return data;
}

// ---- formatting ----

const nf = new Intl.NumberFormat();
export const num = (n) => nf.format(n || 0);

export function dur(ms) {
  if (ms == null || isNaN(ms)) return '';
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + 'm ' + Math.floor((ms % 60000) / 1000) + 's';
  return Math.floor(ms / 3600000) + 'h ' + Math.floor((ms % 3600000) / 60000) + 'm';
}

export function ago(t) {
  if (!t) return '';
  const s = (Date.now() - new Date(t).getTime()) / 1000;
  if (s < 5) return 'just now';
  if (s < 60) return Math.floor(s) + 's ago';
  if (s < 3600) return Math.floor(s / 60) + 'm ago';
  if (s < 86400) return Math.floor(s / 3600) + 'h ago';
  return new Date(t).toLocaleDateString();
}

export const clock = (t) => (t ? new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }) : '');

// pretty returns JSON text indented, or the text as it is when it is not JSON.
export function pretty(v) {
  if (v == null || v === '') return '';
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  return JSON.stringify(v, null, 2);
}

export function tokens(u) {
  if (!u) return '';
  const t = u.total_tokens || (u.prompt_tokens || 0) + (u.completion_tokens || 0);
  return t ? `${num(t)} tokens` : '';
}

export function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

// frameBatch returns push(item): items pushed within one animation frame are handed to flush together.
export function frameBatch(flush) {
  let queue = [], scheduled = false;
  return (item) => {
    queue.push(item);
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { const q = queue; queue = []; scheduled = false; flush(q); });
  };
}

export function empty(title, hint, ic) {
  return h('div', { class: 'empty' }, ic ? icon(ic, 'empty-icon') : null, h('div', { class: 'empty-title' }, title), hint ? h('div', { class: 'empty-hint' }, hint) : null);
}

export function copyButton(getText, label = 'Copy') {
  const b = h('button', { class: 'btn ghost sm', type: 'button', 'aria-label': label, title: label }, icon('copy'));
  b.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(getText()); b.classList.add('done'); setTimeout(() => b.classList.remove('done'), 1200); } catch { /* no clipboard: the text stays selectable */ }
  });
  return b;
}

export function originBadge(o) { return h('span', { class: 'badge origin-' + (o || 'other') }, o || 'other'); }

export function statusBadge(s) {
  const cls = s === 'running' ? 'running' : s === 'answered' || s === 'tool_took_control' ? 'ok' : s === 'cancelled' ? 'muted' : 'err';
  return h('span', { class: 'status ' + cls }, h('span', { class: 'dot' }), s || '');
}

// ---- VList: a virtualized list of fixed-height rows ----

// VList renders only the rows in view (plus a margin) of a scroll container: a spacer gives the full height, and a
// pool of absolutely positioned rows is filled by render(index, rowElement).
export class VList {
  constructor(scroller, { rowHeight, render, margin = 10, rowClass = 'vrow', role }) {
    this.scroller = scroller;
    this.rowHeight = rowHeight;
    this.renderRow = render;
    this.margin = margin;
    this.rowClass = rowClass;
    this.count = 0;
    this.rows = new Map();
    this.spacer = h('div', { class: 'vspacer' });
    if (role) scroller.setAttribute('role', role);
    scroller.classList.add('vscroll');
    scroller.append(this.spacer);
    this.pending = false;
    scroller.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(scroller);
  }
  atBottom() { const s = this.scroller; return s.scrollHeight - s.scrollTop - s.clientHeight < this.rowHeight * 2; }
  setCount(n, { stick = false } = {}) {
    const follow = stick && this.atBottom();
    this.count = n;
    this.spacer.style.height = n * this.rowHeight + 'px';
    if (follow) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.schedule();
  }
  // refresh renders the visible rows again (their data changed).
  refresh() { this.dirty = true; this.schedule(); }
  scrollTo(i) {
    const top = i * this.rowHeight, s = this.scroller;
    if (top < s.scrollTop || top + this.rowHeight > s.scrollTop + s.clientHeight) s.scrollTop = top - s.clientHeight / 2;
    this.schedule();
  }
  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }
  draw() {
    const s = this.scroller, rh = this.rowHeight;
    const first = Math.max(0, Math.floor(s.scrollTop / rh) - this.margin);
    const last = Math.min(this.count - 1, Math.ceil((s.scrollTop + s.clientHeight) / rh) + this.margin);
    const free = [];
    for (const [i, el] of this.rows) if (i < first || i > last) { free.push(el); this.rows.delete(i); }
    for (let i = first; i <= last; i++) {
      let el = this.rows.get(i);
      const fresh = !el;
      if (fresh) {
        el = free.pop() || s.appendChild(h('div', { class: this.rowClass }));
        el.style.transform = `translateY(${i * rh}px)`;
        el.style.height = rh + 'px';
        this.rows.set(i, el);
      }
      if (fresh || this.dirty) this.renderRow(i, el);
    }
    for (const el of free) el.remove();
    this.dirty = false;
  }
}
