// app.js: the console's shell. Plain modern JavaScript as ES modules with no build step and no framework: each view
// is a custom element in its own module, imported the first time it is opened, so the first render needs only this
// file, lib.js and app.css. The only network access is the console's own /api. See DESIGN.md for why.
import { h, fill, add, icon, api, session, onLogin, APIError } from './lib.js';

const VIEWS = [
  { id: 'chat', label: 'Chat', key: 'c', mod: './chat.js', tag: 'ah-chat' },
  { id: 'runs', label: 'Runs', key: 'r', mod: './runs.js', tag: 'ah-runs' },
  { id: 'tools', label: 'Tools', key: 't', mod: './views.js', tag: 'ah-tools' },
  { id: 'servers', label: 'Servers', key: 's', mod: './views.js', tag: 'ah-servers' },
  { id: 'conversations', label: 'Conversations', key: 'v', mod: './views.js', tag: 'ah-conversations' },
  { id: 'evals', label: 'Evals', key: 'e', mod: './views.js', tag: 'ah-evals' },
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const mounted = new Map();
let current = null;
let started = false;

// ---- theme ----

// theme is the page's theme, which theme.js always sets (the one chosen, or the system's).
function theme() {
  return document.documentElement.dataset.theme;
}

// themeButton is the light/dark toggle: in the rail with its label, or (compact) as an icon only, as on the
// sign-in card.
function themeButton(testid = 'theme-toggle', compact = false) {
  const b = h('button', { class: 'btn ghost theme-toggle' + (compact ? ' icon-only' : ''), type: 'button', 'data-testid': testid });
  const paint = () => {
    const dark = theme() === 'dark';
    const what = dark ? 'Switch to the light theme' : 'Switch to the dark theme';
    fill(b, icon(dark ? 'sun' : 'moon'), compact ? null : h('span', { class: 'nav-label' }, dark ? 'Light theme' : 'Dark theme'));
    b.setAttribute('aria-label', what);
    if (compact) b.title = what;
  };
  b.addEventListener('click', () => {
    const next = theme() === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try { localStorage.setItem('agenthost.theme', next); } catch { /* storage off */ }
    paint();
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', paint);
  paint();
  return b;
}

// ---- navigation ----

function buildNav() {
  fill(nav, ...VIEWS.map((v) =>
    h('a', { class: 'nav-item', href: '#/' + v.id, 'data-testid': 'nav-' + v.id, 'data-view': v.id, title: `${v.label} (g then ${v.key})` },
      icon(v.id), h('span', { class: 'nav-label' }, v.label), h('kbd', { class: 'nav-key', 'aria-hidden': 'true' }, 'g ' + v.key))));
}

function buildFoot() {
  const foot = document.getElementById('rail-foot');
  const a = session.data.agent || {};
  fill(foot, 
    themeButton(),
    session.data.auth && session.data.auth !== 'none'
      ? h('button', { class: 'btn ghost', type: 'button', onclick: logout }, icon('lock'), h('span', { class: 'nav-label' }, 'Sign out'))
      : null,
    h('div', { class: 'agent-meta', title: [a.provider, a.model].filter(Boolean).join(' · ') },
      h('span', { class: 'mono' }, a.model || ''), a.version ? h('span', { class: 'faint' }, /^\d/.test(a.version) ? 'v' + a.version : a.version) : null));
  document.getElementById('agent-name').textContent = a.name || 'agenthost';
  document.title = (a.name || 'agenthost') + ' · agenthost';
}

async function logout() {
  try { await api('/logout', { method: 'POST' }); } catch { /* signed out either way */ }
  location.reload();
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const view = VIEWS.find((v) => v.id === parts[0]) || VIEWS[0];
  return { view, arg: parts[1] || '', params: new URLSearchParams(query) };
}

async function route() {
  if (!started) return;
  const { view, arg, params } = parseHash();
  for (const a of nav.querySelectorAll('.nav-item')) {
    if (a.dataset.view === view.id) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  let el = mounted.get(view.id);
  if (!el) {
    try {
      await import(view.mod);
    } catch (err) {
      fill(main, h('div', { class: 'empty' }, 'The view could not be loaded: ' + err.message));
      return;
    }
    el = document.createElement(view.tag);
    el.classList.add('view');
    el.setAttribute('aria-label', view.label);
    mounted.set(view.id, el);
    add(main, el);
  }
  main.querySelector('.boot')?.remove();
  if (current && current !== el) { current.hidden = true; current.deactivate?.(); }
  el.hidden = false;
  const fresh = current !== el;
  current = el;
  el.route?.(arg, params, fresh);
}

// go navigates to a view; views call it through the "navigate" event.
function go(hash) { if (location.hash !== hash) location.hash = hash; else route(); }

// ---- keyboard ----

let gPressed = 0;
function typing(t) { return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)); }

document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') {
    // Views close their panels; otherwise Escape leaves a text box.
    if (current?.escape?.()) { e.preventDefault(); return; }
    if (typing(e.target)) e.target.blur();
    return;
  }
  if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '/') {
    const box = current?.querySelector('[data-search], [data-testid="chat-input"]');
    if (box) { e.preventDefault(); box.focus(); box.select?.(); }
    return;
  }
  if (e.key === 'g') { gPressed = Date.now(); return; }
  if (Date.now() - gPressed < 1500) {
    const v = VIEWS.find((x) => x.key === e.key);
    gPressed = 0;
    if (v) { e.preventDefault(); go('#/' + v.id); }
  }
});

