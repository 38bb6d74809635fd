// skiff dashboard: plain JavaScript, no framework, no network fetch but the API.
// Every API call carries the signed-in user's bearer token (none behind `skiff dashboard`, whose
// proxy adds the node's admin credentials), so RBAC decides what this page sees and may do.
'use strict';

const ROW_H = 28;
const PAGE = 500;
const TOKEN_KEY = 'skiff-dashboard-token';
const $ = (id) => document.getElementById(id);

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  view: '',
  lives: new Map(), // url key -> Live
  timers: [],
  logAbort: null,
};

// ---- API ----------------------------------------------------------------------------------

function headers(extra) {
  const h = Object.assign({ Accept: 'application/json' }, extra || {});
  if (state.token) h.Authorization = 'Bearer ' + state.token;
  return h;
}

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function errorOf(resp) {
  const text = await resp.text();
  try {
    const st = JSON.parse(text);
    if (st && st.message) return new APIError(resp.status, st.message);
  } catch (e) { /* not a Status */ }
  return new APIError(resp.status, (text || resp.statusText || 'HTTP ' + resp.status).trim());
}

async function api(method, path, body, contentType) {
  const opts = { method, headers: headers(body !== undefined ? { 'Content-Type': contentType || 'application/json' } : {}) };
  if (body !== undefined) opts.body = JSON.stringify(body);
  const resp = await fetch(path, opts);
  if (!resp.ok) throw await errorOf(resp);
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

function query(params) {
  const q = Object.entries(params).filter(([, v]) => v !== undefined && v !== '' && v !== null)
    .map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v));
  return q.length ? '?' + q.join('&') : '';
}

