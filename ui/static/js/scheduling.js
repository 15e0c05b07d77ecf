// Scheduling: a scheduled placement's choice as the placement REST API explains it
// (GET /placement/v1/spaces/S/placements/NAME/scheduling): the clusters chosen, every candidate's score per
// prioritizer and in total, and for each one not chosen the reason (NotSelected, Tainted, Cordoned, Lost,
// SpreadConstraint, Outscored, Steady) — and a cluster's taints (SyncTarget spec.taints) as badges.
//
// The panel is live with its view: asked again when the placement changes (its choice is kept in its
// status) and when a SyncTarget changes in what scheduling reads (labels, cordon, taints, allocatable,
// readiness) — not on every heartbeat.

import { enc, errorBox, esc } from './dom.js';

const REFRESH_DELAY_MS = 150;  // a burst of changes (a taint, then the choice it causes) is asked about once

// kubectl's spelling of a taint: key=value:Effect, or key:Effect.
function taintText(taint) {
  return `${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;
}

export function taintBadges(target) {
  const taints = ((target.spec || {}).taints || []).filter((t) => t && t.key && t.effect);
  return taints.map((t) => `<span class="badge taint taint-${esc(t.effect)}" data-taint="${esc(taintText(t))}"` +
    ` title="${esc(t.timeAdded ? `tainted at ${t.timeAdded}` : 'taint')}">${esc(taintText(t))}</span>`).join('');
}

function score(value) {
  if (value === undefined || value === null) return '<span class="muted">–</span>';
  return esc(Number.isInteger(value) ? String(value) : value.toFixed(1));
}

function table(doc) {
  const prioritizers = [...new Set(doc.candidates.flatMap((c) => Object.keys(c.scores || {})))].sort();
  const head = ['Cluster', 'Chosen', 'Score', ...prioritizers, 'Reason'].map((h) => `<th>${esc(h)}</th>`).join('');
  const rows = doc.candidates.map((c) => `<tr data-candidate="${esc(c.cluster)}" data-chosen="${c.chosen}"` +
    ` data-reason="${esc(c.reason || '')}"><td class="name">${esc(c.cluster)}</td>` +
    `<td>${c.chosen ? '<span class="health ready">chosen</span>' : ''}</td>` +
    `<td class="num total">${score(c.score)}</td>` +
    prioritizers.map((p) => `<td class="num" data-prioritizer="${esc(p)}">${score((c.scores || {})[p])}</td>`).join('') +
    `<td>${c.reason ? `<span class="reason r-${esc(c.reason)}">${esc(c.reason)}</span> ` +
      `<span class="muted">${esc(c.message || '')}</span>` : ''}</td></tr>`).join('');
  return `<table class="grid scores"><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table>`;
}

export function schedulingHtml(doc) {
  if (!doc.scheduled) return '';
  const condition = doc.condition || {};
  const unmet = condition.status === 'False'
    ? `<p class="warning">${esc(condition.reason || '')}: ${esc(condition.message || '')}</p>` : '';
  const chosen = doc.chosen.length ? doc.chosen.map((c) => `<span class="chip">${esc(c)}</span>`).join('') : 'none';
  return `<h2>Chosen clusters <span class="muted">(${doc.chosen.length} of ${esc(doc.wanted ?? '?')})</span></h2>` +
    `<p id="scheduling-chosen">${chosen}</p>${unmet}${table(doc)}`;
}

// What of a SyncTarget the choice depends on; a heartbeat changes none of it.
function schedulingInputs(target) {
  const spec = target.spec || {};
  const status = target.status || {};
  const ready = (status.conditions || []).find((c) => c && c.type === 'Ready') || {};
  return JSON.stringify([target.metadata.labels || {}, spec.unschedulable || false, spec.taints || [],
                         status.allocatable || {}, ready.status || '']);
}

// The panel in `element` for placement `name` of space id `id`: refresh() asks the API again (coalesced);
// targetsChanged(keys, items) does so only if the placement is scheduled and a changed SyncTarget changed what
// scheduling reads (a placement becomes scheduled by a change of its own, which refresh() hears of).
export class SchedulingPanel {
  constructor(hub, id, name, element) {
    this.hub = hub;
    this.path = `/placement/v1/spaces/${enc(id)}/placements/${enc(name)}/scheduling`;
    this.element = element;
    this.inputs = new Map();
    this.timer = null;
    this.asked = 0;
    this.stopped = false;
    this.scheduled = false;  // as last answered
  }

  // Asks now (a pending refresh is then not needed).
  async load() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const mine = ++this.asked;
    try {
      const doc = await this.hub.get(this.path);
      if (mine === this.asked && !this.stopped) {
        this.scheduled = doc.scheduled;
        this.element.innerHTML = schedulingHtml(doc);
      }
    } catch (err) {
      if (mine === this.asked && !this.stopped) this.element.innerHTML = errorBox(err);
    }
  }

  refresh() {
    if (this.timer !== null || this.stopped) return;
    this.timer = setTimeout(() => this.load(), REFRESH_DELAY_MS);
  }

  targetsChanged(keys, items) {
    let changed = false;
    for (const key of keys) {
      const target = items.get(key);
      const now = target ? schedulingInputs(target) : null;
      if (this.inputs.get(key) !== now) changed = true;
      if (now === null) this.inputs.delete(key);
      else this.inputs.set(key, now);
    }
    if (changed && this.scheduled) this.refresh();
  }

  stop() {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }
}
