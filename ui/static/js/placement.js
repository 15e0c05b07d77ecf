// One placement as a picture: its space, the objects it selects and the clusters it reaches, each
// object → cluster edge coloured by that copy's state, with the reason on hover (the edge's title) and on
// click (the panel below). Live: SyncTargets (cluster health), the space's PlacementStatuses (copy states)
// and the EdgePlacement itself are watched; a health or status change recolours edges in place, a change
// of what the placement selects or reaches draws the picture again. A staged rollout (status.rollout) is
// drawn above the picture by rollout.js; a scheduled placement's choice, scores and reasons below it
// (scheduling.js).

import { HubError, Informer } from './api.js';
import { enc, errorBox, esc, link, markRendered, showError } from './dom.js';
import { edgeTitle, layout } from './graph.js';
import { markRevisions, rolloutOf, rolloutPanel } from './rollout.js';
import { SchedulingPanel } from './scheduling.js';
import { idOf, objectHash } from './spaces.js';
import { EDGE_STATES, copyState, health, statusKey } from './states.js';

const REDRAW_DELAY_MS = 200;  // a burst of structural events (a placement edit) is drawn once

function legend() {
  return EDGE_STATES.map((s) => `<span class="legend-item"><span class="swatch s-${s}"></span>${s}</span>`).join('');
}

