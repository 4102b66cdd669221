// runs.js: the Runs view. The list is live (/api/runs then /api/runs/live); a run opens on its timeline: its spans
// (model and tool calls, nested runs) as bars on a time axis, and the raw entry list. Both are virtualized (fixed
// row height, only the rows in view are in the DOM) and live updates are applied once per animation frame.
import { h, fill, add, icon, api, session, dur, num, pretty, tokens, ago, clock, frameBatch, empty, originBadge, statusBadge, VList } from './lib.js';

const ROW = 30;
const NO_CONTENT = 'The content of this run was not recorded. Set [telemetry] capture_content = true to record the content of runs from other callers.';

// RunModel turns entries into spans: *_start opens one, *_end closes it, the other kinds attach to their span.
class RunModel {
  constructor(summary) {
    this.summary = summary;
    this.entries = [];
    this.spans = new Map();
    this.order = [];
    this.dirty = false;
    this.maxAt = 0;
  }
  span(id, e) {
    let s = this.spans.get(id);
    if (!s) {
      s = { id, kind: 'run', parent: e.parent || '', start: e.at_ms, end: null, events: [], depth: 0, name: id };
      this.spans.set(id, s);
      this.dirty = true;
    }
    return s;
  }
  add(e) {
    this.entries.push(e);
    this.maxAt = Math.max(this.maxAt, e.at_ms || 0);
    if (!e.span) return;
    const m = /^(run|model|tool)_(start|end)$/.exec(e.kind);
    const s = this.span(e.span, e);
    if (m && m[2] === 'start') {
      Object.assign(s, { kind: m[1], parent: e.parent || '', start: e.at_ms, startE: e });
      if (m[1] === 'model') this.calls = (this.calls || 0) + 1;
      s.name = m[1] === 'tool' ? e.name || 'tool' : m[1] === 'model' ? `${e.model || 'model'} · call ${this.calls}` : e.agent || 'run';
    } else if (m) {
      Object.assign(s, { kind: m[1], end: e.at_ms, endE: e });
      if (e.error || e.ok === false || (m[1] === 'run' && e.stopped_by && e.stopped_by !== 'answered' && e.stopped_by !== 'tool_took_control')) s.error = true;
    } else s.events.push(e);
  }
  // rows returns the spans in timeline order: each after its parent, siblings by start.
  rows() {
    if (!this.dirty) return this.order;
    const kids = new Map();
    for (const s of this.spans.values()) {
      const p = this.spans.has(s.parent) ? s.parent : '';
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(s);
    }
    const out = [];
    const walk = (p, depth) => {
      for (const s of (kids.get(p) || []).sort((a, b) => a.start - b.start)) { s.depth = depth; out.push(s); walk(s.id, depth + 1); }
    };
    walk('', 0);
    this.order = out;
    this.dirty = false;
    return out;
  }
  total() {
    const s = this.summary;
    const d = s && s.ended ? new Date(s.ended) - new Date(s.started) : 0;
    return Math.max(this.maxAt, d, 1);
  }
}

function entryText(e) {
  switch (e.kind) {
    case 'run_start': return [e.agent, e.prompt].filter(Boolean).join(': ');
    case 'run_end': return [e.stopped_by, tokens(e.usage), dur(e.duration_ms), e.error].filter(Boolean).join(' · ');
    case 'iteration': return 'iteration ' + e.iteration;
    case 'model_start': return [e.model, e.messages ? e.messages.length + ' messages' : '', e.tools ? e.tools + ' tools' : ''].filter(Boolean).join(' · ');
    case 'model_end': return [e.finish_reason, tokens(e.usage), dur(e.duration_ms), e.tool_calls ? e.tool_calls.map((c) => c.name).join(', ') : '', e.error].filter(Boolean).join(' · ');
    case 'model_retry': return [`attempt ${e.attempt} failed`, e.error, e.delay_ms != null ? 'retried after ' + dur(e.delay_ms) : ''].filter(Boolean).join(' · ');
    case 'text': return e.text || (e.bytes ? e.bytes + ' bytes' : '');
    case 'tool_start': return [e.name, e.source, e.arguments ? JSON.stringify(e.arguments) : ''].filter(Boolean).join(' · ');
    case 'tool_progress': return e.progress ? e.progress.message ?? '' : '';
    case 'tool_end': return [e.ok === false || e.error ? 'error' : 'ok', dur(e.duration_ms), e.error || e.result || ''].filter(Boolean).join(' · ');
    case 'check': return e.check ? `${e.check.name}: ${e.check.passed ? 'passed' : 'failed'}${e.check.detail ? ' · ' + e.check.detail : ''}` : '';
    case 'answer': return e.answer ? e.answer.answer || '' : '';
    case 'approval': return e.approval ? `${e.approval.type} ${e.approval.tool || ''} ${e.approval.message || ''}` : '';
    case 'approval_done': return e.answered ? e.answered.action || (e.answered.approved ? 'approved' : 'denied') : '';
    default: return '';
  }
}