// Live keeps a list of objects current: paged list (limit/continue), then a streamed watch from
// the list's resourceVersion; a 410 Gone relists. onChange is batched by the caller.
class Live {
  constructor(path, params) {
    this.path = path;
    this.params = params || {};
    this.items = new Map();
    this.version = 0;
    this.loaded = false;
    this.error = '';
    this.stopped = false;
    this.abort = null;
    this.run();
  }
  key(o) { return (o.metadata.namespace || '') + '/' + o.metadata.name; }
  changed() { this.version++; scheduleRender(); }
  stop() { this.stopped = true; if (this.abort) this.abort.abort(); }
  async run() {
    while (!this.stopped) {
      try {
        const rv = await this.list();
        await this.watch(rv);
      } catch (e) {
        if (this.stopped) return;
        this.error = e.message || String(e);
        this.changed();
        if (e.status === 401) { tokenRejected(e.message); return; }
        if (e.status === 403 || e.status === 404) return; // RBAC or absent: say so, stop
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  }
  async list() {
    let cont = '';
    const fresh = new Map();
    let rv = '';
    let first = true;
    do {
      this.abort = new AbortController();
      const resp = await fetch(this.path + query(Object.assign({}, this.params, { limit: PAGE, continue: cont })),
        { headers: headers(), signal: this.abort.signal });
      if (!resp.ok) throw await errorOf(resp);
      const list = await resp.json();
      for (const o of list.items || []) fresh.set(this.key(o), o);
      cont = (list.metadata && list.metadata.continue) || '';
      rv = list.metadata && list.metadata.resourceVersion;
      if (first && this.items.size === 0) { this.items = fresh; } // first page paints at once
      first = false;
      this.changed();
    } while (cont && !this.stopped);
    this.items = fresh;
    this.loaded = true;
    this.error = '';
    this.changed();
    return rv;
  }
  async watch(rv) {
    for (;;) {
      this.abort = new AbortController();
      const resp = await fetch(this.path + query(Object.assign({}, this.params, { watch: 1, resourceVersion: rv, allowWatchBookmarks: true })),
        { headers: headers(), signal: this.abort.signal });
      if (!resp.ok) throw await errorOf(resp);
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const ev = JSON.parse(line);
          if (ev.type === 'ERROR') {
            if (ev.object && ev.object.code === 410) return; // too old: relist
            throw new APIError(ev.object && ev.object.code, (ev.object && ev.object.message) || 'watch error');
          }
          const o = ev.object;
          if (o && o.metadata && o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
          if (ev.type === 'BOOKMARK') continue;
          if (ev.type === 'DELETED') this.items.delete(this.key(o));
          else this.items.set(this.key(o), o);
          this.changed();
        }
      }
      if (this.stopped) return;
    }
  }
  // sorted items, cached per version
  sorted(cmp) {
    if (this._sv !== this.version) {
      this._sorted = Array.from(this.items.values()).sort(cmp || byNsName);
      this._sv = this.version;
    }
    return this._sorted;
  }
}

function byNsName(a, b) {
  const x = (a.metadata.namespace || '') + '/' + a.metadata.name;
  const y = (b.metadata.namespace || '') + '/' + b.metadata.name;
  return x < y ? -1 : x > y ? 1 : 0;
}

// live returns the running Live for path+params, starting it; views name what they need and
// the others are stopped on a view change (useLives).
function live(path, params) {
  const key = path + query(params || {});
  let l = state.lives.get(key);
  if (!l) { l = new Live(path, params); state.lives.set(key, l); }
  l.used = true;
  return l;
}

function nsPath(group, resource, ns) {
  const base = group ? '/apis/' + group : '/api/v1';
  return ns ? base + '/namespaces/' + encodeURIComponent(ns) + '/' + resource : base + '/' + resource;
}

// ---- helpers --------------------------------------------------------------------------------

function esc(s) {
  return String(s === undefined || s === null ? '' : s).replace(/[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

const SUFFIX = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5, Ei: 1024 ** 6 };

function qty(s) {
  if (s === undefined || s === null) return 0;
  const m = String(s).match(/^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)$/);
  if (!m) return 0;
  const f = SUFFIX[m[3]];
  return f === undefined ? 0 : parseFloat(m[1]) * Math.pow(10, m[2] ? parseInt(m[2], 10) : 0) * f;
}

function fmtCPU(v) {
  const m = Math.round(v * 1000); // millicores: sums of 100m are not exact in floating point
  return m === 0 ? '0' : m >= 1000 ? (m / 1000) + '' : m + 'm';
}
function fmtMem(v) {
  if (!v) return '0';
  if (v >= 1024 ** 3) return (Math.round(v / 1024 ** 3 * 10) / 10) + 'Gi';
  if (v >= 1024 ** 2) return Math.round(v / 1024 ** 2) + 'Mi';
  return Math.round(v / 1024) + 'Ki';
}

function age(ts) {
  if (!ts) return '';
  let s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return s + 's';
  s = Math.floor(s / 60); if (s < 120) return s + 'm';
  s = Math.floor(s / 60); if (s < 48) return s + 'h';
  return Math.floor(s / 24) + 'd';
}

// badge is a label; title, when given, is shown on hover (why a node is Unschedulable).
function badge(text, cls, title) {
  return '<span class="badge ' + (cls || '') + '"' + (title ? ' title="' + esc(title) + '"' : '') + '>' + esc(text) + '</span>';
}

function showMsg(text, ok) {
  const m = $('msg');
  m.textContent = text;
  m.className = ok ? 'ok' : '';
  m.hidden = !text;
}

// ---- scheduling of renders ---------------------------------------------------------------------

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

// vtable renders rows virtualised: only the rows in view (plus a margin) are in the DOM; two
// spacers stand for the rest. cols: [{t: title, c: (obj) => html}].
function vtable(id, cls, cols, rows) {
  const view = $('view');
  let box = document.getElementById(id);
  if (!box) {
    box = document.createElement('div');
    box.id = id;
    box.className = 'vt';
    box.innerHTML = '<div class="vt-head ' + cls + '">' + cols.map((c) => '<span>' + esc(c.t) + '</span>').join('') +
      '</div><div class="vt-top"></div><div class="vt-rows"></div><div class="vt-bottom"></div>';
    box.addEventListener('scroll', scheduleRender, { passive: true });
    view.appendChild(box);
  }
  const height = box.clientHeight || 600;
  const first = Math.max(0, Math.floor(box.scrollTop / ROW_H) - 10);
  const last = Math.min(rows.length, first + Math.ceil(height / ROW_H) + 20);
  let html = '';
  for (let i = first; i < last; i++) {
    const o = rows[i];
    html += '<div class="vt-row ' + cls + '" data-key="' + esc((o.metadata.namespace || '') + '/' + o.metadata.name) + '">' +
      cols.map((c) => '<span>' + c.c(o) + '</span>').join('') + '</div>';
  }
  const body = box.querySelector('.vt-rows');
  if (body._html !== html) { body.innerHTML = html; body._html = html; }
  box.querySelector('.vt-top').style.height = (first * ROW_H) + 'px';
  box.querySelector('.vt-bottom').style.height = ((rows.length - last) * ROW_H) + 'px';
  box.dataset.rows = String(rows.length);
  return box;
}

function section(id, html) {
  let el = document.getElementById(id);
  if (!el) {
    el = document.createElement('div');
    el.id = id;
    $('view').appendChild(el);
  }
  if (el._html !== html) { el.innerHTML = html; el._html = html; }
  return el;
}

function statusLine(lives, noun, count) {
  const errs = lives.filter((l) => l.error).map((l) => l.error);
  const loading = lives.some((l) => !l.loaded && !l.error);
  return '<p class="status">' + esc(count + ' ' + noun) + (loading ? ' (loading…)' : '') + '</p>' +
    errs.map((e) => '<p class="status err">' + esc(e) + '</p>').join('');
}

// ---- usage (metrics.k8s.io) ---------------------------------------------------------------------

const METRICS_EVERY = 15000; // the metrics resolution: polling faster shows nothing new

// Metrics keeps a metrics.k8s.io list (NodeMetrics or PodMetrics; they cannot be watched) by
// polling it every METRICS_EVERY while its view shows it. A 403 (RBAC) or an absent group stops
// it: the view says so once and works as before.
class Metrics {
  constructor(path, params) {
    this.path = path;
    this.params = params || {};
    this.items = new Map(); // ns/name -> {cpu, mem}
    this.version = 0;
    this.loaded = false;
    this.status = 0;
    this.error = '';
    this.stopped = false;
    this.abort = null;
    this.poll();
    this.timer = setInterval(() => { if (!document.hidden) this.poll(); }, METRICS_EVERY);
  }
  get count() { return this.items.size; }
  stop() { this.stopped = true; clearInterval(this.timer); if (this.abort) this.abort.abort(); }
  async poll() {
    if (this.stopped || this.busy) return;
    this.busy = true;
    try {
      this.abort = new AbortController();
      const resp = await fetch(this.path + query(this.params), { headers: headers(), signal: this.abort.signal });
      if (!resp.ok) throw await errorOf(resp);
      const list = await resp.json();
      const fresh = new Map();
      for (const m of list.items || []) fresh.set((m.metadata.namespace || '') + '/' + m.metadata.name, metricsUsage(m));
      this.items = fresh;
      this.loaded = true;
      this.status = 0;
      this.error = '';
    } catch (e) {
      if (this.stopped) return;
      this.status = e.status || 0;
      this.error = e.message || String(e);
      if (metricsGone(this.status)) this.stop();
    } finally {
      this.busy = false;
    }
    this.version++;
    scheduleRender();
  }
}

// metricsGone: an answer after which polling again is pointless (RBAC, no such group).
function metricsGone(status) { return status === 401 || status === 403 || status === 404; }

// metricsUsage sums a NodeMetrics' usage or a PodMetrics' containers' usage: {cpu: cores, mem: bytes}.
function metricsUsage(m) {
  if (m.usage) return { cpu: qty(m.usage.cpu), mem: qty(m.usage.memory) };
  let cpu = 0, mem = 0;
  for (const c of m.containers || []) { cpu += qty(c.usage && c.usage.cpu); mem += qty(c.usage && c.usage.memory); }
  return { cpu, mem };
}

// NO_METRICS stands in until the pods view's own list is loaded: PodMetrics, as many as the
// pods, would compete with the first rows, so they are asked for only then.
const NO_METRICS = Object.freeze({ loaded: false, count: 0, items: new Map() });

function metricsLive(path, params) {
  const key = 'metrics ' + path + query(params || {});
  let m = state.lives.get(key);
  if (!m) { m = new Metrics(path, params); state.lives.set(key, m); }
  m.used = true;
  return m;
}

// metricsNote decides the one line the usage columns get ('' when every row has figures):
// m is {status, error, loaded, count}, missing how many rows have no sample.
function metricsNote(m, missing, noun) {
  if (m.status === 403) return 'usage: this user may not read metrics.k8s.io (' + m.error + ')';
  if (m.status === 404 || m.status === 503) return 'usage: metrics not available (metrics.k8s.io is not served)';
  if (m.error) return 'usage: metrics not available (' + m.error + ')';
  if (!m.loaded) return 'usage: loading metrics…';
  if (!m.count) return 'usage: metrics not available (metrics.k8s.io has no samples yet)';
  if (missing) return 'usage: metrics not available for ' + missing + ' ' + noun + ' (a sample comes one metrics resolution after a kubelet reports)';
  return '';
}

// usageCell: the usage, and its share of allocatable when that is known; '–' without a sample.
function usageCell(used, of, fmt) {
  if (used === undefined) return '–';
  return fmt(used) + (of > 0 ? ' (' + Math.round(used / of * 100) + '%)' : '');
}

function missingMetrics(m, rows, want) {
  if (m._mk === m.version + '/' + rows.length + '/' + rows.v) return m._missing;
  let n = 0;
  for (const o of rows) if (want(o) && !m.items.has((o.metadata.namespace || '') + '/' + o.metadata.name)) n++;
  m._mk = m.version + '/' + rows.length + '/' + rows.v;
  m._missing = n;
  return n;
}

function metricsLine(note) { return note ? '<p class="status" id="metrics-note">' + esc(note) + '</p>' : ''; }

// ---- nodes ------------------------------------------------------------------------------------

const IGNORED_TAINTS = new Set(['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']);

function nodeRoles(n) {
  const labels = n.metadata.labels || {};
  return Object.keys(labels).filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length)).filter(Boolean).sort();
}

