// theme.js runs before the first paint (a classic script, not a module), so that the page never flashes the other
// theme: html[data-theme] is always set, to the theme chosen with the toggle (kept in localStorage) or else to the
// system's, which it follows as it changes until a theme is chosen. app.css has one dark palette, for data-theme.
(() => {
  const system = matchMedia('(prefers-color-scheme: dark)');
  const chosen = () => { try { const t = localStorage.getItem('agenthost.theme'); return t === 'light' || t === 'dark' ? t : ''; } catch { return ''; } };
  const apply = () => { document.documentElement.dataset.theme = chosen() || (system.matches ? 'dark' : 'light'); };
  apply();
  system.addEventListener('change', () => { if (!chosen()) apply(); });
})();
