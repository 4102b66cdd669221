// chat.js: the Chat view. A message starts a run (POST /api/chat); the page follows its entries over SSE and
// renders them as they come, batched per animation frame: the answer streams from the root run's text, tool calls
// become collapsible steps (nested under the tool that started a sub-agent or peer run), approvals get buttons.
import { h, fill, add, icon, api, APIError, session, dur, num, pretty, tokens, frameBatch, empty } from './lib.js';
import { render, stripSources } from './md.js';

// Turn is one message and the run that answers it.
class Turn {
  constructor(chat, text) {
    this.chat = chat;
    this.spans = new Map(); // span id -> {kind, parent, el (tool step), children (container)}
    this.root = '';
    this.texts = []; // streamed text, one piece per model call of the root run
    this.textSpan = '';
    this.refCount = 0; // how many references the root run's tool calls returned: the sources its answer may cite
    this.lastSeq = 0;
    this.approvals = new Map();
    this.waiting = new Set(); // the ids of the approvals and questions not answered yet
    this.steps = h('div', { class: 'steps' });
    this.answer = h('div', { class: 'answer' });
    this.extra = h('div', { class: 'msg-extra' });
    this.meta = h('div', { class: 'meta', 'data-testid': 'run-state' });
    this.el = h('article', { class: 'turn' },
      text != null ? h('div', { class: 'msg-user' }, text) : null,
      h('div', { class: 'msg-agent' }, this.steps, this.answer, this.extra, this.meta));
    this.answer.addEventListener('click', (e) => {
      const a = e.target.closest('a[data-ref]');
      if (!a) return;
      e.preventDefault();
      const li = this.extra.querySelector(`li[data-n="${a.dataset.ref}"]`);
      if (li) { li.scrollIntoView({ block: 'nearest', behavior: 'smooth' }); li.classList.add('flash'); setTimeout(() => li.classList.remove('flash'), 1200); }
    });
  }

  follow(runID) {
    this.runID = runID;
    this.paintState();
    this.answer.classList.add('streaming');
    this.push = frameBatch((entries) => this.apply(entries));
    // The view may have been left (or the page signed out) while the message was being sent: the run is then
    // followed once the view is shown again.
    this.paused = !this.chat.active;
    if (!this.paused) this.listen();
  }

  // pause stops following the run (the view is hidden, or the page signs out): its stream closes now, its polling
  // stops; resume follows it again from the last entry applied.
  pause() {
    this.paused = true;
    this.es?.close();
    this.es = null;
  }

  resume() {
    if (!this.paused) return;
    this.paused = false;
    if (!this.finished && this.runID && !this.polling) this.listen();
  }

  // listen follows the run's events after the last entry applied. When the browser gives the stream up (a 429 or a
  // 401 on reconnect), the run may go on: the page then polls the run until it ends, following it again between.
  listen() {
    const es = new EventSource(`/api/runs/${encodeURIComponent(this.runID)}/events?after=${this.lastSeq}`);
    this.es = es;
    es.addEventListener('entry', (m) => { try { this.push(JSON.parse(m.data)); } catch { /* a broken line is skipped */ } });
    es.addEventListener('end', (m) => {
      es.close();
      let s = null;
      try { s = JSON.parse(m.data); } catch { /* the summary is optional */ }
      this.push({ kind: '_end', summary: s });
    });
    es.onerror = () => { if (es.readyState === EventSource.CLOSED && !this.finished && !this.paused) this.poll(); };
  }

  // poll reads the run (GET /api/runs/{id}) until it has ended, its entries applied as they come, and follows its
  // events again once a read succeeds while it runs. A 401 shows the sign-in (lib.js api); the polling goes on.
  async poll() {
    if (this.polling) return;
    this.polling = true;
    for (let wait = 500; !this.finished && !this.paused; wait = Math.min(wait * 2, 8000)) {
      await new Promise((r) => setTimeout(r, wait));
      if (this.finished || this.paused) break;
      let r;
      try { r = await api(`/runs/${encodeURIComponent(this.runID)}`); } catch (err) {
        // A run ended while the view was hidden may have been dropped from those kept since: it is over.
        if (err instanceof APIError && err.status === 404) {
          this.push({ kind: '_end', summary: { status: 'gone', error: 'The run is no longer kept; its conversation has its answer.' } });
          break;
        }
        continue;
      }
      for (const e of r.entries || []) if (e.seq > this.lastSeq) this.push(e);
      if (r.run && r.run.status !== 'running') { this.push({ kind: '_end', summary: r.run }); break; }
      if (this.paused) break;
      this.polling = false;
      this.listen();
      return;
    }
    this.polling = false;
  }

  apply(entries) {
    let textChanged = false;
    for (const e of entries) {
      if (e.kind === '_end') { this.finish(e.summary); continue; }
      if (e.seq && e.seq <= this.lastSeq) continue;
      if (e.seq) this.lastSeq = e.seq;
      textChanged = this.entry(e) || textChanged;
    }
    if (textChanged) this.paintAnswer();
    this.chat.stick();
  }