// paintRow paints the cells of a run's row whose content changed since the last time.
function paintRow(tr, s) {
  tr.dataset.origin = s.origin || '';
  tr.dataset.status = s.status;
  const ms = s.ended ? new Date(s.ended) - new Date(s.started) : null;
  const cells = [
    [s.status, () => [statusBadge(s.status)]],
    [JSON.stringify([s.prompt, s.content, s.error]), () => [s.prompt || h('span', { class: 'faint' }, s.content ? s.id : `${s.id} · content not recorded`), s.error ? h('div', { class: 'fail' }, s.error) : null]],
    [s.origin || '', () => [originBadge(s.origin)]],
    [ago(s.started), () => [ago(s.started)]],
    [s.status === 'running' ? '' : dur(ms), () => [s.status === 'running' ? h('span', { class: 'faint' }, '…') : dur(ms)]],
    [num(s.usage?.total_tokens), () => [num(s.usage?.total_tokens)]],
    [num(s.tool_calls), () => [num(s.tool_calls)]],
  ];
  cells.forEach(([key, content], i) => {
    if (tr.keys[i] === key) return;
    tr.keys[i] = key;
    fill(tr.cells[i], ...content());
  });
  tr.cells[1].title = s.prompt || '';
  tr.cells[3].title = new Date(s.started).toLocaleString();
}

class RunsView extends HTMLElement {
  connectedCallback() {
    if (this.built) return;
    this.built = true;
    this.runs = new Map();
    this.listEl = h('div', { class: 'view', hidden: true });
    this.detailEl = h('div', { class: 'view', hidden: true });
    add(this, this.listEl, this.detailEl);
  }

  route(arg) {
    if (arg) { this.closeLive(); this.openRun(arg); } else this.showList();
  }

  deactivate() { this.closeLive(); this.closeFollow(); }

  escape() {
    if (this.detail && !this.detail.pane.hidden) { this.closePane(); return true; }
    return false;
  }

  // ---- list ----

  async showList() {
    this.closeFollow();
    this.detail = null;
    this.detailEl.hidden = true;
    this.listEl.hidden = false;
    if (!this.tbody) {
      this.tbody = h('tbody', { 'data-testid': 'runs-list' });
      this.count = h('span', { class: 'sub' });
      this.listBody = h('div', { class: 'view-body' });
      add(this.listEl, h('header', { class: 'view-head' }, h('h1', {}, 'Runs'), this.count), this.listBody);
      this.rowEls = new Map(); // run id → its <tr>, kept while the run is listed: live updates change its cells
      // Clicks are read on the body, by the row's id: a row's cells may be painted again between mousedown and up.
      this.tbody.addEventListener('click', (e) => {
        const tr = e.target.closest('tr[data-id]');
        if (tr) location.hash = '#/runs/' + encodeURIComponent(tr.dataset.id);
      });
      this.tbody.addEventListener('keydown', (e) => {
        const tr = e.target.closest('tr');
        if (!tr) return;
        if (e.key === 'Enter') { location.hash = '#/runs/' + encodeURIComponent(tr.dataset.id); }
        else if (e.key === 'ArrowDown') { e.preventDefault(); tr.nextElementSibling?.focus(); }
        else if (e.key === 'ArrowUp') { e.preventDefault(); tr.previousElementSibling?.focus(); }
      });
    }
    try {
      const r = await api('/runs');
      this.runs.clear();
      for (const s of r.runs || []) this.runs.set(s.id, s);
    } catch (err) {
      fill(this.listBody, h('div', { class: 'error-note' }, err.message));
      return;
    }
    this.paintList();
    this.openLive();
  }

