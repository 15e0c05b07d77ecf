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

// {id, name, phase, children: [...] | null (serves no spaces), error}
async function subtree(hub, id, name, phase, level) {
  const node = { id, name, phase, children: null, error: null };
  if (level >= MAX_DEPTH) return node;
  try {
    const list = await hub.get(`/clusters/${enc(id)}/apis/spacehub.io/v1alpha1/spaces`);
    const items = (list.items || []).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    node.children = await Promise.all(items.map((item) => subtree(hub, childId(id, item), item.metadata.name,
                                                                  (item.status || {}).phase || '', level + 1)));
  } catch (err) {
    if (!(err instanceof HubError) || err.code !== 404) node.error = err;
  }
  return node;
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
  let stopped = false;
  (async () => {
    const root = await subtree(hub, ROOT, ROOT, 'Active', 0);
    const home = idOf(session.space);
    let html = `<ul>${drawNode(root)}</ul>`;
    if (root.error && home !== ROOT) {
      // Listing root's spaces was refused: show the space this session signed in to, which it may enter.
      const own = await subtree(hub, home, home, '', 1);
      html = `<ul><li><span class="muted">root</span>${errorBox(root.error)}<ul>${drawNode(own)}</ul></li></ul>`;
    }
    if (stopped) return;
    tree.innerHTML = html;
    markRendered(view, 'spaces');
  })();
  return { stop() { stopped = true; } };
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