// nodeUnschedulableWhy says why no ordinary pod is scheduled to node n ('' when one may be): it is
// cordoned (spec.unschedulable), or tainted NoSchedule or NoExecute other than for its readiness,
// as skiff taints the Nodes of its etcd and control-plane nodes
// (node-role.kubernetes.io/control-plane:NoSchedule, node-role.kubernetes.io/etcd:NoExecute).
function nodeUnschedulableWhy(n) {
  const why = (n.spec && n.spec.unschedulable) ? ['cordoned'] : [];
  for (const t of (n.spec && n.spec.taints) || []) {
    if ((t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !IGNORED_TAINTS.has(t.key)) {
      why.push(t.key + (t.value ? '=' + t.value : '') + ':' + t.effect);
    }
  }
  return why.join('; ');
}

function nodeUnschedulable(n) { return nodeUnschedulableWhy(n) !== ''; }

function nodeReady(n) {
  const c = ((n.status && n.status.conditions) || []).find((x) => x.type === 'Ready');
  return c ? c.status : 'Unknown';
}
function nodeReadyTrue(n) { return nodeReady(n) === 'True'; }

function podRequests(p) {
  let cpu = 0, mem = 0, icpu = 0, imem = 0;
  for (const c of p.spec.containers || []) {
    const r = (c.resources && c.resources.requests) || {};
    cpu += qty(r.cpu); mem += qty(r.memory);
  }
  for (const c of p.spec.initContainers || []) {
    const r = (c.resources && c.resources.requests) || {};
    icpu = Math.max(icpu, qty(r.cpu)); imem = Math.max(imem, qty(r.memory));
  }
  return { cpu: Math.max(cpu, icpu), mem: Math.max(mem, imem) };
}

let nodeSums = { v: -1, byNode: new Map() };
function requestedByNode(pods) {
  if (nodeSums.v === pods.version) return nodeSums.byNode;
  const byNode = new Map();
  for (const p of pods.items.values()) {
    const node = p.spec && p.spec.nodeName;
    const phase = p.status && p.status.phase;
    if (!node || phase === 'Succeeded' || phase === 'Failed') continue;
    const r = podRequests(p);
    const s = byNode.get(node) || { cpu: 0, mem: 0, pods: 0 };
    s.cpu += r.cpu; s.mem += r.mem; s.pods++;
    byNode.set(node, s);
  }
  nodeSums = { v: pods.version, byNode };
  return byNode;
}

function renderNodes() {
  const nodes = live('/api/v1/nodes');
  const pods = live('/api/v1/pods');
  const rows = nodes.sorted();
  const sums = requestedByNode(pods);
  const usage = metricsLive('/apis/metrics.k8s.io/v1beta1/nodes'); // one small object per node
  rows.v = nodes.version;
  const note = metricsNote(usage, usage.count ? missingMetrics(usage, rows, nodeReadyTrue) : 0, 'Ready nodes');
  const used = (n) => usage.items.get('/' + n.metadata.name);
  const alloc = (n, r) => qty(((n.status && n.status.allocatable) || {})[r]);
  section('head', '<h1>Nodes</h1>' + statusLine([nodes, pods], 'nodes', rows.length) + metricsLine(note));
  vtable('t-nodes', 'cols-nodes', [
    { t: 'Name', c: (n) => esc(n.metadata.name) },
    { t: 'Roles', c: (n) => nodeRoles(n).map((r) => badge(r, 'role')).join('') || '<span class="badge">none</span>' },
    { t: 'Status', c: (n) => {
      const r = nodeReady(n);
      return badge(r === 'True' ? 'Ready' : 'NotReady', r === 'True' ? 'good' : 'bad') +
        (nodeUnschedulable(n) ? badge('Unschedulable', 'warn', nodeUnschedulableWhy(n)) : '');
    } },
    { t: 'Addresses', c: (n) => esc(((n.status && n.status.addresses) || []).map((a) => a.address).join(', ')) },
    { t: 'Kubelet / runtime', c: (n) => {
      const i = (n.status && n.status.nodeInfo) || {};
      return esc((i.kubeletVersion || '') + ' / ' + (i.containerRuntimeVersion || ''));
    } },
    { t: 'CPU req/alloc/cap', c: (n) => {
      const s = sums.get(n.metadata.name) || { cpu: 0 };
      const st = n.status || {};
      return esc(fmtCPU(s.cpu) + ' / ' + fmtCPU(qty((st.allocatable || {}).cpu)) + ' / ' + fmtCPU(qty((st.capacity || {}).cpu)));
    } },
    { t: 'Mem req/alloc/cap', c: (n) => {
      const s = sums.get(n.metadata.name) || { mem: 0 };
      const st = n.status || {};
      return esc(fmtMem(s.mem) + ' / ' + fmtMem(qty((st.allocatable || {}).memory)) + ' / ' + fmtMem(qty((st.capacity || {}).memory)));
    } },
    { t: 'CPU used', c: (n) => '<span class="cpu-used">' + esc(usageCell((used(n) || {}).cpu, alloc(n, 'cpu'), fmtCPU)) + '</span>' },
    { t: 'Mem used', c: (n) => '<span class="mem-used">' + esc(usageCell((used(n) || {}).mem, alloc(n, 'memory'), fmtMem)) + '</span>' },
    { t: 'Pods', c: (n) => esc((sums.get(n.metadata.name) || { pods: 0 }).pods) },
    { t: '', c: (n) => n.spec && n.spec.unschedulable
      ? '<button data-act="uncordon" data-name="' + esc(n.metadata.name) + '">Uncordon</button>'
      : '<button data-act="cordon" data-name="' + esc(n.metadata.name) + '">Cordon</button>' },
  ], rows);
}

// ---- workloads --------------------------------------------------------------------------------

const KINDS = [
  { kind: 'Deployment', group: 'apps/v1', res: 'deployments',
    desired: (o) => o.spec.replicas ?? 1, ready: (o) => o.status?.readyReplicas || 0,
    state: (o) => {
      const s = o.status || {};
      const want = o.spec.replicas ?? 1;
      if ((s.observedGeneration || 0) < o.metadata.generation) return 'rollout pending';
      if ((s.updatedReplicas || 0) < want) return 'rolling out: ' + (s.updatedReplicas || 0) + '/' + want + ' updated';
      if ((s.availableReplicas || 0) < want) return 'waiting: ' + (s.availableReplicas || 0) + '/' + want + ' available';
      return 'complete';
    } },
  { kind: 'StatefulSet', group: 'apps/v1', res: 'statefulsets',
    desired: (o) => o.spec.replicas ?? 1, ready: (o) => o.status?.readyReplicas || 0,
    state: (o) => (o.status?.updatedReplicas || 0) + ' updated, revision ' + (o.status?.updateRevision || '') },
  { kind: 'DaemonSet', group: 'apps/v1', res: 'daemonsets',
    desired: (o) => o.status?.desiredNumberScheduled || 0, ready: (o) => o.status?.numberReady || 0,
    state: (o) => (o.status?.updatedNumberScheduled || 0) + ' updated' },
  { kind: 'Job', group: 'batch/v1', res: 'jobs',
    desired: (o) => o.spec.completions ?? 1, ready: (o) => o.status?.succeeded || 0,
    state: (o) => {
      const c = (o.status?.conditions || []).find((x) => x.status === 'True' && (x.type === 'Complete' || x.type === 'Failed'));
      return c ? c.type : (o.status?.active || 0) + ' active';
    } },
  { kind: 'CronJob', group: 'batch/v1', res: 'cronjobs',
    desired: () => '', ready: () => '',
    state: (o) => o.spec.schedule + (o.spec.suspend ? ' (suspended)' : '') + ', ' + (o.status?.active || []).length + ' active' +
      (o.status?.lastScheduleTime ? ', last ' + age(o.status.lastScheduleTime) + ' ago' : '') },
];

function renderWorkloads() {
  const ns = $('ns').value.trim();
  const lives = KINDS.map((k) => live(nsPath(k.group, k.res, ns)));
  const rows = [];
  lives.forEach((l, i) => { for (const o of l.sorted()) rows.push(Object.assign({ _k: KINDS[i] }, { metadata: o.metadata, spec: o.spec, status: o.status })); });
  section('head', '<h1>Workloads</h1>' + statusLine(lives, 'workloads', rows.length));
  vtable('t-workloads', 'cols-workloads', [
    { t: 'Kind', c: (o) => esc(o._k.kind) },
    { t: 'Namespace', c: (o) => esc(o.metadata.namespace) },
    { t: 'Name', c: (o) => esc(o.metadata.name) },
    { t: 'Desired', c: (o) => '<span class="desired">' + esc(o._k.desired(o)) + '</span>' },
    { t: 'Ready', c: (o) => '<span class="ready">' + esc(o._k.ready(o)) + '</span>' },
    { t: 'Rollout', c: (o) => esc(o._k.state(o)) },
    { t: 'Age', c: (o) => esc(age(o.metadata.creationTimestamp)) },
    { t: '', c: (o) => o._k.kind !== 'Deployment' ? '' :
      '<button data-act="scale" data-ns="' + esc(o.metadata.namespace) + '" data-name="' + esc(o.metadata.name) + '" data-replicas="' + esc(o._k.desired(o)) + '">Scale</button> ' +
      '<button data-act="restart" data-ns="' + esc(o.metadata.namespace) + '" data-name="' + esc(o.metadata.name) + '">Restart</button>' },
  ], rows);
}

// ---- pods -------------------------------------------------------------------------------------

function podStatus(p) {
  const st = p.status || {};
  if (p.metadata.deletionTimestamp) return 'Terminating';
  for (const c of st.containerStatuses || []) {
    if (c.state && c.state.waiting && c.state.waiting.reason) return c.state.waiting.reason;
  }
  if (st.phase === 'Pending') {
    const sc = (st.conditions || []).find((c) => c.type === 'PodScheduled' && c.status === 'False');
    if (sc) return 'Pending (' + (sc.reason || 'Unschedulable') + ')';
  }
  return st.phase || 'Unknown';
}

function podRunning(p) { return (p.status && p.status.phase) === 'Running'; }

function restarts(p) { return ((p.status && p.status.containerStatuses) || []).reduce((n, c) => n + (c.restartCount || 0), 0); }

function renderPods() {
  const ns = $('ns').value.trim();
  const sel = $('selector').value.trim();
  const pods = live(nsPath('', 'pods', ns), sel ? { labelSelector: sel } : {});
  const rows = pods.sorted();
  const usage = pods.loaded ? metricsLive(nsPath('metrics.k8s.io/v1beta1', 'pods', ns), sel ? { labelSelector: sel } : {}) : NO_METRICS;
  rows.v = pods.version;
  const note = metricsNote(usage, usage.count ? missingMetrics(usage, rows, podRunning) : 0, 'running pods');
  const used = (p) => usage.items.get(p.metadata.namespace + '/' + p.metadata.name) || {};
  section('head', '<h1>Pods</h1>' + statusLine([pods], 'pods', rows.length) + metricsLine(note));
  vtable('t-pods', 'cols-pods', [
    { t: 'Namespace', c: (p) => esc(p.metadata.namespace) },
    { t: 'Name', c: (p) => '<a class="link" href="#pod/' + esc(encodeURIComponent(p.metadata.namespace) + '/' + encodeURIComponent(p.metadata.name)) + '">' + esc(p.metadata.name) + '</a>' },
    { t: 'Status', c: (p) => esc(podStatus(p)) },
    { t: 'Ready', c: (p) => {
      const cs = (p.status && p.status.containerStatuses) || [];
      return esc(cs.filter((c) => c.ready).length + '/' + (p.spec.containers || []).length);
    } },
    { t: 'Restarts', c: (p) => esc(restarts(p)) },
    { t: 'Node', c: (p) => esc(p.spec.nodeName || '') },
    { t: 'CPU used', c: (p) => '<span class="cpu-used">' + esc(usageCell(used(p).cpu, 0, fmtCPU)) + '</span>' },
    { t: 'Mem used', c: (p) => '<span class="mem-used">' + esc(usageCell(used(p).mem, 0, fmtMem)) + '</span>' },
    { t: 'Age', c: (p) => esc(age(p.metadata.creationTimestamp)) },
    { t: '', c: (p) => '<button class="danger" data-act="delete-pod" data-ns="' + esc(p.metadata.namespace) + '" data-name="' + esc(p.metadata.name) + '">Delete</button>' },
  ], rows);
}

function eventCols() {
  return [
    { t: 'Type', c: (e) => badge(e.type, e.type === 'Warning' ? 'warn' : '') },
    { t: 'Reason', c: (e) => esc(e.reason) },
    { t: 'Count', c: (e) => esc(e.count || 1) },
    { t: 'Message', c: (e) => esc(e.message) },
  ];
}

function lastSeen(e) { return e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp || ''; }
function byLastSeenDesc(a, b) { const x = lastSeen(a), y = lastSeen(b); return x < y ? 1 : x > y ? -1 : 0; }

function renderPod(ns, name) {
  const pods = live(nsPath('', 'pods', ns), { fieldSelector: 'metadata.name=' + name });
  const events = live(nsPath('', 'events', ns));
  const p = pods.items.get(ns + '/' + name);
  const mine = events.sorted(byLastSeenDesc).filter((e) => e.involvedObject && e.involvedObject.kind === 'Pod' && e.involvedObject.name === name);
  let html = '<h1>Pod ' + esc(ns + '/' + name) + '</h1>' + statusLine([pods, events], 'events', mine.length);
  if (!p) {
    html += pods.loaded ? '<p class="err">not found</p>' : '';
    section('head', html);
    return;
  }
  const st = p.status || {};
  html += '<table class="kv"><tr><th>Status</th><td id="pod-status">' + esc(podStatus(p)) + '</td></tr>' +
    '<tr><th>Node</th><td>' + esc(p.spec.nodeName || '(not scheduled)') + '</td></tr>' +
    '<tr><th>Pod IP</th><td>' + esc(st.podIP || '') + '</td></tr>' +
    '<tr><th>Restarts</th><td>' + esc(restarts(p)) + '</td></tr>' +
    '<tr><th>Age</th><td>' + esc(age(p.metadata.creationTimestamp)) + '</td></tr>' +
    '<tr><th>Labels</th><td>' + Object.entries(p.metadata.labels || {}).map(([k, v]) => badge(k + '=' + v)).join('') + '</td></tr></table>';
  const pending = st.phase === 'Pending' && !p.spec.nodeName;
  if (pending) {
    const sched = mine.find((e) => e.reason === 'FailedScheduling');
    const cond = (st.conditions || []).find((c) => c.type === 'PodScheduled' && c.status === 'False');
    const why = sched ? sched.message : cond && cond.message ? cond.message : 'no scheduling verdict yet';
    html += '<h2>Why it is not scheduled</h2><div class="reasons" id="sched-reasons">' + esc(why) + '</div>';
  }
  section('head', html);
  renderExplanation(ns, name, pending);
  section('events-head', '<h2>Events</h2>');
  vtable('t-pod-events', 'cols-events1', eventCols(), mine).classList.add('small');
  const containers = (p.spec.containers || []).map((c) => c.name);
  const logs = section('logs-head', '<h2>Logs (following) <select id="log-container">' +
    containers.map((c) => '<option>' + esc(c) + '</option>').join('') + '</select></h2>');
  if (!state.logFor || state.logFor.pod !== ns + '/' + name) {
    state.logFor = { pod: ns + '/' + name, started: false };
    logs.querySelector('select').addEventListener('change', () => followLogs(ns, name, $('log-container').value));
  }
  if (!state.logFor.started && (st.phase === 'Running' || st.phase === 'Succeeded' || st.phase === 'Failed')) {
    state.logFor.started = true;
    followLogs(ns, name, containers[0]);
  } else if (!state.logFor.started) {
    section('logs', '<pre class="logs" id="logs">(the pod has not started; logs follow once it runs)</pre>');
  }
}

// ---- scheduling explanation: the scheduler's per-node verdicts for a Pending pod ---------------

// explain holds the last PodSchedulingExplanation of the pod in view; it is asked for when the
// pod's page opens and every EXPLAIN_MS while the pod stays Pending (the view's timers stop it).
const EXPLAIN_MS = 10000;
const explain = { pod: '', status: null, err: '', timer: 0, busy: false };

async function pollExplanation(ns, name) {
  if (explain.busy) return;
  explain.busy = true;
  const pod = ns + '/' + name;
  try {
    const out = await api('POST', nsPath('scheduling.skiff.sh/v1alpha1', 'podschedulingexplanations', ns),
      { apiVersion: 'scheduling.skiff.sh/v1alpha1', kind: 'PodSchedulingExplanation', metadata: { namespace: ns }, spec: { podName: name } });
    if (explain.pod === pod) { explain.status = out.status || {}; explain.err = ''; }
  } catch (e) {
    if (explain.pod === pod) {
      explain.err = e.status === 403 ? 'may not read the per-node verdicts: ' + e.message : 'per-node verdicts: ' + e.message;
      if (e.status === 403) explain.status = null;
    }
  } finally {
    explain.busy = false;
    scheduleRender();
  }
}

function stopExplanation() {
  if (explain.timer) clearInterval(explain.timer);
  explain.timer = 0;
}

// explainRows are the per-node rows in vtable's shape.
function explainRows(status) {
  return ((status && status.nodes) || []).map((n) => Object.assign({ metadata: { name: n.name } }, n));
}

function explainCols() {
  return [
    { t: 'Node', c: (n) => esc(n.name) },
    { t: 'Fits', c: (n) => n.feasible ? badge('fits', 'good') : badge('no', 'bad') },
    { t: 'Reasons / score', c: (n) => n.feasible ? esc('score ' + (n.totalScore || 0) + ', rank ' + n.rank) :
      esc((n.reasons || []).join('; ')) + ' <span class="muted">' + esc((n.verdicts || []).map((v) => v.plugin).join(', ')) + '</span>' },
  ];
}

function renderExplanation(ns, name, pending) {
  const pod = ns + '/' + name;
  if (explain.pod !== pod) { stopExplanation(); Object.assign(explain, { pod, status: null, err: '' }); }
  if (pending && !explain.timer) {
    pollExplanation(ns, name);
    explain.timer = setInterval(() => pollExplanation(ns, name), EXPLAIN_MS);
    state.timers.push(() => { stopExplanation(); explain.pod = ''; });
  } else if (!pending && explain.timer) {
    stopExplanation();
  }
  const st = pending ? explain.status : null;
  let html = '';
  if (pending) {
    html = '<h2>Per-node verdicts</h2>';
    if (explain.err) html += '<p class="status err" id="explain-error">' + esc(explain.err) + '</p>';
    if (st) {
      html += '<p class="status" id="explain-summary">' + esc(st.totalNodes + ' nodes, ' + st.feasibleNodes + ' feasible (profile ' + (st.schedulerName || '') + ')') + '</p>' +
        '<table class="kv" id="explain-reasons"><tr><th>Nodes</th><th>Reason</th></tr>' +
        (st.summary || []).map((r) => '<tr><td>' + esc(r.count) + '</td><td>' + esc(r.reason) + '</td></tr>').join('') + '</table>';
    } else if (!explain.err) {
      html += '<p class="status">asking the scheduler…</p>';
    }
  }
  section('explain-head', html);
  const box = vtable('t-explain', 'cols-explain', explainCols(), explainRows(st));
  box.classList.add('small');
  box.hidden = !st;
}

async function followLogs(ns, name, container) {
  if (state.logAbort) state.logAbort.abort();
  const ctl = new AbortController();
  state.logAbort = ctl;
  const box = section('logs', '<pre class="logs" id="logs"></pre>').querySelector('pre');
  box.textContent = '';
  try {
    const resp = await fetch('/api/v1/namespaces/' + encodeURIComponent(ns) + '/pods/' + encodeURIComponent(name) + '/log' +
      query({ follow: true, tailLines: 1000, container }), { headers: headers({ Accept: '*/*' }), signal: ctl.signal });
    if (!resp.ok) throw await errorOf(resp);
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let pending = '';
    let queued = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += dec.decode(value, { stream: true });
      if (!queued) {
        queued = true;
        requestAnimationFrame(() => {
          queued = false;
          const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
          let text = box.textContent + pending;
          pending = '';
          if (text.length > 200000) text = text.slice(text.length - 150000);
          box.textContent = text;
          if (stick) box.scrollTop = box.scrollHeight;
        });
      }
    }
  } catch (e) {
    if (!ctl.signal.aborted) box.textContent += '\n[' + (e.message || e) + ']';
  }
}

