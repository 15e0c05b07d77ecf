// A staged rollout on the placement picture: the EdgePlacement's `status.rollout` (placement/rollouts.py
// writes it) as a panel above the picture — phase, message, revision, and one row per stage with its clusters
// (each with the revision it is given and its phase) and the updated/ready/failed counts — and each cluster's
// revision on its node in the picture. Pure rendering: placement.js watches the EdgePlacement and calls these
// on every change, so the panel follows the rollout without a reload.

import { esc } from './dom.js';

// Phases of status.rollout.phase, as CSS classes: what needs a person (approval, a failure) stands out.
const PHASE_CLASS = {
  Progressing: 'progressing', Paused: 'paused', WaitingForApproval: 'waiting', Failed: 'failed',
  RolledBack: 'failed', Complete: 'complete',
};

// The revision of one cluster's copy as its PlacementStatus entry gives it ('—' without one: no rollout).
export function revisionOf(copyState) {
  return copyState.entry && copyState.entry.revision !== undefined ? copyState.entry.revision : '—';
}

export function rolloutOf(edgePlacement) {
  return ((edgePlacement || {}).status || {}).rollout || null;
}

function clusterChip(cluster) {
  const message = cluster.message ? ` — ${cluster.message}` : '';
  return `<span class="rollout-cluster rc-${esc(String(cluster.phase).toLowerCase())}" data-rollout-cluster="${esc(cluster.name)}" ` +
    `data-revision="${esc(cluster.revision)}" data-phase="${esc(cluster.phase)}" ` +
    `title="${esc(`${cluster.name}: revision ${cluster.revision}, ${cluster.phase}${message}`)}">` +
    `${esc(cluster.name)} <span class="rev">r${esc(cluster.revision)}</span></span>`;
}

function stageRow(stage, index, rollout, clusters) {
  const current = stage.name === rollout.stage && rollout.phase !== 'Complete';
  const done = stage.clusters > 0 && stage.ready === stage.clusters && stage.failed === 0;
  const members = clusters.filter((c) => c.stage === stage.name);
  return `<tr data-stage="${esc(stage.name)}" data-done="${done}"${current ? ' class="current"' : ''}>` +
    `<td>${index + 1}. ${esc(stage.name)}${current ? ' <span class="badge">current</span>' : ''}</td>` +
    `<td>${members.map(clusterChip).join(' ') || '<span class="muted">none</span>'}</td>` +
    `<td class="num" data-count="clusters">${esc(stage.clusters)}</td>` +
    `<td class="num" data-count="updated">${esc(stage.updated)}</td>` +
    `<td class="num" data-count="ready">${esc(stage.ready)}</td>` +
    `<td class="num" data-count="failed">${esc(stage.failed)}</td></tr>`;
}

// The panel's HTML for `rollout` (status.rollout), or '' when the placement has no rollout (yet).
export function rolloutPanel(rollout) {
  if (!rollout) return '';
  const clusters = rollout.clusters || [];
  const phase = rollout.phase || 'Progressing';
  return `<div class="rollout" data-phase="${esc(phase)}" data-revision="${esc(rollout.revision)}" data-stage="${esc(rollout.stage)}">` +
    `<p><strong>Rollout</strong> of revision <strong>${esc(rollout.revision)}</strong> ` +
    `<span class="rollout-phase ${PHASE_CLASS[phase] || 'progressing'}" id="rollout-phase">${esc(phase)}</span> ` +
    `<span id="rollout-message">${esc(rollout.message || '')}</span></p>` +
    '<table class="grid rollout-stages"><thead><tr><th>stage</th><th>clusters (revision)</th>' +
    '<th class="num">clusters</th><th class="num">updated</th><th class="num">ready</th><th class="num">failed</th></tr></thead>' +
    `<tbody>${(rollout.stages || []).map((s, i) => stageRow(s, i, rollout, clusters)).join('')}</tbody></table></div>`;
}

// Writes each cluster's revision onto its node in a freshly drawn picture, for the clusters the rollout lists.
export function markRevisions(picture, rollout) {
  const byName = new Map((rollout.clusters || []).map((c) => [c.name, c]));
  for (const node of picture.querySelectorAll('g.cluster')) {
    const entry = byName.get(node.dataset.cluster);
    if (!entry) continue;
    const label = document.createElementNS('http://www.w3.org/2000/svg', 'text');
    label.setAttribute('class', 'revision');
    label.setAttribute('x', String(Number(node.querySelector('rect').getAttribute('width')) - 6));
    label.setAttribute('y', '14');
    label.textContent = `r${entry.revision}`;
    node.dataset.revision = String(entry.revision);
    node.appendChild(label);
  }
}
