// The spaces tree, and one space's page: its placements and the objects they place.
//
// The tree lists the Space objects of root and recurses into each child that serves Space objects itself
// (hierarchical spaces, `root:org:team`); a child that does not (404) is a leaf, so the same code reads a
// flat hub and a hierarchical one. A space is addressed by its id (the path below root: `org:team`,
// or `team-a`), which `/clusters/<id>` and the placement API both take.

import { HubError, Informer } from './api.js';
import { enc, errorBox, esc, link, markRendered, showError } from './dom.js';
import { statusKey } from './states.js';

const MAX_DEPTH = 8;
const ROOT = 'root';

export function idOf(space) {
  return space.startsWith(`${ROOT}:`) ? space.slice(ROOT.length + 1) : space;
}

function childId(parent, item) {
  const url = (item.status || {}).url;
  if (url) {
    try {
      const match = /\/clusters\/([^/]+)\/?$/.exec(new URL(url, location.href).pathname);
      if (match) return idOf(decodeURIComponent(match[1]));
    } catch { /* not a URL: fall back to the name */ }
  }
  return parent === ROOT ? item.metadata.name : `${parent}:${item.metadata.name}`;
}

// The tree is live: one informer (list, then watch) per space that serves Space objects, started as the tree
// reaches it; a Space created, deleted or changing phase anywhere redraws the tree, and a new space's own
// children are watched from then on. A space that serves none (404) is a leaf; one refused is shown refused.
class LiveTree {
  constructor(hub, onChange) {
    this.hub = hub;
    this.onChange = onChange;
    this.informers = new Map();  // space id -> Informer, or null (serves no Space objects)
    this.errors = new Map();  // space id -> the error listing its spaces
  }

  // Watch ``id``'s spaces and, recursively, theirs (resolves once all of them are listed).
  async reach(id, level) {
    if (level >= MAX_DEPTH) return;
    if (!this.informers.has(id)) {
      const informer = new Informer(this.hub, `/clusters/${enc(id)}/apis/spacehub.io/v1alpha1/spaces`, {
        onChange: () => { this.reach(id, level).then(() => this.onChange()); },
        onError: (err) => { this.errors.set(id, err); this.onChange(); },
      });
      this.informers.set(id, informer);
      try {
        await informer.start();
      } catch (err) {
        informer.stop();
        this.informers.set(id, null);
        if (!(err instanceof HubError) || err.code !== 404) this.errors.set(id, err);
        return;
      }
    }
    const informer = this.informers.get(id);
    if (!informer) return;
    await Promise.all([...informer.items.values()].map((item) => this.reach(childId(id, item), level + 1)));
  }

  // {id, name, phase, children: [...] | null (serves no spaces), error}
  node(id, name, phase, level) {
    const informer = this.informers.get(id);
    const items = informer ? [...informer.items.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)) : null;
    return {
      id, name, phase, error: this.errors.get(id) || null,
      children: items && level < MAX_DEPTH ? items.map((item) => this.node(childId(id, item), item.metadata.name,
                                                                           (item.status || {}).phase || '', level + 1)) : null,
    };
  }

  // Stop watching spaces no longer in the tree (deleted, or under a deleted one): keep only ``shown``'s ids.
  prune(shown) {
    const keep = new Set();
    const walk = (node) => { keep.add(node.id); (node.children || []).forEach(walk); };
    shown.forEach(walk);
    for (const [id, informer] of this.informers) {
      if (keep.has(id)) continue;
      if (informer) informer.stop();
      this.informers.delete(id);
      this.errors.delete(id);
    }
  }

  stop() {
    for (const informer of this.informers.values()) if (informer) informer.stop();
  }
}

function drawNode(node) {
  const phase = node.phase && !['Active', 'Ready'].includes(node.phase) ? ` <span class="badge">${esc(node.phase)}</span>` : '';
  const error = node.error ? `<div class="tree-error">${errorBox(node.error)}</div>` : '';
  const children = node.children && node.children.length
    ? `<ul>${node.children.map(drawNode).join('')}</ul>` : '';
  return `<li>${link(`/space/${node.id}`, node.name, `data-space="${esc(node.id)}"`)}${phase}${error}${children}</li>`;
}