// ---- services ---------------------------------------------------------------------------------

function endpointsBySvc(slices) {
  if (slices._byv === slices.version) return slices._by;
  const by = new Map();
  for (const es of slices.items.values()) {
    const svc = (es.metadata.labels || {})['kubernetes.io/service-name'];
    if (!svc) continue;
    const key = es.metadata.namespace + '/' + svc;
    const e = by.get(key) || { ready: [], notReady: 0 };
    for (const ep of es.endpoints || []) {
      if (!ep.conditions || ep.conditions.ready !== false) e.ready.push(...(ep.addresses || []));
      else e.notReady++;
    }
    by.set(key, e);
  }
  slices._by = by;
  slices._byv = slices.version;
  return by;
}

function renderServices() {
  const ns = $('ns').value.trim();
  const services = live(nsPath('', 'services', ns));
  const slices = live(nsPath('discovery.k8s.io/v1', 'endpointslices', ns));
  const rows = services.sorted();
  const eps = endpointsBySvc(slices);
  section('head', '<h1>Services</h1>' + statusLine([services, slices], 'services', rows.length));
  vtable('t-services', 'cols-services', [
    { t: 'Namespace', c: (o) => esc(o.metadata.namespace) },
    { t: 'Name', c: (o) => esc(o.metadata.name) },
    { t: 'Type', c: (o) => esc(o.spec.type || 'ClusterIP') },
    { t: 'Cluster IP', c: (o) => esc(o.spec.clusterIP || '') },
    { t: 'Ports', c: (o) => esc((o.spec.ports || []).map((p) => p.port + (p.nodePort ? ':' + p.nodePort : '') + '/' + (p.protocol || 'TCP')).join(', ')) },
    { t: 'Endpoints', c: (o) => {
      const e = eps.get(o.metadata.namespace + '/' + o.metadata.name);
      if (!e) return o.spec.selector ? badge('none', 'warn') : badge('no selector');
      return badge(e.ready.length + ' ready', e.ready.length ? 'good' : 'bad') + (e.notReady ? badge(e.notReady + ' not ready', 'warn') : '') +
        esc(e.ready.slice(0, 4).join(', ') + (e.ready.length > 4 ? ', …' : ''));
    } },
    { t: 'Age', c: (o) => esc(age(o.metadata.creationTimestamp)) },
  ], rows);
}