  // entry applies one entry and says whether the answer's text changed.
  entry(e) {
    switch (e.kind) {
      case 'run_start':
        if (!this.root) {
          this.root = e.span;
          if (e.conversation_id) this.conversationID = e.conversation_id;
          this.spans.set(e.span, { kind: 'run', children: this.steps });
          return false;
        }
        this.spans.set(e.span, { kind: 'run', parent: e.parent });
        if (e.agent) this.subLabel(e);
        return false;
      case 'model_start':
        this.spans.set(e.span, { kind: 'model', parent: e.parent });
        return false;
      case 'text': {
        const s = this.spans.get(e.span);
        const own = e.span === this.root || ((e.parent === this.root || s?.parent === this.root) && (!s || s.kind === 'model'));
        if (!own || !e.text) return false;
        // Text under the root run itself (what the host sends after the model call: held-back citation text, the
        // sources) continues the last piece; each model call of the root run starts one.
        if (e.span === this.root) { this.rootText = true; if (!this.texts.length) this.texts.push(''); }
        else if (this.textSpan !== e.span) { this.textSpan = e.span; this.texts.push(''); }
        this.texts[this.texts.length - 1] += e.text;
        return true;
      }
      case 'tool_start': this.toolStart(e); return false;
      case 'tool_progress': this.toolProgress(e); return false;
      case 'tool_end':
        this.toolEnd(e);
        // The references' titles and links come with the answer; until then a marker up to their count is pending.
        if (e.parent === this.root && e.info?.references > 0) this.refCount += e.info.references;
        return false;
      case 'approval': this.approval(e); return false;
      case 'approval_done': this.approvalDone(e); return false;
      case 'check': if (e.check) this.checks = [...(this.checks || []), e.check]; return false;
      case 'answer':
        if (e.span !== this.root || !e.answer) return false;
        this.final = e.answer;
        return true;
      case 'run_end':
        if (e.span === this.root) this.end = e;
        return false;
      default: return false;
    }
  }

  container(span) {
    for (let id = span, guard = 0; id && guard < 64; guard++) {
      const s = this.spans.get(id);
      if (!s) break;
      if (s.children) return s.children;
      id = s.parent;
    }
    return this.steps;
  }

  subLabel(e) {
    const box = this.container(e.parent);
    const parent = this.spans.get(e.parent);
    if (parent && parent.kind === 'tool' && parent.sub) {
      parent.agent = 'runs agent ' + e.agent;
      parent.sub.textContent = parent.agent;
      parent.sub.hidden = false;
    }
    return box;
  }

  toolStart(e) {
    const state = h('span', { class: 'state-icon' }, h('span', { class: 'spinner' }));
    const note = h('span', { class: 'step-note' }, e.source ? e.source : '');
    const time = h('span', { class: 'step-time' });
    const args = e.arguments != null
      ? [h('div', { class: 'label' }, 'Arguments'), h('pre', { class: 'json' }, pretty(e.arguments))]
      : [h('div', { class: 'faint' }, e.bytes ? `Arguments not recorded (${num(e.bytes)} bytes).` : 'No arguments.')];
    const body = h('div', { class: 'step-body' }, args);
    const children = h('div', { class: 'step-children' });
    const sub = h('div', { class: 'step-sub', hidden: true });
    const el = h('div', { class: 'step', 'data-testid': 'tool-step', 'data-state': 'running', 'data-name': e.name || '', 'data-span': e.span },
      h('details', {}, h('summary', {}, icon('chevron', 'chev'), state, h('span', { class: 'step-name' }, e.name || 'tool'), note, time), body),
      sub, children);
    this.spans.set(e.span, { kind: 'tool', parent: e.parent, el, state, note, time, body, children, sub, source: e.source || '' });
    this.container(e.parent).append(el);
  }

  toolProgress(e) {
    const s = this.spans.get(e.span);
    const p = e.progress;
    if (!s || !p) return;
    const msg = p.message ?? '';
    const n = p.progress, total = p.total;
    s.sub.hidden = false;
    s.sub.textContent = [s.agent, msg, total ? `${Math.round((100 * n) / total)}%` : n ? String(n) : ''].filter(Boolean).join(' · ');
  }

