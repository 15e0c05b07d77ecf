// The fleet: every SyncTarget of the inventory space with its labels, health, heartbeat age, capacity and the
// number of objects it holds, its taints as badges, filtered by a label selector; kept current by a watch of the SyncTargets.
// A heartbeat changes one row, so one row is redrawn; the table is drawn whole only when the set of
// shown clusters changes.

import { Informer } from './api.js';
import { age, enc, errorBox, esc, labelChips, markRendered, showError } from './dom.js';
import { taintBadges } from './scheduling.js';
import { matches, parseSelector } from './selector.js';
import { health } from './states.js';

const COUNTS_EVERY_MS = 5000;  // object counts change with placements elsewhere: refreshed at most this often

// Memory as the syncer reports it (bytes, summed over Nodes) in the binary units kubectl shows.
function quantity(key, value) {
  if (key !== 'memory' || !/^\d+$/.test(String(value))) return String(value);
  const units = [['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]];
  const [unit, size] = units.find(([, size]) => Number(value) >= size) || ['', 1];
  return `${Math.round((Number(value) / size) * 10) / 10}${unit}`;
}

function capacity(target) {
  const status = target.status || {};
  const cap = status.capacity || {};
  const alloc = status.allocatable || {};
  const parts = ['cpu', 'memory', 'pods'].filter((k) => cap[k] !== undefined).map((k) => `${k} ${esc(quantity(k, cap[k]))}`);
  const title = Object.entries(alloc).map(([k, v]) => `allocatable ${k}: ${v}`).join('\n');
  return parts.length ? `<span title="${esc(title)}">${parts.join(' · ')}</span>` : '<span class="muted">—</span>';
}

function cells(target, count) {
  const name = target.metadata.name;
  const h = health(target);
  const heartbeat = (target.status || {}).lastSyncerHeartbeatTime || '';
  const notes = h.notes.map((n) => `<span class="badge">${n}</span>`).join('');
  return `<td class="name"><a href="#/fleet?selector=${enc(`id=${name}`)}">${esc(name)}</a></td>` +
    `<td>${labelChips(target.metadata.labels)}</td>` +
    `<td><span class="health ${h.state}" title="${esc(h.message)}">${h.label}</span>${notes}${taintBadges(target)}</td>` +
    `<td class="num" data-heartbeat="${esc(heartbeat)}" title="${esc(heartbeat)}">${age(heartbeat)}</td>` +
    `<td>${capacity(target)}</td>` +
    `<td class="num">${count === undefined ? '<span class="muted">…</span>' : count}</td>`;
}

function rowAttrs(target) {
  return `data-cluster="${esc(target.metadata.name)}" data-health="${health(target).state}"`;
}

export function mount(ctx) {
  const { hub, inventory, view, params } = ctx;
  view.innerHTML = `
    <section class="fleet">
      <div class="toolbar">
        <h1>Fleet</h1>
        <label>Label selector <input id="selector" spellcheck="false" placeholder="env=prod,region in (eu,us),!legacy"
               value="${esc(params.get('selector') || '')}"></label>
        <span id="selector-error" class="inline-error"></span>
        <span id="fleet-summary" class="muted"></span>
        <span id="live" class="live"></span>
      </div>
      <div id="fleet-error"></div>
      <table class="grid" id="fleet-table">
        <thead><tr><th>Cluster</th><th>Labels</th><th>Health</th><th>Heartbeat</th><th>Capacity</th><th>Objects</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>`;
  const tbody = view.querySelector('tbody');
  const input = view.querySelector('#selector');
  const summary = view.querySelector('#fleet-summary');
  const live = view.querySelector('#live');
  const errors = view.querySelector('#fleet-error');
  let selector = [];
  const counts = new Map();
  const rows = new Map();
  let countsAt = 0;
  let countsTimer = null;

  const shown = () => [...informer.items.values()]
    .filter((t) => matches(selector, t.metadata.labels || {}))
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));

  function drawAll() {
    const start = performance.now();
    const targets = shown();
    tbody.innerHTML = targets.map((t) => `<tr ${rowAttrs(t)}>${cells(t, counts.get(t.metadata.name))}</tr>`).join('');
    rows.clear();
    for (const tr of tbody.children) rows.set(tr.dataset.cluster, tr);
    drawSummary(targets);
    performance.measure('draw:fleet', { start });  // read by bench/ui_bench.py
  }

  function drawSummary(targets = shown()) {
    const down = targets.filter((t) => health(t).state === 'down').length;
    const total = informer.items.size;
    summary.textContent = `${targets.length} of ${total} clusters shown · ${down} down`;
  }

  function onChange(keys) {
    const structural = [...keys].some((key) => {
      const target = informer.items.get(key);
      const visible = target !== undefined && matches(selector, target.metadata.labels || {});
      return visible !== rows.has(key);
    });
    if (structural) drawAll();
    else {
      for (const key of keys) {
        const tr = rows.get(key);
        const target = informer.items.get(key);
        if (!tr || !target) continue;
        tr.dataset.health = health(target).state;
        tr.innerHTML = cells(target, counts.get(key));
      }
      drawSummary();
    }
    scheduleCounts();
  }

  async function refreshCounts() {
    countsTimer = null;
    countsAt = Date.now();
    try {
      const doc = await hub.get('/ui/v1/fleet');
      for (const item of doc.items) counts.set(item.name, item.objects);
      for (const [name, tr] of rows) tr.lastElementChild.textContent = counts.has(name) ? counts.get(name) : '…';
    } catch (err) {
      showError(errors, err);
    }
  }

  function scheduleCounts() {
    if (countsTimer !== null || informer.stopped) return;
    countsTimer = setTimeout(refreshCounts, Math.max(0, countsAt + COUNTS_EVERY_MS - Date.now()));
  }

  const informer = new Informer(hub, `/clusters/${enc(inventory)}/apis/edge.kubestellar.io/v2alpha1/synctargets`, {
    onChange,
    onState: (state) => { live.dataset.state = state; live.textContent = state === 'live' ? 'live' : 'reconnecting…'; },
    onError: (err) => showError(errors, err),
  });

  input.addEventListener('input', () => {
    const err = view.querySelector('#selector-error');
    try {
      selector = parseSelector(input.value);
      err.textContent = '';
      history.replaceState(null, '', input.value ? `#/fleet?selector=${enc(input.value)}` : '#/fleet');
      drawAll();
    } catch (e) {
      err.textContent = e.message;
    }
  });
  try { selector = parseSelector(input.value); } catch (e) { view.querySelector('#selector-error').textContent = e.message; }

  // Heartbeat ages move with the clock, not with events: redraw just those cells each second.
  const ticker = setInterval(() => {
    const now = Date.now();
    for (const td of tbody.querySelectorAll('td[data-heartbeat]')) td.textContent = age(td.dataset.heartbeat, now);
  }, 1000);

  const started = Promise.all([informer.start(), refreshCounts()]).then(() => {
    drawAll();
    markRendered(view, 'fleet');
  }).catch((err) => {
    errors.innerHTML = errorBox(err);
    markRendered(view, 'fleet');
  });
  return {
    started,
    stop() {
      informer.stop();
      clearInterval(ticker);
      if (countsTimer !== null) clearTimeout(countsTimer);
    },
  };
}
