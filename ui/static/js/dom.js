// Small helpers for building the page: escaping for HTML strings (views render large tables and pictures
// as one string, the fastest way into the DOM), error boxes, and human-readable ages.

export function esc(value) {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

export function errorBox(err) {
  const request = err && err.request ? `<div class="request">${esc(err.request)}</div>` : '';
  return `<div class="error" role="alert">${esc(err && err.message ? err.message : String(err))}${request}</div>`;
}

export function showError(element, err) {
  element.innerHTML = err ? errorBox(err) : '';
}

export function age(time, now = Date.now()) {
  if (!time) return '—';
  const then = Date.parse(time);
  if (Number.isNaN(then)) return '—';
  const seconds = Math.max(0, Math.round((now - then) / 1000));
  if (seconds < 90) return `${seconds}s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86400)}d`;
}

export function labelChips(labels) {
  return Object.entries(labels || {}).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `<span class="chip">${esc(k)}=${esc(v)}</span>`).join('');
}

// A view marks itself rendered (with its data) so tests and the benchmark can wait for it.
export function markRendered(view, name) {
  view.dataset.rendered = name;
  performance.mark(`rendered:${name}`);
}

export function link(hash, text, attrs = '') {
  return `<a href="#${esc(hash)}" ${attrs}>${esc(text)}</a>`;
}

export function enc(value) { return encodeURIComponent(value); }
