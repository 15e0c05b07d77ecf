// One placed object: its state in every cluster (phase, reason, revision, replicas of a divided object, drift
// corrections, what it owns there), its pods (read from the clusters through the hub), its Events, and
// each cluster's customized copy (the desired-set view of that cluster, read when opened).

import { Informer } from './api.js';
import { enc, errorBox, esc, link, markRendered, showError } from './dom.js';
import { revisionOf } from './rollout.js';
import { idOf } from './spaces.js';
import { copyState } from './states.js';
import { dumpYaml } from './yaml.js';

const REFRESH_DELAY_MS = 200;
const REPORT_NAMESPACE = 'spacehub-report';  // where PlacementStatuses of cluster-scoped objects live

function apiPath(apiVersion, group, namespace, resource, name) {
  const base = group ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}${namespace ? `/namespaces/${enc(namespace)}` : ''}/${enc(resource)}/${enc(name)}`;
}

function podsSummary(associated) {
  if (!associated || !associated.pods) return '';
  const pods = associated.pods;
  const parts = Object.entries(pods).filter(([, v]) => typeof v === 'number').map(([k, v]) => `${k} ${v}`);
  const waiting = pods.waiting ? ` · waiting: ${pods.waiting.reason || ''} (${pods.waiting.pod || ''})` : '';
  return esc(parts.join(', ') + waiting);
}

export function mount(ctx, space, group, resource, namespace, name) {
  const { hub, inventory, view } = ctx;
  const id = idOf(space);
  const core = group === 'core' ? '' : group;
  const ns = namespace === '-' ? '' : namespace;
  const resourceParam = core ? `${resource}.${core}` : resource;
  const restPath = `/placement/v1/spaces/${enc(id)}${ns ? `/namespaces/${enc(ns)}` : ''}/objects/${enc(resourceParam)}/${enc(name)}`;
  view.innerHTML = `
    <section class="object">
      <h1>${esc(resource)} ${esc(ns ? `${ns}/` : '')}${esc(name)} <span class="muted">in ${link(`/space/${id}`, space)}</span></h1>
      <div id="object-error"></div>
      <p id="object-meta" class="muted"></p>
      <h2>In each cluster <span id="live" class="live"></span></h2>
      <table class="grid"><thead><tr><th>Cluster</th><th>State</th><th>Reason</th><th>Revision</th><th>Replicas</th><th>Drift</th><th>Pods</th><th>Copy</th></tr></thead>
      <tbody id="clusters"></tbody></table>
      <h2>Pods</h2><div id="pods">Loading…</div>
      <h2>Events</h2><div id="events">Loading…</div>
    </section>`;
  const errors = view.querySelector('#object-error');
  const tbody = view.querySelector('#clusters');
  let info = null;
  let timer = null;
  // Status changes redraw the table: the copies a user opened stay open, read once.
  const copies = new Map();
  const opened = new Set();

  function drawClusters() {
    const summary = info.summary || {};
    const reported = new Map((info.reported || []).map((r) => [r.cluster, r]));
    const division = info.division || null;
    view.querySelector('#object-meta').innerHTML = `${esc(info.kind)} ${esc(info.apiVersion)} · placed by ` +
      (info.placements.map((p) => link(`/space/${id}/placement/${p.name}`, p.name)).join(', ') || 'no placement') +
      ` · ${info.destinations.length} clusters` +
      (division ? ` · replicas divided: ${esc(Object.entries(division).map(([c, n]) => `${c} ${n}`).join(', '))}` : '');
    // Clusters keeping a leaving copy (a move) are shown after the destinations until their copy goes.
    const leaving = (info.leaving || []).filter((c) => !info.destinations.includes(c));
    tbody.innerHTML = [...info.destinations, ...leaving].map((cluster) => {
      const state = copyState(summary, cluster, null);
      const report = reported.get(cluster) || {};
      const corrections = report.driftCorrections ? `${report.driftCorrections} (last ${esc(report.lastDriftCorrection || '?')})` : '0';
      // Each field changed in the cluster, who changed it (its field manager) and whether it was put back.
      const changes = (report.drift || []).map((d) => `<li data-drift="${esc(d.path)}">${esc(d.path)} by ` +
        `${esc(d.manager || 'an unknown manager')}: ${d.corrected ? 'put back' : 'left as it is'}</li>`).join('');
      const drift = changes ? `${corrections}<ul class="drift">${changes}</ul>` : corrections;
      return `<tr data-cluster="${esc(cluster)}" data-state="${state.state}"><td>${esc(cluster)}</td>` +
        `<td><span class="swatch s-${state.state}"></span> ${esc(state.state)}</td><td>${esc(state.reason || '')}</td>` +
        `<td class="num" data-revision>${esc(revisionOf(state))}</td>` +
        `<td class="num">${division ? esc(division[cluster] ?? 0) : '—'}</td><td class="num">${drift}</td>` +
        `<td>${podsSummary(report.associated)}</td>` +
        `<td><details data-copy="${esc(cluster)}" ${opened.has(cluster) ? 'open' : ''}><summary>${esc(cluster)}'s copy</summary>` +
        `${copies.get(cluster) || '<pre>Loading…</pre>'}</details></td></tr>`;
    }).join('');
  }

  async function refresh() {
    timer = null;
    try {
      info = await hub.get(restPath);
      showError(errors, null);
      drawClusters();
    } catch (err) {
      errors.innerHTML = errorBox(err);
    }
  }

  tbody.addEventListener('toggle', async (event) => {
    const cluster = event.target.dataset.copy;
    if (!event.target.open) { opened.delete(cluster); return; }
    opened.add(cluster);
    if (copies.has(cluster)) return;
    copies.set(cluster, '<pre>Loading…</pre>');
    try {
      const copy = await hub.get(`/clusters/${enc(inventory)}/synctargets/${enc(cluster)}` +
                                 apiPath(info.apiVersion, core, ns, resource, name));
      copies.set(cluster, `<pre>${esc(dumpYaml(copy))}</pre>`);
    } catch (err) {
      copies.set(cluster, errorBox(err));
    }
    const details = tbody.querySelector(`details[data-copy="${CSS.escape(cluster)}"]`);
    if (details) details.innerHTML = `<summary>${esc(cluster)}'s copy</summary>${copies.get(cluster)}`;
  }, true);

  async function drawPods(object) {
    const pods = view.querySelector('#pods');
    const selector = ((object.spec || {}).selector || {}).matchLabels;
    if (!ns || !selector) { pods.innerHTML = '<p class="muted">This kind owns no pods.</p>'; return; }
    const labelSelector = Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(',');
    try {
      const list = await hub.get(`/clusters/${enc(id)}/api/v1/namespaces/${enc(ns)}/pods?labelSelector=${enc(labelSelector)}`);
      pods.innerHTML = list.items.length === 0 ? '<p class="muted">No pods.</p>' :
        `<table class="grid"><thead><tr><th>Pod</th><th>Cluster</th><th>Phase</th><th>Ready</th><th>Restarts</th></tr></thead><tbody>${
          list.items.map((p) => {
            const statuses = (p.status || {}).containerStatuses || [];
            const cluster = (p.metadata.labels || {})['spacehub.io/cluster'] || '';  // set by the hub on every pod it shows
            return `<tr><td>${esc(p.metadata.name)}</td><td>${esc(cluster)}</td><td>${esc((p.status || {}).phase || '')}</td>` +
              `<td>${statuses.filter((c) => c.ready).length}/${statuses.length}</td>` +
              `<td class="num">${statuses.reduce((n, c) => n + (c.restartCount || 0), 0)}</td></tr>`;
          }).join('')}</tbody></table>`;
    } catch (err) {
      pods.innerHTML = errorBox(err);
    }
  }

  async function drawEvents(kind) {
    const events = view.querySelector('#events');
    try {
      const list = await hub.get(`/clusters/${enc(id)}/api/v1/namespaces/${enc(ns || 'default')}/events?fieldSelector=${enc(`involvedObject.name=${name}`)}`);
      const items = list.items.filter((e) => !kind || (e.involvedObject || {}).kind === kind)
        .sort((a, b) => String(b.lastTimestamp || b.eventTime || '').localeCompare(String(a.lastTimestamp || a.eventTime || '')));
      events.innerHTML = items.length === 0 ? '<p class="muted">No Events.</p>' :
        `<table class="grid"><thead><tr><th>Type</th><th>Reason</th><th>Message</th><th>Cluster</th><th>Count</th><th>Last seen</th></tr></thead><tbody>${
          items.map((e) => `<tr class="event-${esc(e.type)}"><td>${esc(e.type)}</td><td>${esc(e.reason)}</td><td>${esc(e.message)}</td>` +
            `<td>${esc((e.source || {}).host || '')}</td><td class="num">${esc(e.count || 1)}</td>` +
            `<td>${esc(e.lastTimestamp || e.eventTime || '')}</td></tr>`).join('')}</tbody></table>`;
    } catch (err) {
      events.innerHTML = errorBox(err);
    }
  }

  const statusName = `${resource}.${core || 'core'}.${name}`;
  const watch = new Informer(hub, `/clusters/${enc(id)}/apis/status.spacehub.io/v1alpha1/namespaces/${enc(ns || REPORT_NAMESPACE)}` +
                                  `/placementstatuses?fieldSelector=${enc(`metadata.name=${statusName}`)}`, {
    onChange: () => { if (info && timer === null) timer = setTimeout(refresh, REFRESH_DELAY_MS); },
    onState: (state) => { const live = view.querySelector('#live'); live.dataset.state = state; live.textContent = state === 'live' ? 'live' : 'reconnecting…'; },
    onError: (err) => showError(errors, err),
  });

  (async () => {
    await refresh();
    if (info) {
      let object = {};
      try { object = await hub.get(`/clusters/${enc(id)}${apiPath(info.apiVersion, core, ns, resource, name)}`); } catch (err) { showError(errors, err); }
      await Promise.all([drawPods(object), drawEvents(info.kind), watch.start().catch((err) => showError(errors, err))]);
    }
    markRendered(view, 'object');
  })();
  return { stop() { watch.stop(); if (timer !== null) clearTimeout(timer); } };
}