// ---- events -----------------------------------------------------------------------------------

function renderEvents() {
  const ns = $('ns').value.trim();
  const events = live(nsPath('', 'events', ns));
  const rows = events.sorted(byLastSeenDesc).filter((e) => e.type === 'Warning');
  section('head', '<h1>Recent warnings</h1>' + statusLine([events], 'warnings', rows.length));
  vtable('t-events', 'cols-events', [
    { t: 'Last seen', c: (e) => esc(age(lastSeen(e))) },
    { t: 'Namespace', c: (e) => esc(e.metadata.namespace) },
    { t: 'Object', c: (e) => esc((e.involvedObject.kind || '') + '/' + (e.involvedObject.name || '')) },
    { t: 'Reason', c: (e) => esc(e.reason) },
    { t: 'Count', c: (e) => esc(e.count || 1) },
    { t: 'Message', c: (e) => esc(e.message) },
  ], rows);
}

// ---- control plane ----------------------------------------------------------------------------

const cp = { members: null, membersErr: '', ready: '', timer: 0 };

async function pollControlPlane() {
  try {
    cp.members = await api('GET', '/skiff/v1/etcd/members');
    cp.membersErr = '';
  } catch (e) {
    cp.members = null;
    cp.membersErr = e.status === 403 ? 'etcd members: not allowed for this user (' + e.message + ')' : 'etcd members: ' + e.message;
  }
  try {
    const r = await fetch('/readyz?verbose', { headers: headers({ Accept: '*/*' }) });
    cp.ready = (r.ok ? 'ready' : 'not ready (' + r.status + ')') + ': ' + (await r.text()).trim();
  } catch (e) { cp.ready = 'unreachable: ' + e.message; }
  scheduleRender();
}