  toolEnd(e) {
    const s = this.spans.get(e.span);
    if (!s) return;
    const ok = e.ok !== false && !e.error;
    s.el.dataset.state = ok ? 'ok' : 'error';
    fill(s.state, icon(ok ? 'check' : 'x'));
    s.time.textContent = dur(e.duration_ms);
    if (!ok) s.note.textContent = e.error || 'failed';
    // The progress goes; which agent the tool ran stays.
    s.sub.textContent = s.agent || '';
    s.sub.hidden = !s.agent;
    const info = e.info || {};
    if (info.approval) s.note.textContent = (s.note.textContent ? s.note.textContent + ' · ' : '') + info.approval;
    if (e.error) add(s.body, h('div', { class: 'label' }, 'Error'), h('pre', { class: 'error-note' }, e.error));
    if (e.result) add(s.body, h('div', { class: 'label' }, 'Result'), h('pre', {}, e.result));
    else if (e.bytes) add(s.body, h('div', { class: 'faint' }, `Result not recorded (${num(e.bytes)} bytes).`));
    if (e.peer_calls?.length) this.peerSteps(s, e);
  }

  // peerSteps nests under an A2A peer's step the tool calls of the peer's own run, as the peer's answer reported
  // them: done by the time they are known, so without arguments or a live state.
  peerSteps(s, e) {
    s.agent = `peer ${e.peer} ran ${e.peer_calls.length} ${e.peer_calls.length === 1 ? 'tool call' : 'tool calls'}`;
    s.sub.textContent = s.agent;
    s.sub.hidden = false;
    for (const c of e.peer_calls) {
      add(s.children, h('div', { class: 'step', 'data-testid': 'peer-step', 'data-state': c.ok ? 'ok' : 'error', 'data-name': c.name || '' },
        h('div', { class: 'peer-step' }, h('span', { class: 'state-icon' }, icon(c.ok ? 'check' : 'x')), h('span', { class: 'step-name' }, c.name || 'tool'),
          h('span', { class: 'step-note' }, c.error || (c.source ? c.source : '')), h('span', { class: 'step-time' }, dur(c.duration_ms)))));
    }
  }

