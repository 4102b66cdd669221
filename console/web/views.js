// views.js: the views of the rest of the agent: Tools, Servers, Conversations (and A2A tasks) and Evals.
import { h, fill, add, icon, api, session, dur, num, pretty, ago, debounce, empty, copyButton } from './lib.js';

const go = (hash) => document.dispatchEvent(new CustomEvent('navigate', { detail: hash }));

function head(title, ...rest) {
  return h('header', { class: 'view-head' }, h('h1', {}, title), ...rest);
}

function detailPane(title, onClose, ...body) {
  return [h('div', { class: 'detail-head' }, h('h2', {}, title), h('button', { class: 'btn ghost icon-only', type: 'button', 'aria-label': 'Close (Escape)', onclick: onClose }, icon('x'))), h('div', { class: 'detail-body' }, body)];
}

// closePane hides a details pane and gives the focus back to the row that opened it, as a dialog gives it back to
// its opener: when the focus was in the pane (its close button, Escape there), in the list, or nowhere. row finds
// the row at that time: the list may have been painted again meanwhile.
function closePane(pane, list, row) {
  const a = document.activeElement;
  const back = !pane.hidden && (!a || a === document.body || pane.contains(a) || list.contains(a));
  pane.hidden = true;
  const r = row?.();
  if (back && r?.isConnected) r.focus();
}

// rowKeys makes the rows of a table body reachable with the arrow keys and opened with Enter.
function rowKeys(tbody) {
  tbody.addEventListener('keydown', (e) => {
    const tr = e.target.closest('tr');
    if (!tr) return;
    if (e.key === 'Enter' && e.target === tr) tr.click();
    else if (e.key === 'ArrowDown') { e.preventDefault(); tr.nextElementSibling?.focus(); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); tr.previousElementSibling?.focus(); }
  });
}

// ---- Tools ----

