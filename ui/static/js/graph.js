// The placement picture's layout: space → placement → selected objects → clusters, as one SVG string.
// Pure (no DOM): given the nodes and a state per (object, cluster) edge it returns the markup, so the view
// can draw a thousand destinations in one assignment and recolour edges in place afterwards.

import { esc } from './dom.js';

const ROW = 26;
const BOX_H = 20;
const TOP = 30;
const COLUMNS = { space: 10, placement: 190, object: 390, cluster: 720 };
const WIDTHS = { space: 150, placement: 170, object: 250, cluster: 180 };
const OBJECT_REGION = 520;  // objects spread over at most this height, so they stay in view in a big fleet

function clip(text, width) {
  const max = Math.floor(width / 7);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function box(kind, x, y, label, attrs, title) {
  const w = WIDTHS[kind];
  return `<g class="node ${kind}" ${attrs} transform="translate(${x},${y})"><title>${esc(title)}</title>` +
    `<rect width="${w}" height="${BOX_H}" rx="4"></rect><text x="8" y="14">${esc(clip(label, w - 12))}</text></g>`;
}

function curve(x1, y1, x2, y2) {
  const mid = (x1 + x2) / 2;
  return `M${x1} ${y1}C${mid} ${y1},${mid} ${y2},${x2} ${y2}`;
}

export function edgeTitle(object, cluster, state) {
  return `${object.label} → ${cluster}: ${state.state}${state.reason ? ` — ${state.reason}` : ''}`;
}

// objects: [{key, label}], clusters: [{name, health: {state, message}}], edgeState(objectKey, cluster) → {state, reason}
export function layout({ space, placement, objects, clusters, edgeState }) {
  const rows = Math.max(clusters.length, 1);
  const height = TOP * 2 + rows * ROW;
  const region = Math.min(height - TOP * 2, Math.max(objects.length * ROW, Math.min(OBJECT_REGION, rows * ROW)));
  const objectGap = objects.length ? region / objects.length : 0;
  const objectY = (j) => TOP + objectGap * (j + 0.5) - BOX_H / 2;
  const centre = TOP + region / 2 - BOX_H / 2;
  const clusterY = (i) => TOP + i * ROW;
  const parts = [];
  const half = BOX_H / 2;

  parts.push(`<path class="link" d="${curve(COLUMNS.space + WIDTHS.space, centre + half, COLUMNS.placement, centre + half)}"></path>`);
  objects.forEach((o, j) => {
    parts.push(`<path class="link" d="${curve(COLUMNS.placement + WIDTHS.placement, centre + half, COLUMNS.object, objectY(j) + half)}"></path>`);
  });
  objects.forEach((o, j) => {
    const y1 = objectY(j) + half;
    const x1 = COLUMNS.object + WIDTHS.object;
    clusters.forEach((c, i) => {
      const state = edgeState(o.key, c.name);
      parts.push(`<path class="edge s-${state.state}" data-object="${esc(o.key)}" data-cluster="${esc(c.name)}" ` +
        `data-state="${state.state}" d="${curve(x1, y1, COLUMNS.cluster, clusterY(i) + half)}">` +
        `<title>${esc(edgeTitle(o, c.name, state))}</title></path>`);
    });
  });
  parts.push(box('space', COLUMNS.space, centre, space, `data-space="${esc(space)}"`, `space ${space}`));
  parts.push(box('placement', COLUMNS.placement, centre, placement, `data-placement="${esc(placement)}"`,
                 `EdgePlacement ${placement}`));
  objects.forEach((o, j) => parts.push(box('object', COLUMNS.object, objectY(j), o.label, `data-object="${esc(o.key)}"`,
                                           `${o.label} (click for its status in every cluster)`)));
  clusters.forEach((c, i) => parts.push(box('cluster', COLUMNS.cluster, clusterY(i), c.name,
    `data-cluster="${esc(c.name)}" data-health="${c.health.state}"`, `cluster ${c.name}: ${c.health.label}${c.health.message ? ` — ${c.health.message}` : ''}`)));
  if (clusters.length === 0) {
    parts.push(`<text class="empty" x="${COLUMNS.cluster}" y="${TOP + 14}">no destinations</text>`);
  }
  const width = COLUMNS.cluster + WIDTHS.cluster + 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="picture" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" role="img" aria-label="placement ${esc(placement)}">${parts.join('')}</svg>`;
}