  approval(e) {
    const w = e.approval;
    if (!w) return;
    const card = h('div', { class: 'approval', role: 'group', 'aria-label': w.type === 'elicitation' ? 'Question from a tool' : 'Approval needed' });
    const status = h('div', { class: 'form-error', role: 'status' });
    const send = async (body, buttons) => {
      for (const b of buttons) b.disabled = true;
      status.textContent = '';
      try {
        await api(`/runs/${encodeURIComponent(this.runID)}/answer`, { method: 'POST', body: { id: w.id, ...body } });
      } catch (err) {
        status.textContent = err.message;
        for (const b of buttons) b.disabled = false;
      }
    };
    if (w.type === 'elicitation') {
      const fields = elicitationFields(w.schema);
      const accept = h('button', { class: 'btn primary sm', type: 'submit' }, 'Accept');
      const decline = h('button', { class: 'btn sm', type: 'button' }, 'Decline');
      const cancel = h('button', { class: 'btn ghost sm', type: 'button' }, 'Cancel');
      const all = [accept, decline, cancel];
      const form = h('form', { class: 'row' }, fields.map((f) => f.el), accept, decline, cancel);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const content = {};
        for (const f of fields) { const v = f.value(); if (v !== undefined) content[f.name] = v; }
        send({ action: 'accept', content }, all);
      });
      decline.addEventListener('click', () => send({ action: 'decline' }, all));
      cancel.addEventListener('click', () => send({ action: 'cancel' }, all));
      add(card, h('div', { class: 'q' }, w.message || 'A tool asks for input'), w.tool ? h('div', { class: 'faint' }, `from ${w.tool}${w.source ? ' · ' + w.source : ''}`) : null, form, status);
    } else {
      const approve = h('button', { class: 'btn primary sm', type: 'button', 'data-testid': 'approve' }, icon('check'), 'Approve');
      const deny = h('button', { class: 'btn danger sm', type: 'button', 'data-testid': 'deny' }, icon('x'), 'Deny');
      approve.addEventListener('click', () => send({ approved: true }, [approve, deny]));
      deny.addEventListener('click', () => send({ approved: false }, [approve, deny]));
      add(card, 
        h('div', { class: 'q' }, 'Run ', h('span', { class: 'mono' }, w.tool || 'a tool'), w.source ? h('span', { class: 'muted' }, ` from ${w.source}`) : null, '?'),
        w.message ? h('div', {}, w.message) : null,
        w.arguments != null ? h('pre', { class: 'json' }, pretty(w.arguments)) : null,
        h('div', { class: 'row' }, approve, deny), status);
    }
    card.dataset.type = w.type === 'elicitation' ? 'elicitation' : 'approval';
    this.approvals.set(w.id, card);
    this.waiting.add(w.id);
    this.paintState();
    // A nested run's question goes under the tool step that started that run.
    add(this.container(e.parent || this.root), card);
    card.querySelector('button, input, select')?.focus({ preventScroll: true });
  }

  approvalDone(e) {
    const a = e.answered;
    const card = a && this.approvals.get(a.id);
    if (!card) return;
    this.waiting.delete(a.id);
    this.paintState();
    // A person approves or denies: an approval "cancelled" is the run ending (Stop) before anyone answered.
    if (card.dataset.type === 'approval' && a.action === 'cancel') {
      endedCard(card);
      return;
    }
    card.classList.add('answered');
    const what = a.action ? { accept: 'Accepted', decline: 'Declined', cancel: 'Cancelled' }[a.action] || a.action : a.approved ? 'Approved' : 'Denied';
    for (const el of card.querySelectorAll('.row, form, .form-error')) el.remove();
    add(card, h('div', { class: 'muted' }, what));
  }

  // paintState shows, while the run goes, whether it works (a spinner) or waits for the person's answer (no spinner:
  // nothing happens until they answer).
  paintState() {
    if (this.finished) return;
    const waiting = this.waiting.size > 0;
    this.meta.dataset.state = waiting ? 'waiting' : 'thinking';
    if (waiting) fill(this.meta, icon('history', 'wait-icon'), h('span', {}, this.waiting.size === 1 ? 'Waiting for your answer' : `Waiting for ${this.waiting.size} answers`));
    else fill(this.meta, h('span', { class: 'spinner' }), h('span', {}, 'Thinking…'));
  }

  paintAnswer() {
    const refs = this.final?.references || [];
    if (this.final && this.final.output != null) {
      // A structured answer is its validated value; its text is the same value, not shown twice.
      fill(this.answer, h('div', { class: 'label' }, 'Structured answer'), h('pre', { class: 'json', 'data-testid': 'structured-answer' }, pretty(this.final.output)));
    } else {
      // While streaming, the host's own text (under the root run) may end with its "Sources:" list: not shown. A
      // marker streamed before the answer's references are known is a pending citation, never a link: its number
      // is the reference's in the answer (by first citation), not a tool's, so only the answer says which it is.
      const text = this.final ? stripSources(this.final.answer || '', refs) : stripSources(this.texts.filter(Boolean).join('\n\n'), this.rootText ? [true] : null);
      this.answer.innerHTML = render(text, refs, this.final || this.over ? 0 : this.refCount);
    }
    if (this.final) this.paintExtra();
  }

  paintExtra() {
    const a = this.final;
    const parts = [];
    if (a.references?.length) {
      parts.push(h('ol', { class: 'sources', 'data-testid': 'sources', 'aria-label': 'Sources' },
        a.references.map((r) => h('li', { 'data-n': r.number },
          h('span', { class: 'n' }, `[${r.number}]`),
          /^https?:\/\//.test(r.uri || '')
            ? h('a', { class: 't', href: r.uri, target: '_blank', rel: 'noopener noreferrer' }, r.title || r.uri)
            : h('span', { class: 't' }, r.title || 'untitled source'),
          r.uri && r.title ? h('span', { class: 'u' }, r.uri) : null))));
    }
    const checks = a.checks?.length ? a.checks : this.checks;
    if (checks?.length) {
      parts.push(h('div', { class: 'checks', 'aria-label': 'Checks' }, checks.map((c) =>
        h('span', { class: 'chip ' + (c.passed ? 'ok' : 'err'), title: c.detail || '' }, (c.passed ? '✓ ' : '✗ ') + c.name + (c.detail && !c.passed ? ': ' + c.detail : '')))));
    }
    fill(this.extra, ...parts);
  }

  fail(msg) {
    add(this.extra, h('div', { class: 'error-note', role: 'alert' }, msg));
  }

  finish(summary) {
    if (this.finished) return;
    this.summary = summary;
    this.over = true;
    // Ended without an answer: markers still pending cite nothing known; they read as text.
    if (!this.final && this.refCount && this.texts.length) this.paintAnswer();
    const end = this.end || {};
    const usage = end.usage || this.final?.usage || summary?.usage;
    const stop = end.stopped_by || this.final?.stopped_by || summary?.status;
    const error = end.error || summary?.error;
    if (!this.final && this.texts.length === 0 && !error) fill(this.answer, h('span', { class: 'faint' }, 'No answer.'));
    if (error) this.fail(error);
    if (this.final && !this.extra.childElementCount) this.paintExtra();
    const u = usage || {};
    fill(this.meta, 
      stop ? h('span', { class: 'chip ' + (stop === 'answered' ? '' : stop === 'cancelled' ? 'warn' : 'err') }, stop) : null,
      tokens(u) ? h('span', { title: `${num(u.prompt_tokens)} in · ${num(u.completion_tokens)} out` }, `${tokens(u)} · ${num(u.prompt_tokens)} in · ${num(u.completion_tokens)} out`) : null,
      end.duration_ms ? h('span', {}, dur(end.duration_ms)) : null,
      this.runID ? h('a', { href: '#/runs/' + encodeURIComponent(this.runID) }, 'View run') : null);
    this.done();
  }

  done() {
    this.finished = true;
    this.answer.classList.remove('streaming');
    this.es?.close();
    for (const s of this.spans.values()) if (s.el?.dataset.state === 'running') { s.el.dataset.state = 'error'; fill(s.state, icon('x')); s.note.textContent = 'not finished'; }
    // Questions still waiting can no longer be answered.
    for (const id of this.waiting) endedCard(this.approvals.get(id));
    this.waiting.clear();
    this.chat.runEnded(this);
  }
}