export function mountTree(ctx) {
  const { hub, view, session } = ctx;
  view.innerHTML = '<section class="spaces"><h1>Spaces</h1><div id="tree" class="tree">Loading…</div></section>';
  const tree = view.querySelector('#tree');
  const home = idOf(session.space);
  let stopped = false;
  let ready = false;
  const live = new LiveTree(hub, () => { if (ready) draw(); });

  function draw() {
    if (stopped) return;
    const root = live.node(ROOT, ROOT, 'Active', 0);
    let html = `<ul>${drawNode(root)}</ul>`;
    const shown = [root];
    if (root.error && home !== ROOT) {
      // Listing root's spaces was refused: show the space this session signed in to, which it may enter.
      const own = live.node(home, home, '', 1);
      shown.push(own);
      html = `<ul><li><span class="muted">root</span>${errorBox(root.error)}<ul>${drawNode(own)}</ul></li></ul>`;
    }
    live.prune(shown);
    tree.innerHTML = html;
  }

  (async () => {
    await live.reach(ROOT, 0);
    if (live.errors.has(ROOT) && home !== ROOT) await live.reach(home, 1);
    if (stopped) return;
    ready = true;
    draw();
    markRendered(view, 'spaces');
  })();
  return { stop() { stopped = true; live.stop(); } };
}

function objectHash(space, o) {
  return `/space/${space}/object/${o.group || 'core'}/${o.resource}/${o.namespace || '-'}/${o.name}`;
}

export function mountSpace(ctx, space) {
  const { hub, view } = ctx;
  const id = idOf(space);
  view.innerHTML = `
    <section class="space">
      <h1>Space ${esc(space)}</h1>
      <h2>Placements <a class="action" href="#/space/${esc(enc(id))}/explain">new placement…</a></h2>
      <div id="placements">Loading…</div>
      <h2>Placed objects</h2>
      <div id="objects-error"></div>
      <table class="grid"><thead><tr><th>Object</th><th>Targeted</th><th>Applied</th><th>Ready</th><th>Failed</th><th>Worst</th></tr></thead>
      <tbody id="objects"></tbody></table>
    </section>`;
  const placements = view.querySelector('#placements');
  const objects = view.querySelector('#objects');

  async function drawPlacements() {
    try {
      const doc = await hub.get(`/placement/v1/spaces/${enc(id)}/placements`);
      placements.innerHTML = doc.items.length === 0 ? '<p class="muted">No EdgePlacements in this space.</p>' :
        `<table class="grid"><thead><tr><th>Placement</th><th>Clusters</th><th>Objects</th><th></th></tr></thead><tbody>${
          doc.items.map((p) => `<tr data-placement="${esc(p.name)}"><td>${link(`/space/${id}/placement/${p.name}`, p.name)}</td>` +
            `<td class="num">${p.destinations.length}</td><td class="num">${p.selectedObjectCount}</td>` +
            `<td>${link(`/space/${id}/explain/${p.name}`, 'explain / edit')}</td></tr>`).join('')}</tbody></table>`;
    } catch (err) {
      placements.innerHTML = errorBox(err);
    }
  }

  const informer = new Informer(hub, `/clusters/${enc(id)}/apis/status.spacehub.io/v1alpha1/placementstatuses`, {
    onChange() {
      const rows = [...informer.items.values()].map((ps) => ps.object ? ps : null).filter(Boolean)
        .sort((a, b) => statusKey(a.object).localeCompare(statusKey(b.object)));
      objects.innerHTML = rows.map((ps) => {
        const o = ps.object;
        const s = ps.summary || {};
        const worst = ps.worstCondition && ps.worstCondition.cluster
          ? `${esc(ps.worstCondition.cluster)}: ${esc(ps.worstCondition.phase)} ${esc(ps.worstCondition.message || '')}` : '';
        const title = `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;
        return `<tr><td>${link(objectHash(id, o), title)}</td><td class="num">${s.targeted ?? 0}</td>` +
          `<td class="num">${s.applied ?? 0}</td><td class="num">${s.ready ?? 0}</td><td class="num">${s.failed ?? 0}</td>` +
          `<td>${worst}</td></tr>`;
      }).join('');
    },
    onError: (err) => showError(view.querySelector('#objects-error'), err),
  });
  Promise.all([drawPlacements(), informer.start().catch((err) => showError(view.querySelector('#objects-error'), err))])
    .then(() => markRendered(view, 'space'));
  return { stop() { informer.stop(); } };
}

export { objectHash };
