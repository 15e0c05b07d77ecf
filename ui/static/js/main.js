// The page: sign-in, the session (kept in this tab's sessionStorage only), the header and the router.
// Each view's `mount(ctx, …)` returns `{ stop() }`, called when the user goes elsewhere so that its
// watches end.

import { Hub } from './api.js';
import { esc, errorBox } from './dom.js';
import { readKubeconfig } from './kubeconfig.js';
import * as explain from './explain.js';
import * as fleet from './fleet.js';
import * as object from './object.js';
import * as placement from './placement.js';
import * as spaces from './spaces.js';

const SESSION = 'spacehub.session';
const inventory = document.querySelector('meta[name="spacehub-inventory"]').content;
const view = document.getElementById('view');
let session = JSON.parse(sessionStorage.getItem(SESSION) || 'null');
let mounted = null;

function signOut(message) {
  sessionStorage.removeItem(SESSION);
  session = null;
  route(message);
}

function hub() {
  return new Hub(session.token, () => signOut('The hub no longer accepts this token (401). Sign in again.'));
}

async function whoAmI(token, space) {
  const review = await new Hub(token).post(`/clusters/${encodeURIComponent(space)}/apis/authentication.k8s.io/v1/selfsubjectreviews`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  return ((review.status || {}).userInfo || {}).username || '(unknown)';
}

function signIn(message) {
  view.innerHTML = `
    <section class="signin">
      <h1>Sign in to spacehub</h1>
      ${message ? errorBox({ message }) : ''}
      <form id="signin-form" autocomplete="off">
        <label>Bearer token <input id="token" name="token" type="password" spellcheck="false"
               placeholder="paste a token (spacehub user create … prints a kubeconfig holding one)"></label>
        <label>or a kubeconfig file <input id="kubeconfig" type="file"></label>
        <p class="hint">The kubeconfig is read in this page (YAML or JSON): its current context's user must have a
        <code>token</code>; its server's <code>/clusters/&lt;space&gt;</code> sets the space.</p>
        <label>Space <input id="space" name="space" value="root" spellcheck="false"></label>
        <button type="submit">Sign in</button>
        <div id="signin-error"></div>
      </form>
    </section>`;
  const form = view.querySelector('#signin-form');
  const errors = view.querySelector('#signin-error');
  view.querySelector('#kubeconfig').addEventListener('change', async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    try {
      const found = readKubeconfig(await file.text());
      form.token.value = found.token;
      if (found.space) form.space.value = found.space;
      errors.innerHTML = `<p class="ok">Read the token of context "${esc(found.context)}".</p>`;
    } catch (err) {
      errors.innerHTML = errorBox({ message: `${file.name}: ${err.message}` });
    }
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = form.token.value.trim();
    const space = form.space.value.trim() || 'root';
    if (!token) { errors.innerHTML = errorBox({ message: 'Paste a token or choose a kubeconfig file.' }); return; }
    try {
      const user = await whoAmI(token, space);
      session = { token, space, user };
      sessionStorage.setItem(SESSION, JSON.stringify(session));
      if (!location.hash || location.hash === '#/signin') location.hash = '#/fleet';
      else route();
    } catch (err) {
      errors.innerHTML = errorBox(err);
    }
  });
}

function header() {
  const who = document.getElementById('who');
  const out = document.getElementById('signout');
  who.textContent = session ? `${session.user} · ${session.space}` : '';
  out.hidden = !session;
  const section = (location.hash.split('/')[1] || '').split('?')[0];
  for (const a of document.querySelectorAll('nav a[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === section || (section === 'space' && a.dataset.nav === 'spaces'));
  }
}

function route(message) {
  if (mounted) mounted.stop();
  mounted = null;
  delete view.dataset.rendered;
  header();
  if (!session) { signIn(message); return; }
  const [path, query] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const ctx = { hub: hub(), inventory, session, view, params: new URLSearchParams(query || '') };
  const [section, space, kind, ...rest] = parts;
  if (section === 'spaces') mounted = spaces.mountTree(ctx);
  else if (section === 'space' && space && !kind) mounted = spaces.mountSpace(ctx, space);
  else if (section === 'space' && kind === 'placement' && rest.length === 1) mounted = placement.mount(ctx, space, rest[0]);
  else if (section === 'space' && kind === 'explain') mounted = explain.mount(ctx, space, rest[0] || '');
  else if (section === 'space' && kind === 'object' && rest.length === 4) mounted = object.mount(ctx, space, ...rest);
  else if (section === 'fleet' || !section || section === 'signin') mounted = fleet.mount(ctx);
  else view.innerHTML = errorBox({ message: `There is no page at ${location.hash}.` });
}

document.getElementById('signout').addEventListener('click', () => signOut());
window.addEventListener('hashchange', () => route());
route();
