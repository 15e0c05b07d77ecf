// The bearer token (and the space) of a kubeconfig's current context, read in the browser: the file never
// leaves the page. Supported: a user with `token`. Refused with the reason: `tokenFile` (a browser cannot
// open other files), client certificates (the hub signs users in by token), `exec` and `auth-provider`
// plugins (they run programs).

import { parseYaml } from './yaml.js';

function named(list, name, what) {
  const found = (Array.isArray(list) ? list : []).find((entry) => entry && entry.name === name);
  if (!found) throw new Error(`the kubeconfig names ${what} "${name}" but does not define it`);
  return found;
}

// The space a server URL points at (`https://hub:6443/clusters/team-a` → team-a), or '' for none.
export function spaceOfServer(server) {
  try {
    const match = /^\/clusters\/([^/]+)\/?$/.exec(new URL(server).pathname);
    return match ? decodeURIComponent(match[1]) : '';
  } catch {
    return '';
  }
}

export function readKubeconfig(text) {
  const doc = parseYaml(text);
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new Error('this is not a kubeconfig: expected a mapping with contexts, clusters and users');
  }
  const current = doc['current-context'];
  if (!current) throw new Error('the kubeconfig has no current-context');
  const context = named(doc.contexts, current, 'context').context || {};
  const user = named(doc.users, context.user, 'user').user || {};
  const cluster = context.cluster ? (named(doc.clusters, context.cluster, 'cluster').cluster || {}) : {};
  if (typeof user.token !== 'string' || !user.token) {
    if (user.tokenFile) throw new Error('the user reads its token from a file (tokenFile), which a browser cannot open; paste the token instead');
    if (user['client-certificate-data'] || user['client-certificate']) throw new Error('the user signs in with a client certificate; the hub\'s web UI signs in with bearer tokens only');
    if (user.exec || user['auth-provider']) throw new Error('the user\'s credential comes from a plugin (exec or auth-provider), which a browser cannot run; paste a token instead');
    throw new Error(`user "${context.user}" of context "${current}" has no token`);
  }
  const server = typeof cluster.server === 'string' ? cluster.server : '';
  return { token: user.token.trim(), space: spaceOfServer(server), server, context: current };
}