// ---- login ----

function showLogin(method) {
  started = false;
  document.body.classList.add('signed-out');
  const input = h('input', { class: 'input', type: 'password', id: 'login-token', name: 'token', autocomplete: 'current-password', required: true, 'data-testid': 'login-token', placeholder: method === 'oauth' ? 'Paste a bearer access token' : 'Paste the token' });
  const err = h('div', { class: 'form-error', role: 'alert' });
  const submit = h('button', { class: 'btn primary', type: 'submit', 'data-testid': 'login-submit' }, 'Sign in');
  const form = h('form', { class: 'login-card', 'aria-labelledby': 'login-title' },
    h('div', { class: 'login-head' }, h('div', { class: 'login-mark' }, icon('lock')), themeButton('login-theme-toggle', true)),
    h('h1', { id: 'login-title' }, 'Sign in to the console'),
    h('p', { class: 'muted' }, method === 'oauth'
      ? 'This console is protected by OAuth. Paste a bearer access token issued for it.'
      : 'This console is protected by a token. Paste the token the agent was started with.'),
    h('label', { for: 'login-token', class: 'label' }, method === 'oauth' ? 'Access token' : 'Token'),
    input, err, submit);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    err.textContent = '';
    try {
      await api('/login', { method: 'POST', body: { token: input.value.trim() } });
      input.value = '';
      document.body.classList.remove('signed-out');
      await start();
    } catch (x) {
      err.textContent = x.status === 401 ? 'That token was not accepted.' : x.message;
      submit.disabled = false;
      input.focus();
    }
  });
  // The views are dropped: their timers and event streams end with them.
  for (const el of mounted.values()) el.deactivate?.();
  mounted.clear();
  current = null;
  fill(main, h('div', { class: 'login-wrap' }, form));
  input.focus();
}

onLogin((method) => { if (!document.body.classList.contains('signed-out')) showLogin(method); });

// ---- start ----

async function start() {
  try {
    const s = await api('/session');
    // Before the login the session says only how to log in (a 200, so that no browser logs a failure).
    if (s.login && !s.auth) { showLogin(s.login); return; }
    session.csrf = s.csrf;
    session.data = s;
  } catch (err) {
    if (err instanceof APIError && err.status === 401 && err.body?.login) { showLogin(err.body.login); return; }
    fill(main, h('div', { class: 'empty' }, h('div', { class: 'empty-title' }, 'The console cannot reach the agent'), h('div', { class: 'empty-hint' }, err.message)));
    return;
  }
  buildFoot();
  fill(main, h('div', { class: 'boot' }));
  started = true;
  route();
}

buildNav();
// The first view's module loads while the session is asked for.
import(parseHash().view.mod).catch(() => { /* route() reports it */ });
addEventListener('hashchange', route);
document.addEventListener('navigate', (e) => go(e.detail));
start();
