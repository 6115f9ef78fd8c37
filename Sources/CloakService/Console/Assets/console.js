// Cloak's operator console (docs/console.md): one page, a client of the admin API under
// /console/api on the console's own listener. Every value shown comes from an answer of that
// API and is put in the page as text (never as HTML). The API token typed at sign-in is sent
// once and dropped; the session lives in an HttpOnly cookie, and every change carries the
// session's CSRF token.
'use strict';

(function () {
  const state = { session: null, page: null, samples: {}, lastOverview: null };

  // ---- DOM helpers -------------------------------------------------------------------------

  /** An element with attributes (`on*` are listeners) and children (strings become text). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else if (key === 'class') node.className = value;
      else if (value === true) node.setAttribute(key, '');
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function text(value) {
    if (value === null || value === undefined) return '—';
    if (Array.isArray(value)) return value.length ? value.join(', ') : '—';
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
  }

  /** A table with a caption, column headings and rows of cells (strings or nodes). */
  function table(caption, headings, rows, empty) {
    if (!rows.length) return el('p', { class: 'empty' }, empty || 'Nothing to show.');
    return el('table', {},
      el('caption', {}, caption),
      el('thead', {}, el('tr', {}, headings.map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows.map((row) => el('tr', {}, row.map((cell, i) => {
        const shown = cell instanceof Node ? cell : text(cell);
        // An id, a digest or a list of facts without spaces may break anywhere; words never do.
        const long = /\S{25,}/.test(cell instanceof Node ? cell.textContent : shown) ? 'long' : null;
        return i === 0 ? el('th', { scope: 'row', class: long }, shown) : el('td', { class: long }, shown);
      })))));
  }

  /** A definition list of [term, value] pairs. */
  function facts(pairs) {
    return el('dl', { class: 'facts' }, pairs.flatMap(([term, value]) =>
      [el('dt', {}, term), el('dd', {}, value instanceof Node ? value : text(value))]));
  }

  function say(message, kind) {
    const status = document.getElementById('status');
    status.textContent = message || '';
    status.className = 'status' + (kind ? ' ' + kind : '');
  }

  function page(title, ...children) {
    const root = document.getElementById('page');
    const parts = children.flat().filter((c) => c !== null && c !== undefined && c !== '' && c !== false);
    root.replaceChildren(el('h1', { id: 'page-title' }, title), ...parts);
    document.title = title + ' · Cloak console';
    const main = document.getElementById('main');
    main.setAttribute('aria-labelledby', 'page-title');
    return root;
  }

  /** Asks `question` in a modal dialog; resolves true when `action` is chosen. */
  function confirmAction(question, action) {
    return new Promise((resolve) => {
      const dialog = el('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-question' });
      const finish = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
      dialog.append(
        el('p', { id: 'confirm-question' }, question),
        el('div', { class: 'actions' },
          el('button', { type: 'button', class: 'danger', id: 'confirm-yes', onclick: () => finish(true) }, action),
          el('button', { type: 'button', id: 'confirm-no', onclick: () => finish(false) }, 'Cancel')));
      dialog.addEventListener('cancel', (e) => { e.preventDefault(); finish(false); });
      document.body.append(dialog);
      dialog.showModal();
      document.getElementById('confirm-no').focus();
    });
  }

  // ---- The API -----------------------------------------------------------------------------

  class APIError extends Error {
    constructor(status, body) {
      const first = body && body.error;
      super(first && first.description ? first.description : 'error ' + status);
      this.status = status;
      this.code = first ? first.code : null;
    }
  }

  async function call(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (method !== 'GET') {
      headers['X-Cloak-CSRF'] = state.session ? state.session.csrf : '';
      if (body !== undefined) headers['Content-Type'] = 'application/json';
    }
    const response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin', cache: 'no-store', redirect: 'error',
    });
    if (response.status === 204) return null;
    let answer = null;
    try { answer = await response.json(); } catch (_) { answer = null; }
    if (!response.ok) {
      if (response.status === 401 && path !== '/console/session') signedOut('Your session ended. Sign in again.');
      throw new APIError(response.status, answer);
    }
    return answer;
  }

  const api = (method, path, body) => call(method, '/console/api' + path, body);

  function may(scope) { return !!state.session && state.session.scopes.includes(scope); }

  // ---- Sessions ----------------------------------------------------------------------------

  function signedOut(message) {
    state.session = null;
    document.getElementById('pages').hidden = true;
    document.getElementById('sign-out').hidden = true;
    document.getElementById('who').textContent = '';
    document.getElementById('page').replaceChildren();
    document.getElementById('sign-in').hidden = false;
    document.title = 'Sign in · Cloak console';
    say(message || '', message ? 'warn' : '');
    // Focus moves to the field only after something happened (a sign-out, an ended session);
    // a fresh page starts at the top, where the skip link is.
    if (message) document.getElementById('token').focus();
  }

  function signedIn(session) {
    state.session = session;
    document.getElementById('sign-in').hidden = true;
    document.getElementById('pages').hidden = false;
    document.getElementById('sign-out').hidden = false;
    document.getElementById('who').textContent = 'Signed in as ' + session.token_id + ' (' + session.scopes.join(', ') + ')';
    for (const link of document.querySelectorAll('#pages a[data-scope]')) {
      link.parentElement.hidden = !mayAny(link.dataset.scope);
    }
    route();
  }

  async function signIn(event) {
    event.preventDefault();
    const input = document.getElementById('token');
    const token = input.value.trim();
    input.value = '';
    if (!token) return;
    try {
      const session = await call('POST', '/console/session', { token });
      say('');
      signedIn(session);
    } catch (error) {
      say(error.status === 401 ? 'That token is not valid.' : error.message, 'error');
      input.focus();
    }
  }

  async function signOut() {
    try { await call('DELETE', '/console/session'); } catch (_) { /* ended already */ }
    signedOut('Signed out.');
  }

  // ---- Pages -------------------------------------------------------------------------------

  const pages = {
    overview: { title: 'Overview', render: overview },
    tokens: { title: 'Tokens', scope: 'tokens:admin', render: tokens },
    routes: { title: 'Routes', scope: 'routes:test', render: routes },
    forms: { title: 'Forms', render: forms },
    files: { title: 'Files', render: files },
    bins: { title: 'BIN table', scope: 'bins:admin', render: bins },
    keys: { title: 'Keys', scope: 'keys:read', render: keys },
    audit: { title: 'Audit', scope: 'audit:read', render: audit },
    jobs: { title: 'Jobs', scope: 'jobs:read jobs:approve', render: jobs },
  };

  /** Whether the session holds any of `scopes` (a space-separated list). */
  function mayAny(scopes) { return scopes.split(' ').some(may); }

  async function route() {
    if (!state.session) return;
    const name = (location.hash.match(/^#\/([a-z]+)/) || [])[1] || 'overview';
    const found = pages[name];
    for (const link of document.querySelectorAll('#pages a')) {
      if (link.dataset.page === name) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    if (!found) { page('Not found', el('p', {}, 'There is no such page.')); return; }
    if (found.scope && !mayAny(found.scope)) {
      page(found.title, el('p', { class: 'refused', role: 'alert' },
        'Your token does not hold ' + found.scope.split(' ').join(' or ') + ': this page is not yours to see.'));
      return;
    }
    if (state.preview && name !== 'forms') { state.preview.destroy(); state.preview = null; }
    clearTimeout(state.jobsTimer);
    state.jobsSince = null;
    // A message belongs to the page it was said on.
    if (state.page !== null) say('');
    state.page = name;
    page(found.title, el('p', { class: 'loading' }, 'Loading…'));
    try {
      await found.render();
    } catch (error) {
      if (state.session) page(found.title, el('p', { class: 'refused', role: 'alert' }, error.message));
    }
    const heading = document.getElementById('page-title');
    // Focus moves to the page (for screen readers) without scrolling the header out of view.
    if (heading && document.activeElement === document.body) document.getElementById('main').focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }

  async function overview() {
    const answer = await api('GET', '/admin/overview');
    const node = answer.node;
    const now = Date.now();
    let rates = '—';
    const last = state.lastOverview;
    if (last && last.name === node.name && now > last.at) {
      const minutes = (now - last.at) / 60000;
      const perMinute = (n) => Math.max(0, (n / minutes)).toFixed(1);
      rates = perMinute(node.requests - last.requests) + ' requests/min, ' +
        perMinute(node.client_errors - last.client_errors) + ' 4xx/min, ' +
        perMinute(node.server_errors - last.server_errors) + ' 5xx/min (since the last look)';
    }
    state.lastOverview = { name: node.name, at: now, requests: node.requests,
      client_errors: node.client_errors, server_errors: node.server_errors };
    page('Overview',
      el('h2', {}, 'This node'),
      facts([
        ['Node', node.name], ['Version', node.version], ['Up for', duration(node.uptime_s)],
        ['Ready', node.ready ? 'yes' : 'no'], ['Store', node.store],
        ['Store disk', !node.disk ? '—' : (node.disk.free_mib === null ? 'not visible from this node'
          : node.disk.free_mib + ' MiB free') + (node.disk.below_reserve
          ? ' — below limits.disk_reserve_mib (' + node.disk.reserve_mib + ' MiB): new values, uploads, imports and exports get 507'
          : '')],
        ['Key versions', node.keys ? node.keys.versions.join(', ') + ' (current ' + node.keys.current + ')' : '—'],
        ['BIN table', node.bins ? 'version ' + node.bins.version + ' (' + node.bins.sha256 + ')' : 'none'],
        ['Answers since start', node.requests + ' (' + node.client_errors + ' 4xx, ' + node.server_errors + ' 5xx)'],
        ['Rates', rates],
      ]),
      el('h2', {}, 'Nodes'),
      el('p', {}, 'From each node\'s heartbeat in the store (written every bins.refresh_s).'),
      table('Nodes by heartbeat', ['Node', 'Version', 'Ready', 'Up for', 'Keys', 'BIN table', 'Answers', 'Seen'],
        answer.nodes.map((n) => {
          const s = n.status || {};
          return [n.node, s.version, s.ready === undefined ? '—' : (s.ready ? 'yes' : 'no'), duration(s.uptime_s),
            s.keys ? s.keys.current : '—', n.version === null ? 'none' : 'v' + n.version + (n.current ? '' : ' (not current)'),
            s.requests === undefined ? '—' : s.requests + ' (' + s.server_errors + ' 5xx)',
            n.seen_s_ago + ' s ago' + (n.stale ? ' (stale)' : '')];
        }), 'No node has written a heartbeat yet.'),
      el('h2', {}, 'Configuration'),
      facts([['Forms', answer.configuration.forms], ['Routes', answer.configuration.routes],
        ['Egress routes', answer.configuration.egress_routes]]));
  }

  function duration(seconds) {
    if (seconds === undefined || seconds === null) return '—';
    const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60);
    return (d ? d + 'd ' : '') + (d || h ? h + 'h ' : '') + m + 'm';
  }

  // Tokens: a tree by minted_by; create with a scope picker; revoke names what goes with it.
  async function tokens(more) {
    // What a new token may hold is what the signed-in token holds now (a reload may narrow it).
    const now = await call('GET', '/console/session');
    if (!now.signed_in) { signedOut('Your session ended. Sign in again.'); return; }
    state.session = now;
    const query = 'limit=200' + (more && state.tokensNext ? '&after=' + encodeURIComponent(state.tokensNext) : '');
    const answer = await api('GET', '/admin/tokens?' + query);
    const all = more ? (state.tokens || []).concat(answer.data) : answer.data;
    state.tokens = all;
    state.tokensNext = answer.next;
    const children = new Map();
    const ids = new Set(all.map((t) => t.id));
    for (const t of all) {
      const parent = t.minted_by && ids.has(t.minted_by) ? t.minted_by : '';
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(t);
    }
    const descendants = (id) => (children.get(id) || []).flatMap((c) => [c.id, ...descendants(c.id)]);
    const rows = [];
    const walk = (parent, depth) => {
      for (const t of (children.get(parent) || [])) {
        const name = el('span', { class: 'depth-' + Math.min(depth, 6) }, (depth ? '↳ ' : '') + t.id);
        const revoke = t.source === 'store' && t.state === 'active'
          ? el('button', { type: 'button', class: 'danger', onclick: () => revokeToken(t.id, descendants(t.id)) },
            'Revoke', el('span', { class: 'visually-hidden' }, ' ' + t.id))
          : '';
        rows.push([name, t.scopes, t.source, t.state, t.minted_by, t.expires_at, t.last_used_at, revoke]);
        walk(t.id, depth + 1);
      }
    };
    walk('', 0);
    const grantable = state.session.grants;
    const picker = el('fieldset', {}, el('legend', {}, 'Scopes'),
      grantable.map((scope) => el('label', { class: 'check' },
        el('input', { type: 'checkbox', name: 'scope', value: scope }), ' ' + scope)));
    const form = el('form', { id: 'create-token', onsubmit: createToken },
      el('label', { for: 'new-id' }, 'Id'),
      el('input', { id: 'new-id', name: 'id', required: true, pattern: '[A-Za-z0-9._\\-]{1,64}', title: 'Letters, digits, dot, underscore and hyphen; at most 64', autocomplete: 'off' }),
      picker,
      el('label', { for: 'new-ttl' }, 'Lifetime (seconds, optional)'),
      el('input', { id: 'new-ttl', name: 'ttl', type: 'number', min: 60, max: 315360000 }),
      el('label', { for: 'new-rate' }, 'Requests a minute (optional)'),
      el('input', { id: 'new-rate', name: 'rate', type: 'number', min: 1 }),
      el('button', { type: 'submit' }, 'Create token'));
    page('Tokens',
      table('API tokens (minted ones under their minter)',
        ['Id', 'Scopes', 'Source', 'State', 'Minted by', 'Expires', 'Last used', 'Action'], rows, 'No tokens.'),
      answer.next ? el('button', { type: 'button', onclick: () => tokens(true) },
        'More tokens (' + all.length + ' shown, by id)') : '',
      el('h2', {}, 'Create a token'),
      el('p', {}, 'A new token may hold only what your signed-in token holds. Its secret is shown once.'),
      form, el('div', { id: 'new-token' }));
  }

  async function createToken(event) {
    event.preventDefault();
    const form = event.target;
    const scopes = [...form.querySelectorAll('input[name=scope]:checked')].map((i) => i.value);
    const body = { id: form.elements.id.value, scopes };
    if (form.elements.ttl.value) body.ttl_s = Number(form.elements.ttl.value);
    if (form.elements.rate.value) body.requests_per_minute = Number(form.elements.rate.value);
    try {
      const made = await api('POST', '/admin/tokens', body);
      await tokens();
      document.getElementById('new-token').replaceChildren(
        el('div', { class: 'once', role: 'alert' },
          el('p', {}, 'Token ' + made.id + ' was created. Copy its secret now: it is not shown again.'),
          el('label', { for: 'secret' }, 'Secret of ' + made.id),
          el('input', { id: 'secret', readonly: true, value: made.token, autocomplete: 'off', spellcheck: 'false' })));
      document.getElementById('secret').select();
      say('Token ' + made.id + ' created.', 'ok');
    } catch (error) {
      say(error.message, 'error');
    }
  }

  async function revokeToken(id, also) {
    const question = 'Revoke ' + id + '? This also revokes every token minted under it' +
      (also.length ? ' (of those listed here: ' + also.join(', ') + ').' : ' (none is listed here).');
    if (!await confirmAction(question, 'Revoke')) return;
    try {
      await api('DELETE', '/admin/tokens/' + encodeURIComponent(id));
      await tokens();
      say('Revoked ' + [id, ...also].join(', ') + '.', 'ok');
    } catch (error) {
      say(error.message, 'error');
    }
  }

  /** An operation in words: a redaction names the format it stores as; a reveal gives back
   * whatever alias it finds, so it names none. */
  function operation(o) { return o.action === 'reveal' ? 'reveal' : o.action + ' as ' + o.format; }

  // Routes: what each does, and the inspector on a sample.
  async function routes() {
    const answer = await api('GET', '/admin/routes');
    const list = answer.data;
    const selected = (location.hash.match(/^#\/routes\/(.+)$/) || [])[1];
    const route = list.find((r) => r.id === decodeURIComponent(selected || '')) || list[0];
    const summary = table('Routes', ['Id', 'Door', 'Matches', 'Form', 'Operations', 'Steps'],
      list.map((r) => [el('a', { href: '#/routes/' + encodeURIComponent(r.id) }, r.id), r.door,
        r.match.prefix || (r.match.paths || []).join(', '), r.form,
        r.request.concat(r.response).map(operation).join('; ') || '—', r.steps]),
      'No routes are configured.');
    if (!route) { page('Routes', summary); return; }
    const operations = (ops, side) => ops.map((o, i) => facts([
      [side + ' operation ' + (i + 1), operation(o)],
      ['Selectors', o.selectors.map((s) => Object.entries(s)[0].join(': '))],
      ['Required', o.required]]));
    const sample = state.samples[route.id] || JSON.stringify({
      method: route.methods[0] || 'POST', path: '/',
      headers: { 'Content-Type': 'application/json' },
      body: { card_number: '4111111111111111', card_cvc: '123' },
    }, null, 2);
    const editor = el('textarea', { id: 'sample', rows: 12, spellcheck: 'false',
      oninput: (e) => { state.samples[route.id] = e.target.value; } }, sample);
    page('Routes', summary,
      el('h2', {}, 'Route ' + route.id),
      facts([['Door', route.door], ['Upstream', route.upstream], ['Methods', route.methods],
        ['Form', route.form], ['Steps', route.steps], ['Unselected cards', route.unselected_cards],
        ['Configured headers', route.headers]]),
      operations(route.request, 'Request'), operations(route.response, 'Answer'),
      el('h2', {}, 'Try it'),
      el('p', {}, 'The inspector runs a sample through the route without sending it or touching the vault. ' +
        'Use test card numbers only.'),
      el('form', { id: 'inspect', onsubmit: (e) => inspect(e, route.id) },
        el('label', { for: 'sample' }, 'Sample request (JSON: method, path, headers, body)'), editor,
        el('button', { type: 'submit' }, 'Run the inspector')),
      el('div', { id: 'inspection', 'aria-live': 'polite' }));
  }

  async function inspect(event, id) {
    event.preventDefault();
    const out = document.getElementById('inspection');
    let sample;
    try { sample = JSON.parse(document.getElementById('sample').value); } catch (error) {
      out.replaceChildren(el('p', { class: 'refused', role: 'alert' }, 'The sample is not JSON: ' + error.message));
      return;
    }
    try {
      const r = await api('POST', '/admin/routes/' + encodeURIComponent(id) + '/test', sample);
      const parts = [
        el('p', { class: r.would_send ? 'verdict ok' : 'verdict refused', role: 'status' },
          r.would_send ? 'Would send.' : 'Would refuse' + (r.refusal ? ': ' + r.refusal.description : '.')),
        facts([['Matched selectors', r.selectors.matched], ['Missed selectors', r.selectors.missed],
          ['Revealed', r.selectors.revealed], ['Redacted', r.selectors.redacted],
          ['Cards no selector took', r.unselected_cards_found]]),
      ];
      if (r.selectors.missed.length) {
        parts.push(el('p', { class: 'warn', role: 'alert' },
          'No value was found at ' + r.selectors.missed.join(', ') + ': check these selectors.'));
      }
      if (r.request) {
        parts.push(el('h3', {}, 'What would be sent'),
          el('pre', { class: 'sent' }, r.request.method + ' ' + r.request.url + '\n' +
            r.request.headers.map(([n, v]) => n + ': ' + v).join('\n') + '\n\n' + r.request.body));
      }
      for (const step of r.steps) {
        parts.push(el('h3', {}, 'Step ' + step.name + (step.key ? ' (' + step.key + ')' : '')),
          el('pre', {}, step.headers.map(([n, v]) => n + ': ' + v).join('\n') + (step.error ? '\nerror: ' + step.error : '')));
      }
      out.replaceChildren(...parts);
    } catch (error) {
      out.replaceChildren(el('p', { class: 'refused', role: 'alert' }, error.message));
    }
  }

  async function forms() {
    const answer = await api('GET', '/admin/forms');
    const origin = state.session.elements_origin;
    const sections = answer.data.map((form) => {
      const fields = form.schema.fields || [];
      const preview = origin
        ? el('button', { type: 'button', onclick: () => previewForm(form, origin) }, 'Preview ' + form.name + "'s fields")
        : '';
      return el('section', { 'aria-labelledby': 'form-' + form.name },
        el('h2', { id: 'form-' + form.name }, form.name),
        table('Fields of ' + form.name, ['Field', 'Type', 'Required', 'Rules', 'Stored as'],
          fields.map((f) => [f.name, f.type, f.required ? 'yes' : 'no',
            (f.rules || []).map(rule).join('; ') || (f.file ? 'up to ' + f.file.maxFiles + ' files of ' + f.file.maxBytes + ' bytes' : '—'),
            (form.stored_as || {})[f.name] || '—']), 'No fields.'),
        preview, el('div', { id: 'preview-' + form.name, class: 'preview' }));
    });
    page('Forms',
      origin ? el('p', {}, 'A preview mounts the form\'s Cloak Elements fields, served from ' + origin +
        ': type test values only. What you type stays in Elements\' frames; this page sees each field\'s state.')
        : el('p', { class: 'empty' }, 'Set console.elements_origin (and add this console\'s origin to ' +
          'elements.allowed_origins) to preview each form\'s Cloak Elements fields here.'),
      sections.length ? sections : el('p', { class: 'empty' }, 'No forms are configured.'));
  }

  /** Loads Elements' loader from `origin` once (the page's CSP names that origin). */
  function loadElements(origin) {
    if (window.Cloak) return Promise.resolve(window.Cloak);
    if (!state.elementsLoading) {
      state.elementsLoading = new Promise((resolve, reject) => {
        const script = el('script', { src: origin + '/elements/v1/cloak.js' });
        script.addEventListener('load', () => resolve(window.Cloak));
        script.addEventListener('error', () => { state.elementsLoading = null; reject(new Error('Cloak Elements did not load from ' + origin)); });
        document.head.append(script);
      });
    }
    return state.elementsLoading;
  }

  async function previewForm(form, origin) {
    const out = document.getElementById('preview-' + form.name);
    try {
      const Cloak = await loadElements(origin);
      if (state.preview) state.preview.destroy();
      const mounted = Cloak.form(form.name, { origin });
      state.preview = mounted;
      const rows = [];
      const fields = (form.schema.fields || []);
      out.replaceChildren(...fields.map((f) => {
        const stateCell = el('output', { id: 'preview-state-' + form.name + '-' + f.name, 'aria-live': 'polite' }, 'empty');
        rows.push([f, stateCell]);
        return el('div', { class: 'preview-field' },
          el('span', { class: 'preview-label', id: 'preview-label-' + f.name }, f.name),
          el('div', { class: 'preview-frame', id: 'preview-frame-' + form.name + '-' + cssName(f.name) }), stateCell);
      }));
      for (const [f, stateCell] of rows) {
        const target = '#preview-frame-' + form.name + '-' + cssName(f.name);
        const field = f.type === 'file'
          ? mounted.file(target, { name: f.name, ariaLabel: f.name })
          : mounted.field(target, { name: f.name, ariaLabel: f.name, placeholder: f.title || f.name });
        field.on('change', (s) => { stateCell.textContent = describeState(s); });
        field.on('error', (e) => { stateCell.textContent = 'error: ' + e.message; });
      }
      mounted.on('error', (e) => say('Preview: ' + e.message, 'error'));
    } catch (error) {
      out.replaceChildren(el('p', { class: 'refused', role: 'alert' }, error.message));
    }
  }

  function cssName(name) { return name.replace(/[^A-Za-z0-9_-]/g, '_'); }

  /** A field's state as words: never its digits (no bin or last four on this page). */
  function describeState(s) {
    const parts = [s.isEmpty ? 'empty' : (s.isValid ? 'valid' : 'not valid')];
    if (s.cardBrand) parts.push(s.cardBrand);
    if (s.isRequired) parts.push('required');
    return parts.join(', ');
  }

  function rule(r) {
    switch (r.kind) {
      case 'length': return 'length ' + r.min + (r.max === null ? '+' : '–' + r.max);
      case 'pattern': return 'pattern ' + r.regex;
      default: return r.kind || text(r);
    }
  }

  async function files() {
    const f = await api('GET', '/admin/files');
    page('Files',
      el('p', {}, 'What node ' + f.node + ' has received since it started (each node counts its own).'),
      facts([['Uploads stored', f.uploads.stored], ['Uploads refused', f.uploads.refused],
        ['Uploads failed', f.uploads.failed], ['Bytes stored', f.stored_bytes], ['Files revealed', f.reveals],
        ['Bytes revealed', f.revealed_bytes], ['Uploads in progress now', f.unfinished],
        ['Forms that take files', f.forms_with_files]]));
  }

  async function bins() {
    const b = await api('GET', '/admin/bins');
    const parts = [];
    if (b.table) {
      parts.push(facts([['Version', b.table.version], ['Rows', b.table.rows], ['Source', b.table.source],
        ['Imported', b.table.imported_at], ['SHA-256', b.table.sha256], ['Verified', b.verified ? 'yes' : 'NO']]));
    } else {
      parts.push(el('p', { class: 'empty' }, 'No BIN table was imported (cloak bins import).'));
    }
    parts.push(el('h2', {}, 'History'));
    if (b.previous && b.table) {
      parts.push(el('p', {}, 'Before it: ' + b.previous.name + ' (' + b.previous.rows + ' rows).'),
        el('button', { type: 'button', class: 'danger', onclick: () => rollback(b.table.version, b.previous.name) },
          'Roll back to ' + b.previous.name));
    } else {
      parts.push(el('p', { class: 'empty' }, 'The store keeps no table before this one.'));
    }
    parts.push(el('h2', {}, 'What each node serves'),
      table('Nodes', ['Node', 'Version', 'Current', 'Seen'], b.nodes.map((n) =>
        [n.node, n.version, n.current ? 'yes' : 'no', n.seen_s_ago + ' s ago' + (n.stale ? ' (stale)' : '')]),
      'No node has written a heartbeat yet.'));
    page('BIN table', ...parts);
  }

  async function rollback(version, name) {
    if (!await confirmAction('Make ' + name + ' the BIN table again, replacing version ' + version + '?',
      'Roll back')) return;
    try {
      const made = await api('POST', '/admin/bins/rollback', { current_version: version });
      await bins();
      say('The BIN table is now version ' + made.version + ' (' + made.source + ').', 'ok');
    } catch (error) {
      say(error.message, 'error');
    }
  }

  async function keys() {
    const k = await api('GET', '/admin/keys');
    page('Keys',
      el('p', {}, 'Read-only. Rotate, rewrap and retire with the cloak keys commands.'),
      table('Key versions', ['Version', 'Records and files it seals', 'Current'],
        k.versions.map((v) => [v.id, v.records, v.current ? 'yes' : 'no'])),
      k.orphans.length ? table('Versions records name that the ring does not hold', ['Version', 'Records'],
        k.orphans.map((v) => [v.id, v.records])) : '');
  }

  // Audit: the search, newest first, a page at a time; what was loaded exports as JSONL.
  async function audit() {
    const fields = [['from', 'From (RFC 3339 or ms)'], ['until', 'Until'], ['action', 'Action'],
      ['token', 'Token id'], ['result', 'Result'], ['alias_ref', 'Alias reference (ar_…)']];
    const form = el('form', { id: 'audit-search', onsubmit: (e) => { e.preventDefault(); searchAudit(null); } },
      fields.map(([name, label]) => el('span', { class: 'field' },
        el('label', { for: 'audit-' + name }, label),
        el('input', { id: 'audit-' + name, name, autocomplete: 'off', spellcheck: 'false' }))),
      el('button', { type: 'submit' }, 'Search'));
    page('Audit', form, el('div', { id: 'audit-results', 'aria-live': 'polite' }));
    await searchAudit(null);
  }

  async function searchAudit(cursor) {
    const form = document.getElementById('audit-search');
    const query = new URLSearchParams();
    for (const input of form.querySelectorAll('input')) if (input.value.trim()) query.set(input.name, input.value.trim());
    query.set('limit', '100');
    if (cursor) query.set('cursor', cursor);
    const out = document.getElementById('audit-results');
    try {
      const answer = await api('GET', '/admin/audit?' + query.toString());
      const loaded = cursor ? (state.audit || []).concat(answer.data) : answer.data;
      state.audit = loaded;
      const exportLink = el('button', { type: 'button', onclick: () => exportAudit(loaded) },
        'Export ' + loaded.length + ' events as JSONL');
      out.replaceChildren(
        table('Audit events, newest first', ['When', 'Action', 'Token', 'Client', 'Result', 'Alias reference', 'Facts'],
          loaded.map((e) => [e.at, e.action, e.token_id, e.client, e.result, e.alias_ref,
            Object.entries(e.facts).map(([k, v]) => k + '=' + v).join(' ')]), 'No event matches.'),
        answer.next ? el('button', { type: 'button', onclick: () => searchAudit(answer.next) }, 'Older events') : '',
        loaded.length ? exportLink : '');
    } catch (error) {
      out.replaceChildren(el('p', { class: 'refused', role: 'alert' }, error.message));
    }
  }

  function exportAudit(events) {
    const blob = new Blob(events.map((e) => JSON.stringify(e) + '\n'), { type: 'application/x-ndjson' });
    const link = el('a', { href: URL.createObjectURL(blob), download: 'cloak-audit.jsonl' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 0);
  }

  // Jobs: imports and exports with their progress, an import's refusals by reason, and an
  // export's approval (what the approver signs: rows, recipient, digest). Files stay with
  // each job's owner (the API and the CLI); nothing here is a value.
  async function jobs() {
    const answer = await api('GET', '/admin/jobs?limit=100');
    const selected = decodeURIComponent((location.hash.match(/^#\/jobs\/(.+)$/) || [])[1] || '');
    const seen = state.jobsSeen || (state.jobsSeen = new Map());
    const now = Date.now();
    const rows = answer.data.map((j) => {
      const p = jobProgress(j, seen.get(j.id), now);
      seen.set(j.id, { at: now, done: p.done });
      return [el('a', { href: '#/jobs/' + encodeURIComponent(j.id) }, j.id), j.kind, j.state.replace('_', ' '),
        j.owner, p.text, p.rate, p.left, j.kind === 'import' ? j.refused : j.missing, j.updated_at];
    });
    const list = table('Jobs, newest first', ['Id', 'Kind', 'State', 'Owner', 'Progress', 'Rate', 'Time left',
      'Refused or missing', 'Updated'], rows, 'No jobs.');
    const active = answer.data.some((j) => !['done', 'failed', 'cancelled', 'awaiting_approval'].includes(j.state));
    if (document.getElementById('jobs-list') && state.page === 'jobs' && state.jobsShown === selected) {
      document.getElementById('jobs-list').replaceChildren(list);
    } else {
      state.jobsShown = selected;
      page('Jobs',
        el('p', {}, 'Imports and exports of every owner. Start them, and download their files, with the cloak ' +
          'import and cloak export commands or the API.'),
        el('div', { id: 'jobs-list' }, list),
        el('div', { id: 'job-detail', 'aria-live': 'polite' }));
      const job = answer.data.find((j) => j.id === selected);
      if (job) await jobDetail(job.id);
    }
    clearTimeout(state.jobsTimer);
    // Read again while a job moves, the page is in view, and someone used it in the last 15
    // minutes: a poll keeps the session alive, and an unattended one must still end.
    if (state.page === 'jobs' && !state.jobsSince) state.jobsSince = Date.now();
    const attended = Date.now() - Math.max(state.jobsSince || 0, state.lastInput || 0) < 15 * 60 * 1000;
    if (active && attended) {
      const tick = () => {
        if (state.page !== 'jobs') return;
        if (document.hidden) { state.jobsTimer = setTimeout(tick, 2000); return; }
        jobs().catch(() => {});
      };
      state.jobsTimer = setTimeout(tick, 2000);
    }
  }

  /** A job's rows done of its total, its rate and time left: from the last look when there was
   * one, else averaged since it was made. */
  function jobProgress(j, last, now) {
    const done = j.kind === 'import' ? j.rows_read : j.exported;
    const total = j.rows;
    // An import sent through the API is counted as it arrives, and its total is not kept.
    const known = total !== undefined && total !== null;
    const out = { done, rate: '—', left: '—',
      text: known ? done + ' of ' + total + (total ? ' (' + Math.floor(100 * done / total) + ' %)' : '') : done + ' rows read' };
    if (['done', 'failed', 'cancelled', 'awaiting_approval'].includes(j.state)) return out;
    let perSecond = null;
    if (last && now > last.at && done >= last.done) perSecond = (done - last.done) * 1000 / (now - last.at);
    else {
      const seconds = (Date.parse(j.updated_at) - Date.parse(j.created_at)) / 1000;
      if (seconds > 0) perSecond = done / seconds;
    }
    if (perSecond !== null) {
      out.rate = Math.round(perSecond) + ' rows/s';
      if (total && perSecond > 0) out.left = duration(Math.ceil((total - done) / perSecond)) || '—';
    }
    return out;
  }

  async function jobDetail(id) {
    const out = document.getElementById('job-detail');
    const j = await api('GET', '/admin/jobs/' + encodeURIComponent(id));
    const parts = [el('h2', { id: 'job-title' }, (j.kind === 'import' ? 'Import ' : 'Export ') + j.id)];
    if (j.kind === 'import') {
      parts.push(facts([['State', j.state], ['Owner', j.owner], ['Form or format', j.form || j.format],
        ['File', j.file], ['Layout', j.layout], ['Rows read', j.rows_read + (j.rows ? ' of ' + j.rows : '')],
        ['Imported', j.imported], ['Refused', j.refused], ['Failure', j.failure], ['Made', j.created_at],
        ['Updated', j.updated_at], ['Files kept until', j.expires_at]]));
      const r = await api('GET', '/admin/jobs/' + encodeURIComponent(id) + '/refusals');
      parts.push(table('Refused rows by reason, the commonest first', ['Reason', 'Code', 'Rows'],
          r.data.map((x) => [x.reason, x.code, x.rows]), 'No row was refused.'),
        r.other_rows ? el('p', {}, r.other_rows + ' more rows were refused for other reasons.') : '',
        el('p', {}, 'Which rows: the job\'s advice file, for its owner (cloak jobs advice ' + j.id + ').'));
    } else {
      parts.push(facts([['State', j.state], ['Requested by', j.owner + ' (' + j.requester_person + ')'],
        ['Selection', j.selection], ['Layout', j.layout], ['Rows', j.rows], ['Fields', j.fields],
        ['Groups of one', j.groups_of_one], ['Partial groups', j.partial_groups],
        ['Recipient fingerprint', j.recipient_fingerprint], ['Selection digest', j.selection_digest],
        ['Counted at', j.counted_at], ['Exported', j.exported], ['Missing', j.missing],
        ['Approved', j.approval ? j.approval.person + ' (' + j.approval.token + ') at ' + j.approval.at : null],
        ['Failure', j.failure]]));
      if (j.state === 'awaiting_approval' && j.selection_digest) parts.push(approval(j));
    }
    out.replaceChildren(...parts);
  }

  /** The approval of `j`, for a jobs:approve session: it signs what this page shows, once the
   * row count is typed. */
  function approval(j) {
    if (!may('jobs:approve')) {
      return el('p', { class: 'empty' }, 'Awaiting another person\'s approval (a token with jobs:approve).');
    }
    const form = el('form', { id: 'approve', onsubmit: (e) => approve(e, j) },
      el('p', {}, 'Approving sends ' + j.rows + ' rows to the key ' + j.recipient_fingerprint +
        ' (selection digest ' + j.selection_digest + '). The requester then downloads the file.'),
      el('label', { for: 'approve-rows' }, 'Type the row count (' + j.rows + ') to approve'),
      el('input', { id: 'approve-rows', name: 'rows', inputmode: 'numeric', autocomplete: 'off', required: true }),
      el('button', { type: 'submit', class: 'danger' }, 'Approve the export'));
    return form;
  }

  async function approve(event, j) {
    event.preventDefault();
    const typed = event.target.elements.rows.value.trim();
    if (typed !== String(j.rows)) {
      say('The row count typed is not the job\'s (' + j.rows + '): nothing was approved.', 'error');
      return;
    }
    try {
      await api('POST', '/admin/jobs/' + encodeURIComponent(j.id) + '/approve',
        { rows: j.rows, fingerprint: j.recipient_fingerprint, selection_digest: j.selection_digest });
      await jobDetail(j.id);
      say('Approved ' + j.id + ': ' + j.rows + ' rows to ' + j.recipient_fingerprint + '.', 'ok');
    } catch (error) {
      say(error.message, 'error');
    }
  }

  // ---- Start -------------------------------------------------------------------------------

  document.addEventListener('DOMContentLoaded', async () => {
    document.getElementById('sign-in-form').addEventListener('submit', signIn);
    document.getElementById('sign-out').addEventListener('click', signOut);
    for (const kind of ['keydown', 'pointerdown']) {
      document.addEventListener(kind, () => { state.lastInput = Date.now(); }, { passive: true });
    }
    window.addEventListener('hashchange', route);
    try {
      const session = await call('GET', '/console/session');
      if (session.signed_in) signedIn(session); else signedOut();
    } catch (_) {
      signedOut();
    }
  });
})();