function renderControlPlane() {
  if (!cp.timer) {
    pollControlPlane();
    cp.timer = setInterval(pollControlPlane, 5000);
    state.timers.push(() => { clearInterval(cp.timer); cp.timer = 0; });
  }
  const leases = live('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases');
  let html = '<h1>Control plane</h1><h2>etcd members</h2>';
  if (cp.membersErr) html += '<p class="status err">' + esc(cp.membersErr) + '</p>';
  if (cp.members) {
    html += '<table class="kv" id="etcd-members"><tr><th>Name</th><th>ID</th><th>Role</th><th>Health</th><th>DB size</th><th>Version</th><th>Client URLs</th></tr>' +
      (cp.members.members || []).map((m) => '<tr><td>' + esc(m.name) + '</td><td>' + esc(m.id) + '</td><td>' +
        (m.isLeader ? badge('leader', 'good') : m.isLearner ? badge('learner', 'warn') : badge('follower')) + '</td><td>' +
        (m.healthy ? badge('healthy', 'good') : badge(m.error || 'unhealthy', 'bad')) + '</td><td>' + esc(m.dbSize ? fmtMem(m.dbSize) : '') +
        '</td><td>' + esc(m.version) + '</td><td>' + esc((m.clientURLs || []).join(', ')) + '</td></tr>').join('') + '</table>' +
      '<p class="status">quorum: ' + esc(cp.members.quorum ? 'yes' : 'NO') + '</p>';
  }
  html += '<h2>API server (this one)</h2><pre class="status" id="apiserver-ready">' + esc(cp.ready) + '</pre>';
  html += '<h2>Leaders</h2>' + statusLine([leases], 'leases', leases.items.size);
  html += '<table class="kv" id="leaders"><tr><th>Component</th><th>Holder</th><th>Since</th><th>Renewed</th></tr>';
  for (const name of ['kube-scheduler', 'kube-controller-manager']) {
    const l = leases.items.get('kube-system/' + name);
    const s = (l && l.spec) || {};
    html += '<tr><td>' + esc(name) + '</td><td>' + esc(s.holderIdentity || '(none)') + '</td><td>' +
      esc(s.acquireTime ? s.acquireTime + ' (' + age(s.acquireTime) + ')' : '') + '</td><td>' + esc(s.renewTime ? age(s.renewTime) + ' ago' : '') + '</td></tr>';
  }
  html += '</table>';
  const apiservers = Array.from(leases.items.values()).filter((l) => (l.metadata.labels || {})['apiserver.kubernetes.io/identity'] || l.metadata.name.startsWith('apiserver-'));
  if (apiservers.length) {
    html += '<h2>API servers</h2><table class="kv"><tr><th>Identity</th><th>Holder</th><th>Renewed</th></tr>' +
      apiservers.map((l) => '<tr><td>' + esc(l.metadata.name) + '</td><td>' + esc(l.spec.holderIdentity) + '</td><td>' + esc(age(l.spec.renewTime)) + ' ago</td></tr>').join('') + '</table>';
  }
  section('head', html);
}