export function mount(ctx, space, name) {
  const { hub, inventory, view } = ctx;
  const id = idOf(space);
  view.innerHTML = `
    <section class="placement">
      <div class="toolbar">
        <h1>Placement ${esc(name)} <span class="muted">in ${link(`/space/${id}`, space)}</span></h1>
        ${link(`/space/${id}/explain/${name}`, 'explain / edit', 'class="action"')}
        <span id="placement-summary" class="muted"></span>
        <span id="live" class="live"></span>
      </div>
      <div class="legend">${legend()}</div>
      <div id="placement-error"></div>
      <div id="placement-notes"></div>
      <div id="rollout"></div>
      <div class="picture-wrap" id="picture"></div>
      <div id="details" class="details muted">Hover over an edge for its state; click it for the details.</div>
      <div id="scheduling"></div>
    </section>`;
  const picture = view.querySelector('#picture');
  const details = view.querySelector('#details');
  const errors = view.querySelector('#placement-error');
  const notes = view.querySelector('#placement-notes');
  const live = view.querySelector('#live');
  let detail = null;
  let objects = [];   // [{key, label, ref}]
  let edgesByCluster = new Map();
  let edgesByObject = new Map();
  let redrawTimer = null;
  let healthOf = new Map();  // cluster → health, as last drawn
  let targetsReadable = true;
  const scheduling = new SchedulingPanel(hub, id, name, view.querySelector('#scheduling'));

  const clusterHealth = (cluster) => {
    const target = targets.items.get(cluster);
    return target ? health(target) : { state: 'unknown', label: targetsReadable ? 'Unknown' : 'Not readable',
                                       message: targetsReadable ? 'no SyncTarget' : 'you may not read the inventory' };
  };
  const statusOf = (key) => statuses.get(key);
  // Clusters drawn only because they keep leaving copies (a make-before-break move): an edge to one shows only
  // the copies leaving it.
  let leavingOnly = new Set();
  let drawn = new Set();
  const leavingOn = (key) => ((statusOf(key) || {}).clusters || []).filter((c) => c.phase === 'Leaving').map((c) => c.name);
  const edgeState = (key, cluster) => {
    const state = copyState(statusOf(key), cluster, clusterHealth(cluster));
    return leavingOnly.has(cluster) && state.state !== 'leaving' ? { state: 'none', reason: '' } : state;
  };

  // PlacementStatuses keyed by the object they summarize.
  const statuses = new Map();
  const statusInformer = new Informer(hub, `/clusters/${enc(id)}/apis/status.spacehub.io/v1alpha1/placementstatuses`, {
    onChange(keys) {
      const touched = new Set();
      for (const key of keys) {
        for (const [k, ps] of statuses) if (ps.__name === key) { statuses.delete(k); touched.add(k); }
        const ps = statusInformer.items.get(key);
        if (ps && ps.object) {
          ps.__name = key;
          statuses.set(statusKey(ps.object), ps);
          touched.add(statusKey(ps.object));
        }
      }
      const left = [...leavingOnly].some((c) => !objects.some((o) => leavingOn(o.key).includes(c)));
      if (([...touched].some((k) => !edgesByObject.has(k) || leavingOn(k).some((c) => !drawn.has(c))) || left) && detail) {
        scheduleRedraw();
      }
      for (const k of touched) recolourObject(k);
    },
    onError: (err) => showError(errors, err),
  });

  const targets = new Informer(hub, `/clusters/${enc(inventory)}/apis/edge.kubestellar.io/v2alpha1/synctargets`, {
    onChange(keys) {
      scheduling.targetsChanged(keys, targets.items);
      for (const cluster of keys) {
        const now = clusterHealth(cluster);
        const before = healthOf.get(cluster);
        if (!edgesByCluster.has(cluster) || !targets.items.has(cluster)) continue;
        if (before && before.state === now.state && before.message === now.message) continue;
        healthOf.set(cluster, now);
        recolourCluster(cluster, now);
      }
    },
    onState: (state) => { live.dataset.state = state; live.textContent = state === 'live' ? 'live' : 'reconnecting…'; },
  });

  const placementWatch = new Informer(hub,
    `/clusters/${enc(id)}/apis/edge.kubestellar.io/v2alpha1/edgeplacements?fieldSelector=${enc(`metadata.name=${name}`)}`,
    { onChange: () => { if (detail) scheduleRedraw(); }, onError: (err) => showError(errors, err) });

  function setEdge(path, state, object, cluster) {
    path.setAttribute('class', `edge s-${state.state}`);
    path.dataset.state = state.state;
    path.firstChild.textContent = edgeTitle(object, cluster, state);
  }

  function recolourObject(key) {
    const object = objects.find((o) => o.key === key);
    for (const path of edgesByObject.get(key) || []) {
      setEdge(path, edgeState(key, path.dataset.cluster), object, path.dataset.cluster);
    }
    drawSummary();
  }

  function recolourCluster(cluster, h) {
    const node = picture.querySelector(`g.cluster[data-cluster="${CSS.escape(cluster)}"]`);
    if (node) {
      node.dataset.health = h.state;
      node.firstChild.textContent = `cluster ${cluster}: ${h.label}${h.message ? ` — ${h.message}` : ''}`;
    }
    for (const path of edgesByCluster.get(cluster) || []) {
      const object = objects.find((o) => o.key === path.dataset.object);
      setEdge(path, edgeState(path.dataset.object, cluster), object, cluster);
    }
    drawSummary();
  }

  function drawSummary() {
    const counts = {};
    for (const path of picture.querySelectorAll('path.edge')) {
      if (path.dataset.state !== 'none') counts[path.dataset.state] = (counts[path.dataset.state] || 0) + 1;
    }
    view.querySelector('#placement-summary').textContent = detail
      ? `${objects.length} objects × ${detail.destinations.length} clusters · ` +
        (Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(', ') || 'no copies')
      : '';
  }

  function scheduleRedraw() {
    if (redrawTimer !== null) return;
    redrawTimer = setTimeout(() => { redrawTimer = null; load(); }, REDRAW_DELAY_MS);
  }

  function draw() {
    const start = performance.now();
    objects = detail.objects.map((o) => {
      const key = statusKey(o);
      const ps = statuses.get(key);
      const kind = ps && ps.object ? ps.object.kind : o.resource;
      return { key, ref: o, label: `${kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}` };
    });
    const destinations = new Set(detail.destinations.map((d) => d.syncTarget));
    leavingOnly = new Set(objects.flatMap((o) => leavingOn(o.key)).filter((c) => !destinations.has(c)));
    drawn = new Set([...destinations, ...leavingOnly]);
    const clusters = [...drawn].sort().map((c) => ({ name: c, health: clusterHealth(c) }));
    healthOf = new Map(clusters.map((c) => [c.name, c.health]));
    picture.innerHTML = layout({ space, placement: name, objects, clusters, edgeState });
    edgesByCluster = new Map();
    edgesByObject = new Map();
    for (const path of picture.querySelectorAll('path.edge')) {
      const c = path.dataset.cluster;
      const o = path.dataset.object;
      if (!edgesByCluster.has(c)) edgesByCluster.set(c, []);
      if (!edgesByObject.has(o)) edgesByObject.set(o, []);
      edgesByCluster.get(c).push(path);
      edgesByObject.get(o).push(path);
    }
    const problems = [...detail.missingCRDs.map((c) => `missing CRD: ${c}`),
                      ...detail.unservedResources.map((r) => `not served in this space: ${r}`)];
    notes.innerHTML = problems.map((p) => `<p class="warning">${esc(p)}</p>`).join('');
    const rollout = rolloutOf(placementWatch.items.get(name));
    view.querySelector('#rollout').innerHTML = rolloutPanel(rollout);
    if (rollout) markRevisions(picture, rollout);
    drawSummary();
    performance.measure('draw:placement', { start });  // read by bench/ui_bench.py
  }

  async function load() {
    try {
      detail = await hub.get(`/placement/v1/spaces/${enc(id)}/placements/${enc(name)}`);
      showError(errors, null);
      draw();
      scheduling.refresh();
    } catch (err) {
      detail = null;
      picture.innerHTML = '';
      errors.innerHTML = errorBox(err);
    }
  }

  picture.addEventListener('click', (event) => {
    const edge = event.target.closest('path.edge');
    const objectNode = event.target.closest('g.object');
    const clusterNode = event.target.closest('g.cluster');
    if (edge) {
      const object = objects.find((o) => o.key === edge.dataset.object);
      const state = edgeState(edge.dataset.object, edge.dataset.cluster);
      const entry = state.entry || {};
      const pods = entry.associated && entry.associated.pods ? JSON.stringify(entry.associated.pods) : '';
      details.className = 'details';
      details.innerHTML = `<h3>${esc(object.label)} on ${esc(edge.dataset.cluster)}</h3>` +
        `<p><span class="swatch s-${state.state}"></span> <strong data-detail-state>${esc(state.state)}</strong>` +
        ` — <span data-detail-reason>${esc(state.reason || '')}</span></p>` +
        (entry.replicas !== undefined ? `<p>replicas on this cluster: ${esc(entry.replicas)}</p>` : '') +
        (entry.revision !== undefined ? `<p>revision on this cluster: <strong data-detail-revision>${esc(entry.revision)}</strong></p>` : '') +
        (entry.reportedAt ? `<p class="muted">reported at ${esc(entry.reportedAt)}</p>` : '') +
        (pods ? `<p>pods: <code>${esc(pods)}</code></p>` : '') +
        `<p>${link(objectHash(id, object.ref), 'the object in every cluster →')}</p>`;
    } else if (objectNode) {
      const object = objects.find((o) => o.key === objectNode.dataset.object);
      location.hash = `#${objectHash(id, object.ref)}`;
    } else if (clusterNode) {
      const h = clusterHealth(clusterNode.dataset.cluster);
      details.className = 'details';
      details.innerHTML = `<h3>cluster ${esc(clusterNode.dataset.cluster)}</h3><p><span class="health ${h.state}">${esc(h.label)}</span> ${esc(h.message)}</p>` +
        `<p>${link(`/fleet?selector=id=${clusterNode.dataset.cluster}`, 'in the fleet →')}</p>`;
    }
  });

  (async () => {
    const inventoryRead = targets.start().catch((err) => {
      // Someone who may read this space but not the inventory still sees the copies' states.
      if (!(err instanceof HubError) || err.code !== 403) throw err;
      targetsReadable = false;
      notes.insertAdjacentHTML('beforebegin', `<p class="muted">Cluster health is not shown: ${esc(err.message)}</p>`);
    });
    await Promise.all([inventoryRead, statusInformer.start(), placementWatch.start()]).catch((err) => showError(errors, err));
    await load();
    await scheduling.load();
    markRendered(view, 'placement');
  })();
  return {
    stop() {
      targets.stop();
      statusInformer.stop();
      placementWatch.stop();
      scheduling.stop();
      if (redrawTimer !== null) clearTimeout(redrawTimer);
    },
  };
}