  openLive() {
    if (this.live) return;
    const push = frameBatch((items) => {
      for (const it of items) { if (it.gone) this.runs.delete(it.gone); else this.runs.set(it.id, it); }
      this.paintList();
    });
    const es = new EventSource('/api/runs/live');
    this.live = es;
    let opened = false;
    // After a reconnect the list is replaced with the runs kept now: those dropped meanwhile are said gone to nobody.
    es.addEventListener('open', () => { if (opened) this.resync(es); opened = true; });
    es.addEventListener('run', (m) => { try { push(JSON.parse(m.data)); } catch { /* skipped */ } });
    es.addEventListener('gone', (m) => { try { push({ gone: JSON.parse(m.data).id }); } catch { /* skipped */ } });
    clearInterval(this.tick);
    this.tick = setInterval(() => this.paintList(), 10000); // "started … ago" stays true
  }

  closeLive() { this.live?.close(); this.live = null; clearInterval(this.tick); }

  async resync(es) {
    let r;
    try { r = await api('/runs'); } catch { return; }
    if (this.live !== es) return;
    this.runs.clear();
    for (const s of r.runs || []) this.runs.set(s.id, s);
    this.paintList();
  }

  paintList() {
    if (this.listEl.hidden) return;
    const runs = [...this.runs.values()].sort((a, b) => new Date(b.started) - new Date(a.started));
    this.count.textContent = runs.length ? `${runs.length} run${runs.length > 1 ? 's' : ''} · live` : '';
    if (!runs.length) {
      this.rowEls.clear();
      fill(this.listBody, empty('No runs yet', 'Every run of this process shows up here as it starts: from the Chat view, over MCP, over A2A, or a durable run resumed.', 'runs'));
      add(this.listBody, this.tbody); fill(this.tbody); this.tbody.hidden = true;
      return;
    }
    this.tbody.hidden = false;
    const focused = document.activeElement?.closest?.('tr')?.dataset.id;
    // One <tr> per run, kept: its cells are painted again only when what they show changed, and rows move only when
    // the order changed, so a click or the focus is not lost to a live update.
    const seen = new Set();
    let prev = null;
    for (const s of runs) {
      let tr = this.rowEls.get(s.id);
      if (!tr) {
        tr = h('tr', { tabindex: 0, 'data-testid': 'run-row', 'data-id': s.id }, h('td'), h('td', { class: 'ellipsis' }), h('td'), h('td', { class: 'muted' }), h('td', { class: 'num' }), h('td', { class: 'num' }), h('td', { class: 'num' }));
        tr.keys = [];
        this.rowEls.set(s.id, tr);
      }
      paintRow(tr, s);
      seen.add(s.id);
      const at = prev ? prev.nextElementSibling : this.tbody.firstElementChild;
      if (at !== tr) this.tbody.insertBefore(tr, at);
      prev = tr;
    }
    for (const [id, tr] of this.rowEls) if (!seen.has(id)) { tr.remove(); this.rowEls.delete(id); }
    if (!this.table) {
      this.table = h('table', { class: 'grid', 'aria-label': 'Runs' }, h('thead', {}, h('tr', {},
        h('th', {}, 'Status'), h('th', {}, 'Prompt'), h('th', {}, 'Origin'), h('th', {}, 'Started'), h('th', { class: 'num' }, 'Duration'), h('th', { class: 'num' }, 'Tokens'), h('th', { class: 'num' }, 'Tool calls'))), this.tbody);
    }
    if (this.table.parentNode !== this.listBody) fill(this.listBody, this.table);
    if (focused) this.tbody.querySelector(`tr[data-id="${CSS.escape(focused)}"]`)?.focus();
  }

  // ---- one run ----

  closeFollow() { this.follow?.close(); this.follow = null; }

  async openRun(id) {
    this.closeFollow();
    this.listEl.hidden = true;
    this.detailEl.hidden = false;
    fill(this.detailEl, h('header', { class: 'view-head' }, h('a', { href: '#/runs', class: 'btn ghost sm' }, '← Runs'), h('h1', {}, 'Run'), h('span', { class: 'sub mono' }, id)), h('div', { class: 'boot' }, 'Loading…'));
    let r;
    try {
      r = await api('/runs/' + encodeURIComponent(id));
    } catch (err) {
      this.detailEl.lastChild.replaceWith(empty(err.status === 404 ? 'This run is no longer kept' : 'The run could not be read', err.status === 404 ? 'The console keeps the most recent runs of this process.' : err.message));
      return;
    }
    const model = new RunModel(r.run);
    for (const e of r.entries || []) model.add(e);
    this.buildDetail(model);
    if (r.run.status === 'running') this.followRun(model);
  }