// ---- actions ----------------------------------------------------------------------------------

const MERGE = 'application/merge-patch+json';

async function act(btn) {
  const { act: what, ns, name } = btn.dataset;
  try {
    switch (what) {
      case 'cordon':
      case 'uncordon':
        if (!confirm((what === 'cordon' ? 'Cordon' : 'Uncordon') + ' node ' + name + '?')) return;
        await api('PATCH', '/api/v1/nodes/' + encodeURIComponent(name), { spec: { unschedulable: what === 'cordon' } }, MERGE);
        break;
      case 'scale': {
        const n = prompt('Scale deployment ' + ns + '/' + name + ' to how many replicas?', btn.dataset.replicas);
        if (n === null) return;
        const replicas = parseInt(n, 10);
        if (!(replicas >= 0)) { showMsg('not a replica count: ' + n); return; }
        if (!confirm('Scale deployment ' + ns + '/' + name + ' to ' + replicas + '?')) return;
        await api('PATCH', '/apis/apps/v1/namespaces/' + encodeURIComponent(ns) + '/deployments/' + encodeURIComponent(name) + '/scale',
          { spec: { replicas } }, MERGE);
        break;
      }
      case 'restart':
        if (!confirm('Restart the rollout of deployment ' + ns + '/' + name + '?')) return;
        await api('PATCH', '/apis/apps/v1/namespaces/' + encodeURIComponent(ns) + '/deployments/' + encodeURIComponent(name),
          { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } }, MERGE);
        break;
      case 'delete-pod':
        if (!confirm('Delete pod ' + ns + '/' + name + '?')) return;
        await api('DELETE', '/api/v1/namespaces/' + encodeURIComponent(ns) + '/pods/' + encodeURIComponent(name));
        break;
      default:
        return;
    }
    showMsg(what + ' ' + (ns ? ns + '/' : '') + name + ': done', true);
  } catch (e) {
    showMsg(what + ' ' + (ns ? ns + '/' : '') + name + ' failed: ' + e.message);
  }
}

