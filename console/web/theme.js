// theme.js runs before the first paint (a classic script, not a module) so that a chosen theme never flashes.
try { const t = localStorage.getItem('agenthost.theme'); if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t; } catch { /* storage off: follow the system */ }