  followRun(model) {
    const after = model.entries.length ? model.entries[model.entries.length - 1].seq : 0;
    const es = new EventSource(`/api/runs/${encodeURIComponent(model.summary.id)}/events?after=${after}`);
    this.follow = es;
    let last = after;
    const push = frameBatch((items) => {
      for (const it of items) {
        if (it.end) { model.summary = it.end; continue; }
        if (it.seq <= last) continue;
        last = it.seq;
        model.add(it);
      }
      this.paintDetail();
    });
    es.addEventListener('entry', (m) => { try { push(JSON.parse(m.data)); } catch { /* skipped */ } });
    es.addEventListener('end', (m) => { es.close(); try { push({ end: JSON.parse(m.data) }); } catch { /* skipped */ } });
  }

  buildDetail(model) {
    this.detail?.resize?.disconnect();
    const d = { model, tab: 'timeline', sel: null };
    this.detail = d;
    d.head = h('div', { class: 'run-head' });
    const tab = (id, label) => h('button', { role: 'tab', type: 'button', id: 'tab-' + id, 'aria-selected': String(id === d.tab), onclick: () => this.setTab(id) }, label);
    d.tabs = h('div', { class: 'tabs', role: 'tablist' }, tab('timeline', 'Timeline'), tab('entries', 'Entries'),
      h('div', { class: 'legend', 'aria-hidden': 'true' }, h('span', {}, h('i', { class: 'l-model' }), 'model'), h('span', {}, h('i', { class: 'l-tool' }), 'tool'), h('span', {}, h('i', { class: 'l-run' }), 'run'), h('span', {}, h('i', { class: 'l-err' }), 'error')));
    d.axisTrack = h('div', { class: 'tl-track' });
    d.axis = h('div', { class: 'tl-axis', 'aria-hidden': 'true' }, h('div', { class: 'tl-label' }, 'Span'), d.axisTrack);
    // The bars' labels are placed for the track's width: placed again when it changes (the details pane, the window).
    d.resize = new ResizeObserver(() => { const w = trackWidth(d); if (w !== d.trackWidth) { d.trackWidth = w; d.vtl?.refresh(); } });
    d.resize.observe(d.axisTrack);
    d.tl = h('div', { 'data-testid': 'timeline', tabindex: 0, 'aria-label': 'Timeline: arrow keys move, Enter opens the details, Escape closes them' });
    d.ent = h('div', { tabindex: 0, 'aria-label': 'Entries', hidden: true });
    d.tlWrap = h('div', { class: 'view', role: 'tabpanel', 'aria-labelledby': 'tab-timeline' }, d.axis, d.tl);
    d.pane = h('aside', { class: 'detail-pane', hidden: true, 'aria-label': 'Details' });
    d.body = h('div', { class: 'split' }, h('div', { class: 'list-pane view' }, d.tlWrap, d.ent), d.pane);
    const id = model.summary.id;
    fill(this.detailEl, 
      h('header', { class: 'view-head' }, h('a', { href: '#/runs', class: 'btn ghost sm', 'aria-label': 'Back to the runs' }, '← Runs'), h('h1', {}, 'Run'), h('span', { class: 'sub mono' }, id)),
      d.head, d.tabs, d.body);

    d.resize.observe(d.tl);
    d.vtl = new VList(d.tl, { rowHeight: ROW, role: 'list', render: (i, el) => this.tlRow(i, el) });
    d.vent = new VList(d.ent, { rowHeight: 28, role: 'list', render: (i, el) => this.entRow(i, el) });
    d.tl.addEventListener('click', (e) => { const r = e.target.closest('.vrow'); if (r) this.select(model.rows()[+r.dataset.i]); });
    d.ent.addEventListener('click', (e) => { const r = e.target.closest('.vrow'); if (r) this.selectEntry(model.entries[+r.dataset.i]); });
    d.tl.addEventListener('keydown', (e) => this.timelineKeys(e, model.rows()));
    d.ent.addEventListener('keydown', (e) => this.arrows(e, model.entries, d.vent, (x) => this.selectEntry(x)));
    this.paintDetail();
  }

