// The hub as the page sees it: JSON requests carrying the user's bearer token, errors turned into sentences
// that say what was refused, and informers (list, then a Kubernetes watch resumed from the last
// resourceVersion) that keep a map of objects current without reloading.
//
// Watches are the spaces' own Kubernetes watches (chunked JSON lines, read with fetch streaming): the same
// authorization as kubectl's, the same resume and 410 semantics, and every hub process on one database
// serves them from the shared log. EventSource cannot send an Authorization header, so SSE would need
// fetch streaming as well.

export class HubError extends Error {
  constructor(code, message, request) {
    super(message);
    this.code = code;          // the HTTP status (0: the hub could not be reached)
    this.request = request;    // "GET /clusters/…", shown beside the message
  }
}

function describe(code, doc, fallback) {
  const message = doc && doc.kind === 'Status' && doc.message ? doc.message : fallback;
  if (code === 401) return `The hub does not accept this token (401 Unauthorized): ${message}. Sign in again.`;
  if (code === 403) return `Refused (403 Forbidden): ${message}`;
  if (code === 404) return `Not found (404): ${message}`;
  const reason = doc && doc.reason ? doc.reason : fallback;
  return `${code} ${reason}: ${message}`;
}

export class Hub {
  constructor(token, onUnauthorized) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;  // a 401 ends the session: the token was revoked or expired
  }

  headers(json) {
    const headers = { Authorization: `Bearer ${this.token}`, Accept: 'application/json' };
    if (json) headers['Content-Type'] = 'application/json';
    return headers;
  }

  async request(method, path, body, signal) {
    const request = `${method} ${path}`;
    let res;
    try {
      res = await fetch(path, { method, headers: this.headers(body !== undefined), signal,
                                body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      throw new HubError(0, `The hub could not be reached: ${err.message}`, request);
    }
    const text = await res.text();
    let doc = null;
    try { doc = text ? JSON.parse(text) : null; } catch { doc = null; }
    if (!res.ok) {
      if (res.status === 401 && this.onUnauthorized) this.onUnauthorized();
      throw new HubError(res.status, describe(res.status, doc, res.statusText || text.slice(0, 200)), request);
    }
    return doc;
  }

  get(path, signal) { return this.request('GET', path, undefined, signal); }
  post(path, body) { return this.request('POST', path, body); }
  put(path, body) { return this.request('PUT', path, body); }
}

function withQuery(path, query) {
  return path + (path.includes('?') ? '&' : '?') + query;
}

function keyOf(obj) {
  const meta = obj.metadata || {};
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

// A list and a watch of one collection, as client-go's informer: ``items`` is current; ``onChange`` hears the
// keys that changed, coalesced; ``onState`` hears 'live', 'reconnecting' or an error.
export class Informer {
  constructor(hub, path, { onChange, onState = () => {}, onError = () => {} }) {
    this.hub = hub;
    this.path = path;
    this.onChange = onChange;
    this.onState = onState;
    this.onError = onError;
    this.items = new Map();
    this.resourceVersion = '';
    this.controller = new AbortController();
    this.changed = new Set();
    this.flushQueued = false;
  }

  // Resolves after the first listing (or rejects with its HubError); the watch runs on after that.
  async start() {
    await this.relist();
    this.watchLoop();
  }

  stop() { this.controller.abort(); }

  get stopped() { return this.controller.signal.aborted; }

  async relist() {
    const doc = await this.hub.get(this.path, this.controller.signal);
    const fresh = new Map((doc.items || []).map((obj) => [keyOf(obj), obj]));
    for (const key of this.items.keys()) if (!fresh.has(key)) this.changed.add(key);
    for (const key of fresh.keys()) this.changed.add(key);
    this.items = fresh;
    this.resourceVersion = (doc.metadata || {}).resourceVersion || '';
    this.flush();
  }

  queue(key) {
    this.changed.add(key);
    if (this.flushQueued) return;
    this.flushQueued = true;
    // Coalesce a burst of events (a thousand heartbeats) into one render.
    setTimeout(() => this.flush(), 16);
  }

  flush() {
    this.flushQueued = false;
    if (this.stopped || this.changed.size === 0) return;
    const keys = this.changed;
    this.changed = new Set();
    this.onChange(keys);
  }

  apply(event) {
    const obj = event.object || {};
    if (event.type === 'BOOKMARK') {
      this.resourceVersion = (obj.metadata || {}).resourceVersion || this.resourceVersion;
      return true;
    }
    if (event.type === 'ERROR') return false;  // 410 Expired and the like: list again
    const key = keyOf(obj);
    if (event.type === 'DELETED') this.items.delete(key);
    else this.items.set(key, obj);
    this.resourceVersion = (obj.metadata || {}).resourceVersion || this.resourceVersion;
    this.queue(key);
    return true;
  }

  async watchLoop() {
    let delay = 500;
    while (!this.stopped) {
      try {
        const query = `watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(this.resourceVersion)}`;
        const res = await fetch(withQuery(this.path, query),
                                { headers: this.hub.headers(false), signal: this.controller.signal });
        if (res.status === 410) {
          await this.relist();
          continue;
        }
        if (!res.ok) {
          let doc = null;
          try { doc = await res.json(); } catch { doc = null; }
          if (res.status === 401 && this.hub.onUnauthorized) this.hub.onUnauthorized();
          throw new HubError(res.status, describe(res.status, doc, res.statusText), `WATCH ${this.path}`);
        }
        this.onState('live');
        delay = 500;
        if (!(await this.read(res.body))) await this.relist();
      } catch (err) {
        if (this.stopped || err.name === 'AbortError') return;
        this.onState('reconnecting');
        if (err instanceof HubError && err.code !== 0) this.onError(err);
        await new Promise((resolve) => setTimeout(resolve, delay));  // back off before watching again
        delay = Math.min(delay * 2, 10000);
        if (err instanceof HubError) {
          try { await this.relist(); } catch (again) { if (!(again.name === 'AbortError')) this.onError(again); }
        }
      }
    }
  }

  // Reads watch events until the stream ends; false when the hub says to list again (an ERROR event).
  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buffer += value;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line && !this.apply(JSON.parse(line))) {
          reader.cancel();
          return false;
        }
      }
    }
  }
}