class ToolsView extends HTMLElement {
  connectedCallback() {
    if (this.built) return;
    this.built = true;
    this.q = h('input', { class: 'input', type: 'search', placeholder: 'Search tools', 'aria-label': 'Search tools', 'data-testid': 'tools-search', 'data-search': '' });
    this.note = h('span', { class: 'sub' });
    this.tbody = h('tbody');
    rowKeys(this.tbody);
    this.list = h('div', { class: 'list-pane' });
    this.pane = h('aside', { class: 'detail-pane', hidden: true, 'aria-label': 'Tool' });
    add(this, head('Tools', this.note, h('span', { class: 'spacer' }), h('div', { class: 'search' }, icon('search'), this.q)), h('div', { class: 'split' }, this.list, this.pane));
    const load = debounce(() => this.load(), 200);
    this.q.addEventListener('input', load);
    this.q.addEventListener('keydown', (e) => { if (e.key === 'ArrowDown') { e.preventDefault(); this.tbody.firstElementChild?.focus(); } });
  }
  route(_a, _p, fresh) { if (fresh || !this.tools) this.load(); }
  escape() { if (!this.pane.hidden) { this.closePane(); return true; } return false; }
  closePane() { closePane(this.pane, this.list, this.opener); }
  async load() {
    const q = this.q.value.trim();
    const seq = (this.seq = (this.seq || 0) + 1);
    let r;
    try { r = await api('/tools' + (q ? '?q=' + encodeURIComponent(q) : '')); } catch (err) { fill(this.list, h('div', { class: 'error-note' }, err.message)); return; }
    if (seq !== this.seq) return;
    this.tools = r.tools || [];
    const s = r.search || {};
    this.note.textContent = `${this.tools.length} tool${this.tools.length === 1 ? '' : 's'}` + (q ? (s.on ? ' · ranked by tool search' : ' · matched by name') : '') + (s.reason && !s.on ? ` · tool search off: ${s.reason}` : '');
    if (!this.tools.length) {
      fill(this.list, q ? empty(`No tool matches “${q}”`, 'Try another word, or clear the search to see every tool.', 'search') : empty('The agent has no tools', 'Add MCP servers, A2A peers or built-ins in agent.toml; their tools are listed here.', 'tools'));
      return;
    }
    fill(this.tbody, ...this.tools.map((t) => h('tr', { tabindex: 0, 'data-testid': 'tool-row', 'data-name': t.name, onclick: () => this.open(t) },
      h('td', {}, h('span', { class: 'mono' }, t.name), t.title && t.title !== t.name ? h('div', { class: 'faint' }, t.title) : null),
      h('td', { class: 'muted' }, t.source || ''),
      h('td', { class: 'ellipsis muted', title: t.description || '' }, t.description || ''),
      h('td', {}, h('span', { class: 'checks' }, (t.flags || []).map((f) => h('span', { class: 'chip' + (f === 'require_approval' ? ' warn' : '') }, f)))),
      h('td', {}, t.pinned ? h('span', { class: 'chip ok' }, 'pinned') : null),
      q && t.score != null ? h('td', { class: 'num faint' }, t.score.toFixed(2)) : null)));
    fill(this.list, h('table', { class: 'grid', 'aria-label': 'Tools' }, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Source'), h('th', {}, 'Description'), h('th', {}, 'Flags'), h('th', {}, 'Pinned'), q && this.tools[0]?.score != null ? h('th', { class: 'num' }, 'Score') : null)), this.tbody));
  }
  open(t) {
    for (const tr of this.tbody.children) tr.setAttribute('aria-selected', String(tr.dataset.name === t.name));
    this.pane.hidden = false;
    this.opener = () => this.tbody.querySelector(`tr[data-name="${CSS.escape(t.name)}"]`);
    fill(this.pane, ...detailPane(t.name, () => this.closePane(), 
      t.description ? h('p', { class: 'muted' }, t.description) : null,
      h('dl', { class: 'kv' }, h('dt', {}, 'source'), h('dd', {}, t.source || '—'), h('dt', {}, 'flags'), h('dd', {}, (t.flags || []).join(', ') || '—'), h('dt', {}, 'pinned'), h('dd', {}, t.pinned ? 'yes' : 'no')),
      h('div', {}, h('div', { class: 'label' }, 'Input schema'), h('pre', { class: 'json' }, pretty(t.input_schema) || '{}')),
      t.output_schema ? h('div', {}, h('div', { class: 'label' }, 'Output schema'), h('pre', { class: 'json' }, pretty(t.output_schema))) : null));
  }
}

// ---- Servers ----

const STATE = { connected: 'Connected', connecting: 'Connecting', reconnecting: 'Reconnecting', failed: 'Failed', needs_login: 'Needs login', disabled: 'Disabled' };

class ServersView extends HTMLElement {
  connectedCallback() {
    if (this.built) return;
    this.built = true;
    this.note = h('span', { class: 'sub' });
    this.body = h('div', { class: 'view-body' });
    add(this, head('Servers', this.note), this.body);
  }
  // The view polls only while it is shown and the tab is visible: deactivate (the view hidden, or the page signed
  // out) and disconnectedCallback stop it.
  route() {
    this.deactivate();
    this.load();
    this.timer = setInterval(() => { if (!document.hidden) this.load(); }, 3000);
  }
  deactivate() { clearInterval(this.timer); this.timer = null; }
  disconnectedCallback() { this.deactivate(); }
  async load() {
    let r;
    try { r = await api('/servers'); } catch (err) { fill(this.body, h('div', { class: 'error-note' }, err.message)); return; }
    const list = r.servers || [];
    const up = list.filter((s) => s.state === 'connected').length;
    this.note.textContent = list.length ? `${up} of ${list.length} connected · refreshed every 3 s` : '';
    if (!list.length) { fill(this.body, empty('No MCP servers or A2A peers', 'Add [[mcp_servers]] or [[a2a_peers]] to agent.toml to give the agent tools from them.', 'servers')); return; }
    const card = (s) => h('div', { class: 'card', 'data-testid': 'server-row', 'data-state': s.state, 'data-name': s.name },
      h('div', { class: 'card-head' }, h('span', { class: 'dot ' + s.state, role: 'img', 'aria-label': STATE[s.state] || s.state }), h('span', { class: 'nm' }, s.name),
        h('span', { class: 'badge' }, s.kind === 'a2a' ? 'A2A peer' : 'MCP'), h('span', { class: 'state' }, STATE[s.state] || s.state)),
      h('div', { class: 'sub mono' }, [s.transport, s.url].filter(Boolean).join(' · ')),
      h('div', { class: 'sub' }, s.tools != null ? `${num(s.tools)} tool${s.tools === 1 ? '' : 's'}` : ''),
      s.error ? h('div', { class: 'err-text' }, s.error) : null,
      s.state === 'needs_login' && s.login ? h('div', {}, h('div', { class: 'label' }, 'Sign in from a terminal'), h('div', { class: 'codeblock' }, h('pre', { class: 'mono' }, s.login), copyButton(() => s.login, 'Copy the command'))) : null);
    const mcp = list.filter((s) => s.kind !== 'a2a'), a2a = list.filter((s) => s.kind === 'a2a');
    fill(this.body, 
      mcp.length ? h('div', { class: 'section-title' }, 'MCP servers') : null, mcp.length ? h('div', { class: 'cards' }, mcp.map(card)) : null,
      a2a.length ? h('div', { class: 'section-title' }, 'A2A peers') : null, a2a.length ? h('div', { class: 'cards' }, a2a.map(card)) : null);
  }
}

// ---- Conversations ----

class ConversationsView extends HTMLElement {
  connectedCallback() {
    if (this.built) return;
    this.built = true;
    this.list = h('div', { class: 'list-pane' });
    this.pane = h('aside', { class: 'detail-pane', hidden: true, 'aria-label': 'Conversation' });
    this.note = h('span', { class: 'sub' });
    add(this, head('Conversations', this.note), h('div', { class: 'split' }, this.list, this.pane));
  }
  route(arg) { this.load(); if (arg) this.open(arg); }
  escape() { if (!this.pane.hidden) { this.closePane(); return true; } return false; }
  closePane() { closePane(this.pane, this.list, this.opener); }
  async load() {
    const f = session.data?.features || {};
    if (f.state === false) { fill(this.list, empty('Conversations are not kept', 'Configure [state] in agent.toml (SQLite or Postgres) to keep conversations and continue them later.', 'conversations')); return; }
    let r, tasks = null;
    try {
      r = await api('/conversations');
      if (f.tasks) tasks = (await api('/tasks')).tasks || [];
    } catch (err) { fill(this.list, h('div', { class: 'error-note' }, err.message)); return; }
    const list = r.conversations || [];
    this.note.textContent = list.length ? `${list.length} conversation${list.length === 1 ? '' : 's'}` : '';
    const tbody = h('tbody');
    rowKeys(tbody);
    add(tbody, ...list.map((c) => h('tr', { tabindex: 0, 'data-testid': 'conversation-row', 'data-id': c.id, onclick: () => this.open(c.id) },
      h('td', { class: 'ellipsis' }, c.title || h('span', { class: 'mono' }, c.id)),
      h('td', { class: 'num' }, num(c.messages)),
      h('td', { class: 'muted', title: new Date(c.updated || c.created).toLocaleString() }, ago(c.updated || c.created)))));
    const parts = [list.length
      ? h('table', { class: 'grid', 'aria-label': 'Conversations' }, h('thead', {}, h('tr', {}, h('th', {}, 'Title'), h('th', { class: 'num' }, 'Messages'), h('th', {}, 'Updated'))), tbody)
      : empty('No conversations yet', 'Conversations started in Chat, over MCP or over A2A are kept here; continue any of them from here.', 'conversations')];
    if (tasks) {
      parts.push(h('div', { class: 'section-title' }, 'A2A tasks'));
      parts.push(tasks.length ? h('table', { class: 'grid', 'aria-label': 'A2A tasks' }, h('thead', {}, h('tr', {}, h('th', {}, 'Task'), h('th', {}, 'Context'), h('th', {}, 'State'), h('th', {}, 'Updated'))),
        this.taskRows(tasks))
        : h('p', { class: 'muted pad' }, 'No A2A tasks yet: tasks appear when A2A clients call the agent (agenthost serve --a2a).'));
    }
    fill(this.list, ...parts);
  }
  taskRows(tasks) {
    const tbody = h('tbody', {}, tasks.map((t) => h('tr', { tabindex: 0, 'data-testid': 'task-row', 'data-task': t.id, onclick: () => this.openTask(t.id) },
      h('td', { class: 'mono' }, t.id), h('td', { class: 'mono muted' }, t.context_id || ''), h('td', {}, h('span', { class: 'chip' }, t.state)), h('td', { class: 'muted' }, ago(t.updated || t.created)))));
    rowKeys(tbody);
    return tbody;
  }
  select(attr, id) {
    for (const tr of this.list.querySelectorAll('tr[data-id], tr[data-task]')) tr.setAttribute('aria-selected', String(tr.getAttribute(attr) === id));
  }
  // openTask shows an A2A task as stored: its state, its messages and its artifacts, each part as text, or as
  // pretty JSON when structured, and the whole task's JSON below.
  async openTask(id) {
    this.select('data-task', id);
    this.pane.hidden = false;
    this.opener = () => this.list.querySelector(`tr[data-task="${CSS.escape(id)}"]`);
    const close = () => this.closePane();
    fill(this.pane, ...detailPane('A2A task', close, h('div', { class: 'faint' }, 'Loading…')));
    let t;
    try { t = await api('/tasks/' + encodeURIComponent(id)); } catch (err) { fill(this.pane, ...detailPane('A2A task', close, h('div', { class: 'error-note' }, err.message))); return; }
    const part = (p) => {
      if (typeof p?.text === 'string') return h('pre', {}, p.text);
      if (p?.data !== undefined) return h('pre', { class: 'json' }, pretty(p.data));
      return h('pre', { class: 'json' }, pretty(p));
    };
    const message = (m) => h('div', { 'data-testid': 'task-message' }, h('div', { class: 'role' }, String(m.role || '').replace(/^ROLE_/, '').toLowerCase() || 'message'), (m.parts || []).map(part));
    const state = t.status?.state || t.state || '';
    const history = Array.isArray(t.history) ? t.history : [];
    const status = t.status?.message && !history.some((m) => m.messageId && m.messageId === t.status.message.messageId) ? [t.status.message] : [];
    const msgs = [...history, ...status];
    const arts = Array.isArray(t.artifacts) ? t.artifacts : [];
    fill(this.pane, ...detailPane('A2A task', close,
      h('div', { class: 'mono faint' }, id),
      h('dl', { class: 'kv' }, h('dt', {}, 'state'), h('dd', {}, h('span', { class: 'chip', 'data-testid': 'task-state' }, String(state).replace(/^TASK_STATE_/, '').toLowerCase())),
        h('dt', {}, 'context'), h('dd', { class: 'mono' }, t.contextId || t.context_id || '—')),
      h('div', { class: 'label' }, 'Messages'),
      msgs.length ? h('div', { class: 'msgs' }, msgs.map(message)) : h('div', { class: 'faint' }, 'No messages.'),
      arts.length ? h('div', { class: 'label' }, 'Artifacts') : null,
      arts.length ? h('div', { class: 'msgs' }, arts.map((a) => h('div', { 'data-testid': 'task-artifact' }, h('div', { class: 'role' }, a.name || a.artifactId || 'artifact'), (a.parts || []).map(part)))) : null,
      h('details', {}, h('summary', { class: 'label' }, 'As stored'), h('pre', { class: 'json' }, pretty(t)))));
    this.pane.querySelector('button')?.focus();
  }
  async open(id) {
    this.select('data-id', id);
    this.pane.hidden = false;
    this.opener = () => this.list.querySelector(`tr[data-id="${CSS.escape(id)}"]`);
    const close = () => this.closePane();
    fill(this.pane, ...detailPane('Conversation', close, h('div', { class: 'faint' }, 'Loading…')));
    let c;
    try { c = await api('/conversations/' + encodeURIComponent(id)); } catch (err) { fill(this.pane, ...detailPane('Conversation', close, h('div', { class: 'error-note' }, err.message))); return; }
    const cont = h('button', { class: 'btn primary', type: 'button', 'data-testid': 'conversation-continue', onclick: () => go('#/chat?c=' + encodeURIComponent(id)) }, icon('chat'), 'Continue');
    const del = h('button', { class: 'btn danger', type: 'button', 'data-testid': 'conversation-delete', onclick: () => this.remove(id) }, icon('trash'), 'Delete');
    const msgs = (c.messages || []).filter((m) => m.role !== 'system');
    fill(this.pane, ...detailPane('Conversation', close,
      h('div', { class: 'mono faint' }, id),
      h('div', { class: 'checks' }, cont, del),
      msgs.length ? h('div', { class: 'msgs' }, msgs.map((m) => h('div', {},
        h('div', { class: 'role' }, m.role + (m.name ? ' · ' + m.name : '')),
        m.content ? h('pre', {}, m.content) : null,
        m.tool_calls?.length ? h('pre', { class: 'json' }, m.tool_calls.map((t) => `${t.name}(${pretty(t.arguments)})`).join('\n')) : null))) : h('div', { class: 'faint' }, 'No messages.')));
    cont.focus();
  }
  remove(id) {
    const ok = h('button', { class: 'btn danger solid', type: 'button', 'data-testid': 'confirm-delete' }, 'Delete');
    const cancel = h('button', { class: 'btn', type: 'button' }, 'Cancel');
    const err = h('div', { class: 'form-error', role: 'alert' });
    const dlg = h('dialog', { 'aria-labelledby': 'del-title' }, h('h2', { id: 'del-title' }, 'Delete this conversation?'), h('p', { class: 'muted' }, 'Its messages are removed from the state database. This cannot be undone.'), err, h('div', { class: 'row' }, cancel, ok));
    cancel.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => dlg.remove());
    ok.addEventListener('click', async () => {
      ok.disabled = true;
      try { await api('/conversations/' + encodeURIComponent(id), { method: 'DELETE' }); dlg.close(); this.pane.hidden = true; this.load();
        // The chat, showing this conversation, starts afresh.
        document.dispatchEvent(new CustomEvent('agenthost:conversation-deleted', { detail: { id } })); } catch (x) { err.textContent = x.message; ok.disabled = false; }
    });
    add(document.body, dlg);
    dlg.showModal();
    cancel.focus();
  }
}

// ---- Evals ----

class EvalsView extends HTMLElement {
  connectedCallback() {
    if (this.built) return;
    this.built = true;
    this.list = h('div', {});
    this.result = h('div', {});
    add(this, head('Evals'), h('div', { class: 'view-body' }, this.list, this.result));
  }
  disconnectedCallback() { this.deactivate(); }
  // route lists the datasets again when the view is opened, and follows the eval run shown, if it still runs: one
  // poller at most, whichever way the view was left and opened again.
  route(_a, _p, fresh) {
    if (fresh) this.load();
    if (this.shown?.status === 'running') this.follow(this.shown.id);
  }
  // deactivate stops the poller: the view is hidden (or the page signed out).
  deactivate() { clearTimeout(this.timer); this.timer = null; this.polling = null; }
  async load() {
    if (session.data?.features && session.data.features.evals === false) {
      fill(this.list, empty('No eval datasets', 'Name JSON-lines datasets in [eval] datasets in agent.toml; run them here and see which cases fail.', 'evals'));
      return;
    }
    let r;
    try { r = await api('/evals'); } catch (err) { fill(this.list, h('div', { class: 'error-note' }, err.message)); return; }
    const ds = r.datasets || [];
    if (!ds.length) { fill(this.list, empty('No eval datasets', 'Name JSON-lines datasets in [eval] datasets in agent.toml; run them here and see which cases fail.', 'evals')); return; }
    fill(this.list, h('div', { class: 'section-title' }, 'Datasets'), h('div', { class: 'cards' }, ds.map((d) => {
      const run = h('button', { class: 'btn primary sm', type: 'button', 'data-testid': 'eval-run', 'data-name': d.name, disabled: !!d.error || this.shown?.status === 'running' }, icon('play'), 'Run');
      run.addEventListener('click', () => this.run(d));
      return h('div', { class: 'card', 'data-testid': 'eval-dataset' },
        h('div', { class: 'card-head' }, h('span', { class: 'nm' }, d.name), h('span', { class: 'state' }, d.error ? '' : `${num(d.cases)} cases`)),
        h('div', { class: 'sub mono' }, d.path),
        d.error ? h('div', { class: 'err-text' }, d.error) : h('div', {}, run));
    })));
  }
  runButtons(disabled) { for (const b of this.list.querySelectorAll('[data-testid="eval-run"]')) b.disabled = disabled || !!b.closest('.card')?.querySelector('.err-text'); }
  async run(d) {
    this.deactivate();
    this.runButtons(true);
    this.shown = null;
    fill(this.result, h('div', { class: 'section-title' }, d.name), h('p', { class: 'faint pad' }, 'Starting…'));
    let id;
    try { id = (await api(`/evals/${encodeURIComponent(d.name)}/run`, { method: 'POST' })).id; } catch (err) { fill(this.result, h('div', { class: 'error-note' }, err.message)); this.runButtons(false); return; }
    this.shown = { id, dataset: d.name, status: 'running', total: d.cases };
    if (!this.hidden) this.follow(id);
  }
  // follow polls eval run id once a second until it ends or the view is left; a second call for the run already
  // followed does nothing, and a poll of a run no longer followed paints nothing.
  follow(id) {
    if (this.polling === id) return;
    this.deactivate();
    const token = (this.polling = id);
    const poll = async () => {
      this.timer = null;
      let r;
      try { r = await api('/evals/runs/' + encodeURIComponent(id)); } catch (err) {
        if (this.polling !== token) return;
        add(this.result, h('div', { class: 'error-note' }, err.message));
        this.polling = null;
        this.runButtons(false);
        return;
      }
      if (this.polling !== token) return;
      this.shown = r;
      this.paint(r);
      if (r.status === 'running') this.timer = setTimeout(poll, 1000);
      else { this.polling = null; this.runButtons(false); }
    };
    poll();
  }
  async cancel(id, btn) {
    btn.disabled = true;
    try { await api('/evals/runs/' + encodeURIComponent(id) + '/cancel', { method: 'POST' }); } catch (err) {
      // 409: it ended meanwhile; the next poll shows how.
      if (err.status !== 409) { add(this.result, h('div', { class: 'error-note' }, err.message)); btn.disabled = false; return; }
    }
    // Show the end now rather than at the next tick.
    if (this.polling === id) { this.deactivate(); this.follow(id); }
  }
  paint(r) {
    const rep = r.report || { cases: [] };
    const cases = rep.cases || [];
    const bar = h('div', {});
    bar.style.width = (r.total ? (100 * cases.length) / r.total : 0) + '%';
    const rows = cases.map((c) => h('tr', { class: 'static', 'data-testid': 'eval-case', 'data-passed': String(!!c.passed), 'data-name': c.name },
      h('td', {}, h('span', { class: c.passed ? 'pass' : 'fail' }, c.passed ? 'pass' : 'fail')),
      h('td', {}, h('div', {}, c.name || `line ${c.line}`), !c.passed && (c.failures?.length || c.error) ? h('ul', { class: 'failures' }, (c.failures || []).map((f) => h('li', {}, f)), c.error ? h('li', {}, c.error) : null) : null),
      h('td', { class: 'muted' }, (c.tools_called || []).join(', ')),
      h('td', { class: 'num' }, dur(c.duration_ms))));
    const cancel = r.status === 'running' ? h('button', { class: 'btn danger sm', type: 'button', 'data-testid': 'eval-cancel' }, icon('stop'), 'Cancel') : null;
    cancel?.addEventListener('click', () => this.cancel(r.id, cancel));
    fill(this.result, 
      h('div', { class: 'section-title' }, `${r.dataset} · `, h('span', { 'data-testid': 'eval-status', 'data-status': r.status }, r.status), cancel ? ' ' : null, cancel),
      h('div', { class: 'run-head' },
        h('div', { class: 'stats' }, h('span', {}, 'cases ', h('b', {}, `${cases.length}/${r.total || '?'}`)), h('span', { class: 'pass' }, `${rep.passed || 0} passed`), h('span', { class: 'fail' }, `${rep.failed || 0} failed`)),
        h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': r.total || 0, 'aria-valuenow': cases.length }, bar),
        r.error ? h('div', { class: 'error-note' }, r.error) : null),
      cases.length ? h('table', { class: 'grid', 'aria-label': 'Cases' }, h('thead', {}, h('tr', {}, h('th', {}, 'Result'), h('th', {}, 'Case'), h('th', {}, 'Tools called'), h('th', { class: 'num' }, 'Duration'))), h('tbody', {}, rows)) : null);
  }
}

customElements.define('ah-tools', ToolsView);
customElements.define('ah-servers', ServersView);
customElements.define('ah-conversations', ConversationsView);
customElements.define('ah-evals', EvalsView);