  arrows(e, list, vlist, pick) {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    const d = this.detail;
    let i = d.selIndex ?? -1;
    i = Math.max(0, Math.min(list.length - 1, i + (e.key === 'ArrowDown' ? 1 : -1)));
    pick(list[i]);
    vlist.scrollTo(i);
  }

  // timelineKeys moves the focus between the timeline's rows (a roving tabindex: the row focused last is the one
  // Tab reaches) with the arrow keys, Home and End; Enter opens the focused row's details.
  timelineKeys(e, rows) {
    const d = this.detail;
    let i = Math.min(d.focusIndex ?? 0, rows.length - 1);
    if (e.key === 'Enter') {
      if (rows[i]) { e.preventDefault(); this.select(rows[i]); }
      return;
    }
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: rows.length - 1 }[e.key];
    if (to === undefined || !rows.length) return;
    e.preventDefault();
    i = Math.max(0, Math.min(rows.length - 1, to));
    d.focusIndex = i;
    d.vtl.scrollTo(i);
    d.vtl.refresh();
    requestAnimationFrame(() => d.vtl.rows.get(i)?.focus()); // after the list drew the row (it draws in a frame too)
  }

  setTab(id) {
    const d = this.detail;
    d.tab = id;
    for (const b of d.tabs.querySelectorAll('[role=tab]')) b.setAttribute('aria-selected', String(b.id === 'tab-' + id));
    d.tlWrap.hidden = id !== 'timeline';
    d.ent.hidden = id !== 'entries';
    d.selIndex = null;
    this.paintDetail();
  }

  paintDetail() {
    const d = this.detail;
    if (!d) return;
    const m = d.model, s = m.summary;
    const ms = s.ended ? new Date(s.ended) - new Date(s.started) : m.maxAt;
    fill(d.head, 
      h('div', { class: 'run-prompt' }, s.prompt || h('span', { class: 'faint' }, s.content ? '(no prompt)' : 'Content not recorded')),
      h('div', { class: 'stats' },
        statusBadge(s.status), originBadge(s.origin),
        s.agent ? h('span', {}, 'agent ', h('b', {}, s.agent)) : null,
        s.model ? h('span', {}, 'model ', h('b', {}, s.model)) : null,
        h('span', {}, 'started ', h('b', {}, clock(s.started))),
        h('span', {}, 'duration ', h('b', {}, dur(ms))),
        h('span', {}, 'tokens ', h('b', {}, num(s.usage?.total_tokens)), ` (${num(s.usage?.prompt_tokens)} in · ${num(s.usage?.completion_tokens)} out)`),
        h('span', {}, 'model calls ', h('b', {}, num(s.model_calls))),
        h('span', {}, 'tool calls ', h('b', {}, num(s.tool_calls))),
        h('span', {}, 'entries ', h('b', {}, num(s.entries || m.entries.length)), s.dropped ? ` (${num(s.dropped)} dropped)` : ''),
        s.conversation_id ? h('span', {}, 'conversation ', h('a', { href: '#/chat?c=' + encodeURIComponent(s.conversation_id), class: 'mono' }, s.conversation_id)) : null),
      s.error ? h('div', { class: 'error-note' }, s.error) : null,
      s.content ? null : h('div', { class: 'note' }, NO_CONTENT));
    const total = m.total();
    d.total = total;
    fill(d.axisTrack, ...[0, 0.25, 0.5, 0.75, 1].map((f) => { const t = h('span', { class: 'tl-tick' }, f ? dur(total * f) : '0'); t.style.left = f * 100 + '%'; if (f === 1) t.style.transform = 'translateX(-100%)'; if (f === 0) t.style.transform = 'none'; return t; }));
    const rows = m.rows();
    if (!rows.length && !m.entries.length) {
      d.tl.hidden = true;
      if (!d.emptyEl) { d.emptyEl = empty('No steps yet', 'The run has not recorded anything yet; steps appear here as it works.'); add(d.tlWrap, d.emptyEl); }
    } else { d.tl.hidden = false; d.emptyEl?.remove(); d.emptyEl = null; }
    d.vtl.setCount(rows.length, { stick: s.status === 'running' });
    d.vtl.refresh();
    d.vent.setCount(m.entries.length, { stick: s.status === 'running' });
    d.vent.refresh();
    if (d.sel && !d.pane.hidden) this.paintPane(d.sel);
  }

  tlRow(i, el) {
    const d = this.detail, s = d?.model.rows()[i]; // a frame drawn after the run was left has no detail
    if (!s) { fill(el); return; }
    el.dataset.i = i;
    el.classList.toggle('sel', d.sel === s);
    el.setAttribute('role', 'listitem');
    el.tabIndex = i === Math.min(d.focusIndex ?? 0, d.model.rows().length - 1) ? 0 : -1;
    const end = s.end ?? d.model.maxAt;
    const usage = s.endE?.usage;
    const label = h('div', { class: 'tl-label' }, h('span', { class: 'k' }, s.kind), h('span', { class: 'nm' + (s.kind === 'tool' ? ' mono' : '') }, s.name), usage ? h('span', { class: 'tk' }, num(usage.total_tokens)) : null);
    label.style.paddingLeft = 10 + s.depth * 14 + 'px';
    const short = s.end == null ? 'running' : dur(end - s.start);
    const full = s.end == null ? short : short + (s.endE?.finish_reason ? ' · ' + s.endE.finish_reason : '') + (s.endE?.retries ? ` · ${s.endE.retries} ${s.endE.retries === 1 ? 'retry' : 'retries'}` : '');
    const place = labelPlace(d, s.start / d.total, end / d.total, full, short);
    const bar = h('div', { class: 'tl-bar' + (s.error ? ' err' : '') + (s.end == null ? ' open' : '') + (place.side === 'right' ? '' : ' lab-' + place.side), 'data-testid': 'timeline-bar', 'data-kind': s.kind, title: `${s.name} · ${full}` },
      h('span', { class: 'tl-d' }, place.text));
    bar.style.left = (100 * s.start) / d.total + '%';
    bar.style.width = Math.max(0, (100 * (end - s.start)) / d.total) + '%';
    fill(el, label, h('div', { class: 'tl-track' }, bar));
  }

  entRow(i, el) {
    const d = this.detail, e = d?.model.entries[i];
    if (!e) { fill(el); return; }
    el.dataset.i = i;
    el.classList.toggle('sel', d.selEntry === e);
    el.setAttribute('role', 'listitem');
    fill(el, h('div', { class: 'ent' },
      h('span', { class: 'seq' }, e.seq), h('span', { class: 'at' }, dur(e.at_ms)),
      h('span', { class: 'kind kind-' + e.kind }, e.kind), h('span', { class: 'sp' }, e.span || ''),
      h('span', { class: 'txt' + (e.error ? ' fail' : '') }, entryText(e))));
  }

  select(s) {
    const d = this.detail;
    if (!s) return;
    d.sel = s;
    d.selIndex = d.model.rows().indexOf(s);
    d.focusIndex = d.selIndex;
    d.vtl.refresh();
    this.paintPane(s);
  }

  selectEntry(e) {
    const d = this.detail;
    if (!e) return;
    d.selEntry = e;
    d.selIndex = d.model.entries.indexOf(e);
    d.vent.refresh();
    const s = d.model.spans.get(e.span);
    d.sel = s || null;
    if (s) this.paintPane(s, e); else this.paintEntry(e);
  }

  // closePane closes the details and gives the focus back to what opened them, as a dialog gives it back to its
  // opener: the timeline's row of the span (its roving tab stop), or the entry list; only when the focus was in the
  // pane, in the lists, or nowhere (not on a tab or a search box).
  closePane() {
    const d = this.detail;
    const i = d.sel ? d.model.rows().indexOf(d.sel) : -1;
    const a = document.activeElement;
    const back = !d.pane.hidden && (!a || a === document.body || d.pane.contains(a) || d.tl.contains(a) || d.ent.contains(a));
    d.pane.hidden = true;
    d.sel = null;
    d.selEntry = null;
    if (d.tab === 'timeline' && i >= 0) {
      d.focusIndex = i;
      d.vtl.scrollTo(i);
    }
    d.vtl.refresh();
    d.vent.refresh();
    if (!back) return;
    if (d.tab !== 'timeline' || i < 0) { (d.tab === 'timeline' ? d.tl : d.ent).focus(); return; }
    d.tl.focus({ preventScroll: true }); // not left on the hidden pane meanwhile
    requestAnimationFrame(() => (d.vtl.rows.get(i) || d.tl).focus()); // after the list drew the row (it draws in a frame too)
  }

  pane(title, ...body) {
    const d = this.detail;
    d.pane.hidden = false;
    fill(d.pane, 
      h('div', { class: 'detail-head' }, h('h2', {}, title), h('button', { class: 'btn ghost icon-only', type: 'button', 'aria-label': 'Close the details (Escape)', onclick: () => this.closePane() }, icon('x'))),
      h('div', { class: 'detail-body' }, body));
  }

  paintEntry(e) { this.pane(`Entry ${e.seq} · ${e.kind}`, h('pre', { class: 'json' }, pretty(e))); }

  paintPane(s, picked) {
    const content = this.detail.model.summary.content;
    const st = s.startE || {}, en = s.endE || {};
    const kv = (pairs) => h('dl', { class: 'kv' }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
    const noContent = content ? null : h('div', { class: 'note' }, NO_CONTENT);
    const section = (label, ...x) => h('div', {}, h('div', { class: 'label' }, label), x);
    const parts = [];
    const timing = [['span', h('span', { class: 'mono' }, s.id)], ['parent', s.parent ? h('span', { class: 'mono' }, s.parent) : ''], ['started', dur(s.start)], ['duration', s.end != null ? dur(s.end - s.start) : 'running']];
    if (s.kind === 'model') {
      parts.push(kv([['model', st.model], ['iteration', st.iteration ?? 0], ['tools offered', st.tools], ...timing, ['finish reason', en.finish_reason], ['tokens', en.usage ? `${num(en.usage.total_tokens)} (${num(en.usage.prompt_tokens)} in · ${num(en.usage.completion_tokens)} out)` : ''], ['error', en.error ? h('span', { class: 'fail' }, en.error) : '']]));
      const retried = s.events.filter((e) => e.kind === 'model_retry');
      if (retried.length) parts.push(section(`Retries · ${retried.length}`, h('pre', {}, retried.map((e) => `${dur(e.at_ms)}  attempt ${e.attempt}: ${e.error || 'failed'} (next after ${dur(e.delay_ms || 0)})`).join('\n'))));
      if (noContent) parts.push(noContent);
      if (st.messages?.length) parts.push(section(`Sent · ${st.messages.length} messages`, h('div', { class: 'msgs' }, st.messages.map((m) => h('div', {},
        h('div', { class: 'role' }, m.role + (m.name ? ' · ' + m.name : '') + (m.tool_call_id ? ' · ' + m.tool_call_id : '')),
        m.content ? h('pre', {}, m.content) : null,
        m.tool_calls?.length ? h('pre', { class: 'json' }, m.tool_calls.map((c) => `${c.name}(${pretty(c.arguments)})`).join('\n')) : null)))));
      if (en.text || en.tool_calls?.length) parts.push(section('Received', en.text ? h('pre', {}, en.text) : null, en.tool_calls?.length ? h('pre', { class: 'json' }, en.tool_calls.map((c) => `${c.name}(${pretty(c.arguments)})  ${c.id}`).join('\n')) : null));
    } else if (s.kind === 'tool') {
      const info = en.info || {};
      parts.push(kv([['tool', h('span', { class: 'mono' }, st.name)], ['source', st.source], ['call id', st.call_id], ...timing,
        ['outcome', s.end == null ? 'running' : s.error ? h('span', { class: 'fail' }, 'error') : h('span', { class: 'pass' }, 'ok')], ['flags', info.flags?.join(', ')], ['approval', info.approval], ['not run', info.not_run], ['duplicate', info.duplicate ? 'yes' : ''], ['truncated', info.truncated ? 'yes' : ''], ['references', info.references]]));
      if (en.error) parts.push(section('Error', h('pre', { class: 'error-note' }, en.error)));
      if (noContent) parts.push(noContent);
      if (st.arguments != null) parts.push(section('Arguments', h('pre', { class: 'json' }, pretty(st.arguments))));
      else if (st.bytes) parts.push(h('div', { class: 'faint' }, `Arguments: ${num(st.bytes)} bytes, not recorded.`));
      if (en.result) parts.push(section('Result', h('pre', {}, en.result)));
      else if (en.bytes) parts.push(h('div', { class: 'faint' }, `Result: ${num(en.bytes)} bytes, not recorded.`));
      if (en.peer_calls?.length) parts.push(section(`The peer's tool calls · ${en.peer} · as its answer reported them`,
        h('table', { class: 'grid peer-calls', 'data-testid': 'peer-calls' }, h('tbody', {}, en.peer_calls.map((c) => h('tr', {},
          h('td', { class: 'mono' }, c.name), h('td', {}, c.ok ? h('span', { class: 'pass' }, 'ok') : h('span', { class: 'fail' }, 'error')),
          h('td', { class: 'num' }, dur(c.duration_ms)), h('td', {}, c.error || '')))))));
    } else {
      parts.push(kv([['agent', st.agent], ['model', st.model], ['conversation', st.conversation_id], ...timing, ['stopped by', en.stopped_by], ['tokens', tokens(en.usage)], ['error', en.error ? h('span', { class: 'fail' }, en.error) : '']]));
      if (noContent) parts.push(noContent);
      if (st.prompt) parts.push(section('Prompt', h('pre', {}, st.prompt)));
    }
    const checks = s.events.filter((e) => e.kind === 'check' && e.check);
    if (checks.length) parts.push(section('Checks', h('div', { class: 'checks' }, checks.map((e) => h('span', { class: 'chip ' + (e.check.passed ? 'ok' : 'err'), title: e.check.detail || '' }, (e.check.passed ? '✓ ' : '✗ ') + e.check.name + (e.check.detail ? ': ' + e.check.detail : ''))))));
    const progress = s.events.filter((e) => e.kind === 'tool_progress' && e.progress);
    if (progress.length) parts.push(section('Progress', h('pre', {}, progress.map((e) => `${dur(e.at_ms)}  ${e.progress.message ?? ''}`).join('\n'))));
    const answer = s.events.find((e) => e.kind === 'answer' && e.answer);
    if (answer) parts.push(section('Answer', h('pre', {}, answer.answer.answer || ''), answer.answer.output != null ? h('pre', { class: 'json' }, pretty(answer.answer.output)) : null));
    const texts = s.events.filter((e) => e.kind === 'text' && e.text);
    if (texts.length && !en.text) parts.push(section('Streamed text', h('pre', {}, texts.map((e) => e.text).join(''))));
    if (picked && !/_(start|end)$/.test(picked.kind)) parts.push(section(`Entry ${picked.seq}`, h('pre', { class: 'json' }, pretty(picked))));
    this.pane(`${s.kind} · ${s.name}`, parts);
  }
}