// elicitationFields builds one input per top-level property of an elicitation schema.
function elicitationFields(schemaRaw) {
  let schema = schemaRaw;
  if (typeof schema === 'string') try { schema = JSON.parse(schema); } catch { schema = {}; }
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  return Object.entries(props).map(([name, p]) => {
    const label = p.title || name;
    let input, value;
    if (p.type === 'boolean') {
      input = h('input', { type: 'checkbox', checked: p.default === true });
      value = () => input.checked;
    } else if (Array.isArray(p.enum)) {
      input = h('select', { class: 'input' }, p.enum.map((v, i) => h('option', { value: String(v) }, (p.enumNames && p.enumNames[i]) || String(v))));
      value = () => input.value;
    } else {
      const numeric = p.type === 'number' || p.type === 'integer';
      input = h('input', { class: 'input', type: numeric ? 'number' : p.format === 'email' ? 'email' : 'text', required: required.has(name), value: p.default != null ? String(p.default) : null, step: p.type === 'integer' ? '1' : numeric ? 'any' : null });
      value = () => (input.value === '' ? undefined : numeric ? Number(input.value) : input.value);
    }
    input.setAttribute('aria-label', label);
    return { name, value, el: h('label', { class: 'field' }, h('span', {}, label + (required.has(name) ? ' *' : '')), input) };
  });
}

