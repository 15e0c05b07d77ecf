// Explain: edit an EdgePlacement's spec in the page (YAML or JSON) and see what it would select — the
// placement REST API's explain, which creates nothing — before saving it through the space's Kubernetes
// API (a 409 says someone else changed it meanwhile, a 403 what was refused). A stored scheduled placement's
// choice, scores and reasons are shown below (scheduling.js).

import { HubError } from './api.js';
import { enc, errorBox, esc, link, markRendered } from './dom.js';
import { SchedulingPanel } from './scheduling.js';
import { idOf } from './spaces.js';
import { YamlError, dumpYaml, parseYaml } from './yaml.js';

const AUTO_EXPLAIN_MS = 600;  // explain again this long after the last keystroke
const EDGE = 'edge.kubestellar.io/v2alpha1';
const TEMPLATE = {
  locationSelectors: [{ matchLabels: { env: 'prod' } }],
  downsync: [{ apiGroup: '', resources: ['configmaps'], namespaces: ['default'] }],
};

function mismatches(title, items) {
  if (!items.length) return '';
  return `<details><summary>${esc(title)} (${items.length})</summary><ul>${
    items.map((m) => `<li><strong>${esc(m.name)}</strong>: ${esc(m.reasons.join('; '))}</li>`).join('')}</ul></details>`;
}

function result(doc) {
  const objects = doc.objects.map((o) => `<li data-selected="${esc(`${o.resource}/${o.namespace ? `${o.namespace}/` : ''}${o.name}`)}">` +
    `${esc(o.group ? `${o.resource}.${o.group}` : o.resource)} ${esc(o.namespace ? `${o.namespace}/` : '')}${esc(o.name)}` +
    `${o.followed ? ' <span class="badge">CRD followed</span>' : ''}` +
    `${o.dependency ? ` <span class="badge">dependency</span> <span class="muted">${esc(o.because.join('; '))}</span>` : ''}</li>`).join('');
  const destinations = doc.destinations.map((d) => `<li data-destination="${esc(d.syncTarget)}">${esc(d.syncTarget)}` +
    ` <span class="muted">via Location ${esc(d.location)}</span></li>`).join('');
  const problems = [...doc.problems, ...doc.missingCRDs.map((c) => `missing CRD ${c}`),
                    ...doc.unservedResources.map((r) => `not served in this space: ${r}`)];
  return `<div class="columns">
      <div><h3>Clusters (${doc.destinations.length})</h3><ul id="explain-destinations">${destinations || '<li class="muted">none</li>'}</ul>
        ${mismatches('Locations not matched', doc.locationMismatches)}${mismatches('SyncTargets not selected', doc.targetMismatches)}</div>
      <div><h3>Objects (${doc.objects.length})</h3><ul id="explain-objects">${objects || '<li class="muted">none</li>'}</ul>
        ${mismatches('Objects not selected', doc.objectMismatches)}</div>
    </div>${problems.map((p) => `<p class="warning">${esc(p)}</p>`).join('')}`;
}

export function mount(ctx, space, name) {
  const { hub, view } = ctx;
  const id = idOf(space);
  view.innerHTML = `
    <section class="explain">
      <h1>${name ? `Explain ${esc(name)}` : 'New placement'} <span class="muted">in ${link(`/space/${id}`, space)}</span></h1>
      <p class="hint">Edit the spec (YAML or JSON); what it would select is shown as you type. Nothing changes until you save.</p>
      <div class="columns">
        <div>
          <label>Name <input id="placement-name" value="${esc(name)}" ${name ? 'readonly' : ''} spellcheck="false"></label>
          <textarea id="spec" spellcheck="false" rows="22"></textarea>
          <div class="buttons"><button id="explain-button" type="button">Explain</button>
            <button id="save-button" type="button">Save</button>
            ${name ? link(`/space/${id}/placement/${name}`, 'picture →') : ''}</div>
          <div id="save-result"></div>
        </div>
        <div><h2>Would select</h2><div id="explain-result">…</div><div id="scheduling"></div></div>
      </div>
    </section>`;
  const editor = view.querySelector('#spec');
  const out = view.querySelector('#explain-result');
  const saved = view.querySelector('#save-result');
  let stored = null;
  let timer = null;
  let asked = 0;
  const scheduling = name ? new SchedulingPanel(hub, id, name, view.querySelector('#scheduling')) : null;

  function spec() {
    const doc = parseYaml(editor.value);
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new YamlError('the spec must be a mapping');
    return doc.spec && (doc.kind || doc.apiVersion) ? doc.spec : doc;
  }

  async function explainNow() {
    timer = null;
    const mine = ++asked;
    let body;
    try { body = spec(); } catch (err) { out.innerHTML = errorBox({ message: `The spec cannot be read: ${err.message}` }); return; }
    out.classList.add('busy');
    try {
      const doc = await hub.post(`/placement/v1/spaces/${enc(id)}/placements:explain`, body);
      if (mine === asked) out.innerHTML = result(doc);
    } catch (err) {
      if (mine === asked) out.innerHTML = errorBox(err);
    } finally {
      if (mine === asked) { out.classList.remove('busy'); out.dataset.explained = String(mine); }
    }
  }

  async function save() {
    saved.innerHTML = '';
    const placementName = view.querySelector('#placement-name').value.trim();
    const base = `/clusters/${enc(id)}/apis/${EDGE}/edgeplacements`;
    try {
      const body = spec();
      if (!placementName) throw new Error('Give the placement a name.');
      let doc;
      if (stored) doc = await hub.put(`${base}/${enc(placementName)}`, { ...stored, spec: body });
      else doc = await hub.post(base, { apiVersion: EDGE, kind: 'EdgePlacement', metadata: { name: placementName }, spec: body });
      stored = doc;
      if (scheduling) scheduling.refresh();
      saved.innerHTML = `<p class="ok">Saved (resourceVersion ${esc(doc.metadata.resourceVersion)}). ${link(`/space/${id}/placement/${placementName}`, 'See the picture →')}</p>`;
    } catch (err) {
      const conflict = err instanceof HubError && err.code === 409 && stored
        ? ' Someone changed this placement since it was loaded; reload the page to edit the current version.' : '';
      saved.innerHTML = errorBox({ message: `Not saved: ${err.message}${conflict}`, request: err.request });
    }
  }

  editor.addEventListener('input', () => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(explainNow, AUTO_EXPLAIN_MS);
  });
  view.querySelector('#explain-button').addEventListener('click', () => {
    if (timer !== null) clearTimeout(timer);
    explainNow();
  });
  view.querySelector('#save-button').addEventListener('click', save);

  (async () => {
    if (name) {
      try {
        stored = await hub.get(`/clusters/${enc(id)}/apis/${EDGE}/edgeplacements/${enc(name)}`);
        editor.value = dumpYaml(stored.spec || {});
      } catch (err) {
        out.innerHTML = errorBox(err);
        markRendered(view, 'explain');
        return;
      }
    } else {
      editor.value = dumpYaml(TEMPLATE);
    }
    await Promise.all([explainNow(), scheduling && scheduling.load()]);
    markRendered(view, 'explain');
  })();
  return {
    stop() {
      if (timer !== null) clearTimeout(timer);
      asked = -1;
      if (scheduling) scheduling.stop();
    },
  };
}