customElements.define('ah-runs', RunsView);

// trackWidth is the width of a row's track: the axis's, less the timeline's scroll bar.
function trackWidth(d) {
  return Math.max(0, d.axisTrack.clientWidth - (d.tl.offsetWidth - d.tl.clientWidth));
}

// LABEL_GAP is the room between a bar and its label outside it, and the padding of a label inside it (app.css).
const LABEL_GAP = 6;
let measureCtx = null;

// textWidth is how wide text is in the timeline's label font (11px, app.css .tl-d), in pixels.
function textWidth(text, el) {
  if (!measureCtx) {
    measureCtx = document.createElement('canvas').getContext('2d');
    measureCtx.font = '11px ' + getComputedStyle(el).fontFamily;
  }
  return measureCtx.measureText(text).width;
}

// labelPlace says where a bar from..to (fractions of the run) shows its label so that the label is never clipped,
// measured against the track's actual width: inside the bar when it is wide enough, else on the side with room
// (right, then left); when full fits nowhere, short (the duration alone) is tried the same way, and when that fits
// nowhere either it goes on the roomier side.
function labelPlace(d, from, to, full, short) {
  const w = d.trackWidth ?? (d.trackWidth = trackWidth(d));
  if (!w) return { side: 'right', text: full }; // not laid out yet: placed again once it is
  const x0 = from * w, x1 = to * w;
  for (const text of full === short ? [full] : [full, short]) {
    const tw = textWidth(text, d.tl) + 1;
    if (x1 - x0 >= tw + 2 * LABEL_GAP) return { side: 'in', text };
    if (w - x1 >= tw + LABEL_GAP) return { side: 'right', text };
    if (x0 >= tw + LABEL_GAP) return { side: 'left', text };
  }
  return { side: w - x1 >= x0 ? 'right' : 'left', text: short };
}