class ChatView extends HTMLElement {
  connectedCallback() {
    // Conversations deleted elsewhere (views.js) reach the chat while it is in the page; a view dropped at
    // sign-out is no longer told.
    this.onDeleted ??= (e) => this.conversationDeleted(e.detail?.id);
    document.addEventListener('agenthost:conversation-deleted', this.onDeleted);
    if (this.built) return;
    this.built = true;
    this.turns = [];
    this.conversation = '';
    this.options = { tools: new Set(), disable: new Set(), schema: '' };
    this.convTitle = h('span', { class: 'sub' });
    this.historyBtn = h('button', { class: 'btn ghost', type: 'button', 'aria-haspopup': 'true', 'aria-expanded': 'false', onclick: () => this.toggleHistory() }, icon('history'), 'History');
    this.optionsBtn = h('button', { class: 'btn ghost', type: 'button', 'aria-expanded': 'false', 'aria-controls': 'chat-options', onclick: () => this.toggleDrawer() }, icon('sliders'), 'Options');
    const newBtn = h('button', { class: 'btn', type: 'button', 'data-testid': 'chat-new', onclick: () => this.newConversation() }, icon('plus'), 'New');
    this.col = h('div', { class: 'chat-col' });
    this.log = h('div', { class: 'chat-log', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'polite' }, this.col);
    this.log.addEventListener('scroll', () => { const l = this.log; this.follow = l.scrollHeight - l.scrollTop - l.clientHeight < 60; }, { passive: true });
    this.input = h('textarea', { rows: 1, 'data-testid': 'chat-input', 'aria-label': 'Message', placeholder: 'Message the agent…' });
    this.sendBtn = h('button', { class: 'btn primary icon-only', type: 'submit', 'data-testid': 'chat-send', 'aria-label': 'Send', title: 'Send (Enter)' }, icon('send'));
    this.stopBtn = h('button', { class: 'btn icon-only', type: 'button', 'data-testid': 'chat-stop', 'aria-label': 'Stop', title: 'Stop the run', hidden: true, onclick: () => this.stop() }, icon('stop'));
    this.badges = h('span', { class: 'hint' }, 'Enter to send · Shift+Enter for a new line');
    const form = h('form', { class: 'composer' }, this.input, h('div', { class: 'composer-bar' }, this.badges, this.stopBtn, this.sendBtn));
    form.addEventListener('submit', (e) => { e.preventDefault(); this.send(); });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.send(); }
    });
    this.input.addEventListener('input', () => this.grow());
    this.drawer = this.buildDrawer();
    this.historyMenu = h('div', { class: 'popover', role: 'menu', 'aria-label': 'Earlier conversations', hidden: true });
    // The menu: arrow keys (and Home, End) move between its items, Enter picks one, Escape closes it (app.js calls
    // escape()). The drawer keeps Tab within itself while open.
    this.historyMenu.addEventListener('keydown', (e) => this.menuKey(e));
    this.drawer.addEventListener('keydown', (e) => this.trapFocus(e));
    add(this, 
      h('header', { class: 'view-head' }, h('h1', {}, 'Chat'), this.convTitle, h('span', { class: 'spacer' }), this.historyBtn, this.optionsBtn, newBtn),
      h('div', { class: 'chat' }, this.log, h('div', { class: 'composer-wrap' }, form), this.drawer, this.historyMenu));
    this.welcome();
  }

  disconnectedCallback() { document.removeEventListener('agenthost:conversation-deleted', this.onDeleted); }

  // deactivate stops following the run that goes (the view is hidden, or the page signs out, which drops it): its
  // event stream closes at once. route follows it again when the view is shown.
  deactivate() {
    this.active = false;
    this.current?.pause();
  }

  route(arg, params) {
    this.active = true;
    this.current?.resume();
    const c = params.get('c');
    if (c && c !== this.conversation) this.openConversation(c);
    if (!this.running) requestAnimationFrame(() => this.input.focus());
  }

  escape() {
    if (!this.historyMenu.hidden) { this.toggleHistory(false); return true; }
    if (!this.drawer.hidden) { this.toggleDrawer(false); return true; }
    return false;
  }

  grow() { this.input.style.height = 'auto'; this.input.style.height = Math.min(this.input.scrollHeight, 220) + 'px'; }

  stick() {
    const l = this.log;
    if (this.follow !== false) l.scrollTop = l.scrollHeight;
  }

  welcome() {
    const a = session.data?.agent || {};
    fill(this.col, h('div', { class: 'welcome' }, empty(a.name ? `Talk to ${a.name}` : 'Talk to the agent',
      (a.description ? a.description + ' ' : '') + 'Type a message below; each tool call shows up as a step as it runs. Press / to focus the box.', 'chat')));
  }

  newConversation() {
    if (this.running) return;
    this.conversation = '';
    this.turns = [];
    this.convTitle.textContent = '';
    this.welcome();
    if (location.hash.includes('?')) history.replaceState(null, '', '#/chat');
    this.input.focus();
  }

  async openConversation(id) {
    if (this.running) return;
    this.toggleHistory(false);
    this.conversation = id;
    this.turns = [];
    this.convTitle.textContent = id;
    fill(this.col, h('div', { class: 'faint' }, 'Loading the conversation…'));
    try {
      const c = await api('/conversations/' + encodeURIComponent(id));
      fill(this.col);
      // One turn per user message: the assistant's tool calls (with their results) and its text under it.
      let t = null;
      const steps = new Map();
      for (const m of c.messages || []) {
        if (m.role === 'user') { t = null; add(this.col, h('article', { class: 'turn' }, h('div', { class: 'msg-user' }, m.content || ''))); continue; }
        if (m.role === 'tool') {
          const body = steps.get(m.tool_call_id);
          if (body && m.content) add(body, h('div', { class: 'label' }, 'Result'), h('pre', {}, m.content));
          continue;
        }
        if (m.role !== 'assistant') continue;
        if (!t) { t = new Turn(this, null); add(this.col, t.el); }
        for (const tc of m.tool_calls || []) {
          const body = h('div', { class: 'step-body' }, h('div', { class: 'label' }, 'Arguments'), h('pre', { class: 'json' }, pretty(tc.arguments)));
          steps.set(tc.id, body);
          add(t.steps, h('div', { class: 'step', 'data-state': 'ok', 'data-name': tc.name }, h('details', {},
            h('summary', {}, icon('chevron', 'chev'), h('span', { class: 'state-icon' }, icon('check')), h('span', { class: 'step-name' }, tc.name), h('span', { class: 'step-note' }, 'earlier call')), body)));
        }
        if (m.content) t.answer.innerHTML = render(m.content);
      }
      if (!this.col.childElementCount) add(this.col, empty('This conversation has no messages yet', 'Send a message to continue it.'));
      const first = (c.messages || []).find((m) => m.role === 'user');
      this.convTitle.textContent = c.title || (first?.content || id).slice(0, 80);
      this.convTitle.title = id;
      this.stick();
    } catch (err) {
      fill(this.col, h('div', { class: 'error-note' }, 'The conversation could not be read: ' + err.message));
    }
    this.input.focus();
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.running) return;
    let schema;
    if (this.options.schema.trim()) {
      try { schema = JSON.parse(this.options.schema); } catch { this.toggleDrawer(true); this.schemaErr.textContent = 'The schema is not valid JSON.'; return; }
    }
    if (!this.turns.length && !this.conversation) fill(this.col);
    for (const old of this.col.querySelectorAll('[data-testid="answer"]')) old.removeAttribute('data-testid');
    const turn = new Turn(this, text);
    turn.answer.setAttribute('data-testid', 'answer');
    this.turns.push(turn);
    add(this.col, turn.el);
    this.input.value = '';
    this.grow();
    this.follow = true;
    this.stick();
    const body = { message: text };
    if (this.conversation) body.conversation_id = this.conversation;
    else { this.convTitle.textContent = text.length > 80 ? text.slice(0, 80) + '…' : text; }
    if (this.options.tools.size) body.tools = [...this.options.tools];
    if (this.options.disable.size) body.disable = [...this.options.disable];
    if (schema) body.output_schema = schema;
    this.setRunning(true);
    try {
      const r = await api('/chat', { method: 'POST', body });
      // The tool choice is for one message; the schema stays until it is cleared.
      this.options.tools.clear();
      this.options.disable.clear();
      this.syncOptions();
      this.current = turn;
      turn.follow(r.run_id);
    } catch (err) {
      turn.fail(err.message);
      fill(turn.meta);
      turn.answer.classList.remove('streaming');
      this.setRunning(false);
    }
  }

  runEnded(turn) {
    // The conversation goes on with the next message, even after a run that failed before its answer; the URL
    // keeps it across a reload.
    const id = turn.final?.conversation_id || turn.conversationID || turn.summary?.conversation_id;
    if (id && !this.conversation && this.turns.includes(turn)) {
      this.conversation = id;
      this.convTitle.title = id;
      if (location.hash.startsWith('#/chat')) history.replaceState(null, '', '#/chat?c=' + encodeURIComponent(id));
    }
    if (this.current === turn) { this.current = null; this.setRunning(false); }
  }

  setRunning(on) {
    this.running = on;
    this.stopBtn.hidden = !on;
    this.sendBtn.hidden = on;
    if (!on) this.input.focus();
  }

  async stop() {
    const t = this.current;
    if (!t?.runID) return;
    this.stopBtn.disabled = true;
    try { await api(`/runs/${encodeURIComponent(t.runID)}/cancel`, { method: 'POST' }); } catch (err) { t.fail('Stop failed: ' + err.message); }
    this.stopBtn.disabled = false;
  }

  menuKey(e) {
    const items = [...this.historyMenu.querySelectorAll('[role="menuitem"]')];
    if (!items.length) return;
    const i = items.indexOf(document.activeElement);
    let next = -1;
    if (e.key === 'ArrowDown') next = i < 0 ? 0 : (i + 1) % items.length;
    else if (e.key === 'ArrowUp') next = i <= 0 ? items.length - 1 : i - 1;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = items.length - 1;
    else if (e.key === 'Enter' && i >= 0) { e.preventDefault(); items[i].click(); return; }
    else return;
    e.preventDefault();
    items[next].focus();
  }

  trapFocus(e) {
    if (e.key !== 'Tab' || this.drawer.hidden) return;
    const f = [...this.drawer.querySelectorAll('button, input, textarea, select, a[href], [tabindex]:not([tabindex="-1"])')].filter((x) => !x.disabled && x.offsetParent !== null);
    if (!f.length) return;
    const first = f[0], last = f[f.length - 1];
    if (e.shiftKey && (document.activeElement === first || !this.drawer.contains(document.activeElement))) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
  }

  // conversationDeleted resets the chat when the conversation it shows was deleted (the conversations view
  // dispatches 'agenthost:conversation-deleted' on document, detail {id}).
  conversationDeleted(id) {
    if (!id || id !== this.conversation) return;
    if (this.running) { this.conversation = ''; return; }
    this.newConversation();
  }

  async toggleHistory(open = this.historyMenu.hidden) {
    const wasOpen = !this.historyMenu.hidden;
    this.historyMenu.hidden = !open;
    this.historyBtn.setAttribute('aria-expanded', String(open));
    if (!open) { if (wasOpen && (this.contains(document.activeElement) || document.activeElement === document.body)) this.historyBtn.focus(); return; }
    this.toggleDrawer(false);
    if (session.data?.features && session.data.features.state === false) {
      fill(this.historyMenu, h('div', { class: 'empty-hint', role: 'none' }, 'Conversations are not kept: configure [state] to keep them.'));
      return;
    }
    fill(this.historyMenu, h('div', { class: 'faint', role: 'none' }, 'Loading…'));
    try {
      const r = await api('/conversations');
      const list = r.conversations || [];
      fill(this.historyMenu, ...(list.length ? list.map((c) =>
        h('button', { class: 'item', type: 'button', role: 'menuitem', onclick: () => this.openConversation(c.id) },
          h('span', {}, c.title || c.id), h('span', { class: 'faint' }, `${c.messages || 0} messages · ${new Date(c.updated || c.created).toLocaleString()}`)))
        : [h('div', { class: 'empty-hint', role: 'none' }, 'No conversations yet.')]));
      this.historyMenu.querySelector('button')?.focus();
    } catch (err) {
      fill(this.historyMenu, h('div', { class: 'error-note' }, err.message));
    }
  }

  buildDrawer() {
    this.schemaIn = h('textarea', { class: 'input', rows: 8, spellcheck: 'false', 'aria-label': 'Answer schema (JSON)', placeholder: session.data?.output_schema ? 'Empty: the configured schema applies.' : '{"type": "object", "properties": {…}}' });
    this.schemaErr = h('div', { class: 'form-error', role: 'alert' });
    this.schemaIn.addEventListener('input', () => {
      this.options.schema = this.schemaIn.value;
      let ok = true;
      if (this.schemaIn.value.trim()) try { JSON.parse(this.schemaIn.value); } catch { ok = false; }
      this.schemaErr.textContent = ok ? '' : 'Not valid JSON yet.';
      this.syncOptions();
    });
    this.toolFilter = h('input', { class: 'input', type: 'search', placeholder: 'Filter tools', 'aria-label': 'Filter tools' });
    this.toolTable = h('tbody');
    this.toolFilter.addEventListener('input', () => this.paintTools());
    const d = h('aside', { class: 'drawer', id: 'chat-options', role: 'dialog', 'aria-label': 'Message options', hidden: true },
      h('div', { class: 'detail-head' }, h('h2', {}, 'Options'), h('button', { class: 'btn ghost icon-only', type: 'button', 'aria-label': 'Close', onclick: () => this.toggleDrawer(false) }, icon('x'))),
      h('div', { class: 'detail-body' },
        h('div', {}, h('div', { class: 'label' }, 'Tools for the next message'),
          h('p', { class: 'muted' }, '“Only” offers just those tools; “Off” takes tools away. Cleared once the message is sent.')),
        this.toolFilter,
        h('div', { class: 'tool-pick' }, h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Tool'), h('th', { class: 'c' }, 'Only'), h('th', { class: 'c' }, 'Off'))), this.toolTable)),
        h('div', {}, h('div', { class: 'label' }, 'Structured answer schema'),
          h('p', { class: 'muted' }, 'A JSON Schema the answer must match; the answer then shows the validated value. Stays until cleared.')),
        this.schemaIn, this.schemaErr));
    return d;
  }

  async toggleDrawer(open = this.drawer.hidden) {
    const wasOpen = !this.drawer.hidden;
    if (open && !wasOpen) this.drawerReturn = document.activeElement;
    this.drawer.hidden = !open;
    this.optionsBtn.setAttribute('aria-expanded', String(open));
    if (!open) {
      if (wasOpen) { const r = this.drawerReturn; this.drawerReturn = null; (r && r.isConnected && r !== document.body ? r : this.optionsBtn).focus(); }
      return;
    }
    this.toggleHistory(false);
    this.toolFilter.focus();
    if (!this.tools) {
      try { this.tools = (await api('/tools')).tools || []; } catch (err) { this.tools = []; fill(this.toolTable, h('tr', {}, h('td', { colspan: 3, class: 'form-error' }, err.message))); return; }
    }
    this.paintTools();
  }

  paintTools() {
    const q = this.toolFilter.value.toLowerCase();
    const rows = this.tools.filter((t) => !q || t.name.toLowerCase().includes(q) || (t.source || '').toLowerCase().includes(q));
    const box = (set, other, name) => {
      const c = h('input', { type: 'checkbox', checked: set.has(name), 'aria-label': name });
      c.addEventListener('change', () => { if (c.checked) { set.add(name); other.delete(name); } else set.delete(name); this.syncOptions(); this.paintTools(); });
      return c;
    };
    const o = this.options;
    fill(this.toolTable, ...(rows.length ? rows.map((t) => h('tr', {},
      h('td', {}, h('span', { class: 'mono' }, t.name), t.source ? h('span', { class: 'faint' }, ' · ' + t.source) : null),
      h('td', { class: 'c' }, box(o.tools, o.disable, t.name)), h('td', { class: 'c' }, box(o.disable, o.tools, t.name))))
      : [h('tr', {}, h('td', { colspan: 3, class: 'faint' }, this.tools.length ? 'No tool matches.' : 'The agent has no tools.'))]));
  }

  syncOptions() {
    const o = this.options, chips = [];
    if (o.tools.size) chips.push(h('span', { class: 'chip' }, `only ${o.tools.size} tool${o.tools.size > 1 ? 's' : ''}`));
    if (o.disable.size) chips.push(h('span', { class: 'chip' }, `${o.disable.size} off`));
    if (o.schema.trim()) chips.push(h('span', { class: 'chip' }, 'schema'));
    fill(this.badges, ...(chips.length ? chips : ['Enter to send · Shift+Enter for a new line']));
    this.optionsBtn.classList.toggle('on', chips.length > 0);
  }
}

customElements.define('ah-chat', ChatView);

// endedCard marks a question whose run ended before it was answered: its buttons go.
function endedCard(card) {
  if (!card || card.querySelector('[data-testid="approval-ended"]')) return;
  card.classList.add('answered');
  for (const el of card.querySelectorAll('.row, form, .form-error')) el.remove();
  add(card, h('div', { class: 'muted', 'data-testid': 'approval-ended' }, 'The run ended before an answer.'));
}