// ---- routing and sign-in ------------------------------------------------------------------------

function route() {
  const h = decodeURIComponent(location.hash.slice(1)) ? location.hash.slice(1) : 'nodes';
  return h.split('/').map(decodeURIComponent);
}

function render() {
  if ($('view').hidden) return;
  const [view, a, b] = route();
  const key = [view, a, b, $('ns').value.trim(), $('selector').value.trim()].join('|');
  if (key !== state.view) {
    // a new view: its own lives only, a fresh DOM
    state.view = key;
    for (const l of state.lives.values()) l.used = false;
    $('view').innerHTML = '';
    state.timers.forEach((f) => f());
    state.timers = [];
    if (state.logAbort) { state.logAbort.abort(); state.logAbort = null; }
    state.logFor = null;
    showMsg(''); // a message belongs to the view it came from
    document.querySelectorAll('#nav a').forEach((el) => el.classList.toggle('active', el.dataset.view === view));
  }
  for (const l of state.lives.values()) l.used = false;
  switch (view) {
    case 'workloads': renderWorkloads(); break;
    case 'pods': renderPods(); break;
    case 'pod': renderPod(a, b); break;
    case 'services': renderServices(); break;
    case 'events': renderEvents(); break;
    case 'controlplane': renderControlPlane(); break;
    default: renderNodes();
  }
  for (const [k, l] of state.lives) if (!l.used) { l.stop(); state.lives.delete(k); }
}

function signedIn(who) {
  $('signin').hidden = true;
  $('view').hidden = false;
  $('nav').hidden = false;
  $('filters').hidden = false;
  $('signout').hidden = !state.token;
  $('who').textContent = who;
  scheduleRender();
}

// tokenRejected: the API no longer takes the token (expired, deleted): stop everything and ask
// for a new one.
function tokenRejected(message) {
  for (const l of state.lives.values()) l.stop();
  state.lives.clear();
  state.view = '';
  $('view').innerHTML = '';
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = '';
  signIn();
  showMsg('the API server rejected the token (' + message + '): sign in again');
}

function signIn() {
  $('signin').hidden = false;
  $('view').hidden = true;
  $('nav').hidden = true;
  $('filters').hidden = true;
  $('signout').hidden = true;
}

async function start() {
  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    state.token = $('token').value.trim();
    try {
      await api('GET', '/api');
      sessionStorage.setItem(TOKEN_KEY, state.token);
      showMsg('');
      signedIn('signed in with a token');
    } catch (e) {
      state.token = '';
      showMsg('sign-in failed: ' + e.message);
    }
  });
  $('signout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.hash = '';
    location.reload();
  });
  $('view').addEventListener('click', (ev) => {
    const btn = ev.target.closest('button[data-act]');
    if (btn) act(btn);
  });
  let t = 0;
  const refilter = () => { clearTimeout(t); t = setTimeout(scheduleRender, 300); };
  $('ns').addEventListener('input', refilter);
  $('selector').addEventListener('input', refilter);
  window.addEventListener('hashchange', scheduleRender);
  setInterval(scheduleRender, 10000); // ages
  // Behind `skiff dashboard` the proxy holds credentials: /api answers without a token.
  try {
    await api('GET', '/api');
    signedIn(state.token ? 'signed in with a token' : 'through skiff dashboard (admin)');
  } catch (e) {
    if (state.token) { sessionStorage.removeItem(TOKEN_KEY); state.token = ''; }
    signIn();
  }
}

start();
