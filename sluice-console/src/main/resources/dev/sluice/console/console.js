// Sluice console: reads its document once a second and changes quotas. Where (and whether it
// sends an admin token) is in the page's <meta name="sluice-console">: sluice serve reads
// /v1/console with the admin token; a Spring Boot application's Actuator serves it with its own
// security. Every value is written as text (textContent), never as markup: keys are chosen by
// clients, and the page must not run what they send.
'use strict';

(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const CONFIG = document.querySelector('meta[name="sluice-console"]').dataset;
  const DATA = new URL(CONFIG.data || '../v1/console', location.href).href;
  const QUOTAS = new URL(CONFIG.quotas || '../v1/quotas', location.href).href;
  const USE_TOKEN = (CONFIG.auth || 'token') === 'token';
  const FLAT = CONFIG.quotaApi === 'flat';
  const TOKEN_KEY = 'sluice.console.token';
  const POLL_MS = 1000;
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let timer = null;
  let last = null;

  const $ = (id) => document.getElementById(id);

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function cell(row, text, cls) {
    const td = el('td', text, cls);
    row.appendChild(td);
    return td;
  }

  function fmt(n) {
    if (n === undefined || n === null) return '';
    if (Math.abs(n) >= 100 || Number.isInteger(n)) return Math.round(n).toLocaleString('en');
    return n.toFixed(n < 10 ? 2 : 1);
  }

  function lastOf(a) {
    return a && a.length ? a[a.length - 1] : 0;
  }

  // A sparkline of one or more series that end at the last sample time.
  function spark(series, samples) {
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 180 32');
    svg.setAttribute('preserveAspectRatio', 'none');
    const n = Math.max(2, samples);
    let max = 1;
    for (const s of series) for (const v of s.values) max = Math.max(max, v);
    for (const s of series) {
      if (!s.values.length) continue;
      const line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('class', s.cls);
      const offset = n - s.values.length;
      const points = s.values.map((v, i) =>
        ((offset + i) * 180 / (n - 1)).toFixed(1) + ',' + (31 - v * 30 / max).toFixed(1));
      line.setAttribute('points', points.join(' '));
      svg.appendChild(line);
    }
    const title = document.createElementNS(SVG, 'title');
    title.textContent = 'max ' + fmt(max);
    svg.appendChild(title);
    return svg;
  }

  function status(text, cls) {
    const s = $('status');
    s.textContent = text;
    s.className = cls || '';
  }

  function headers(extra) {
    const h = USE_TOKEN ? { 'Authorization': 'Bearer ' + token } : {};
    return Object.assign(h, extra || {});
  }

  async function problem(response) {
    try {
      const body = await response.json();
      return body.detail || body.title || ('HTTP ' + response.status);
    } catch (e) {
      return 'HTTP ' + response.status;
    }
  }

  async function poll() {
    if (USE_TOKEN && !token) {
      status('enter the admin token', 'bad');
      return;
    }
    try {
      const r = await fetch(DATA, { headers: headers(), cache: 'no-store' });
      if (r.status === 401 || r.status === 403) {
        status(USE_TOKEN ? 'the admin token was refused' : 'not allowed: sign in', 'bad');
        stop();
        return;
      }
      if (!r.ok) {
        status(await problem(r), 'bad');
        return;
      }
      last = await r.json();
      render(last);
      status('live', 'ok');
    } catch (e) {
      status('the service does not answer', 'bad');
    }
  }

  function start() {
    stop();
    poll();
    timer = setInterval(poll, POLL_MS);
  }

  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
  }

  // What each section last drew: a section is drawn again only when its data changed, so that
  // a button is not replaced under the pointer (and a click lost) every second.
  const drawn = {};

  function draw(section, data, fn) {
    const text = JSON.stringify(data);
    if (drawn[section] === text) return;
    drawn[section] = text;
    fn();
  }

  function render(d) {
    $('instance').textContent = d.instance;
    const samples = d.times.length;
    draw('policies', [d.policies, samples], () => renderPolicies(d, samples));
    draw('top', [d.policies.map((p) => p.topRefused), d.limits.map((l) => l.topRefused)], () => renderTop(d));
    draw('limits', [d.limits, samples], () => renderLimits(d, samples));
    draw('fleet', d.policies.map((p) => p.lease), () => renderFleet(d));
    $('quotas-section').hidden = !d.quotasOn;
    $('audit-section').hidden = !d.quotasOn;
    draw('quotas', [d.version, d.quotas], () => renderQuotas(d));
    draw('audit', d.audit, () => renderAudit(d));
    renderChoices(d);
  }

  function renderPolicies(d, samples) {
    const body = $('policies').tBodies[0];
    body.replaceChildren();
    for (const p of d.policies) {
      const tr = el('tr');
      tr.dataset.policy = p.name;
      cell(tr, p.name);
      cell(tr, fmt(lastOf(p.allowedPerSecond)), 'num allowed-rate');
      cell(tr, fmt(lastOf(p.refusedPerSecond)), 'num refused-rate');
      cell(tr).appendChild(spark([
        { values: p.allowedPerSecond, cls: 'allowed' },
        { values: p.refusedPerSecond, cls: 'refused' }], samples));
      cell(tr, fmt(p.allowed), 'num');
      cell(tr, fmt(p.rejected + p.unavailable), 'num');
      body.appendChild(tr);
    }
  }

  function topList(title, kind, name, entries) {
    const box = el('div');
    box.className = 'top-list';
    box.dataset[kind] = name;
    box.appendChild(el('h3', title));
    if (!entries.length) {
      box.appendChild(el('p', 'nothing refused', 'muted'));
      return box;
    }
    const table = el('table');
    const body = el('tbody');
    for (const e of entries) {
      const tr = el('tr');
      cell(tr, e.key, 'key');
      cell(tr, fmt(e.count), 'num refused-count');
      body.appendChild(tr);
    }
    table.appendChild(body);
    box.appendChild(table);
    return box;
  }

  function renderTop(d) {
    const top = $('top');
    top.replaceChildren();
    for (const p of d.policies) top.appendChild(topList('policy ' + p.name, 'policy', p.name, p.topRefused));
    for (const l of d.limits) top.appendChild(topList('limit ' + l.name, 'limit', l.name, l.topRefused));
  }

  function renderLimits(d, samples) {
    const box = $('limits');
    box.replaceChildren();
    if (!d.limits.length) {
      box.appendChild(el('p', 'No concurrency limit in the policies file.', 'muted'));
      return;
    }
    for (const l of d.limits) {
      const div = el('div');
      div.className = 'limit';
      div.dataset.limit = l.name;
      div.appendChild(el('h3', l.name + (l.circuitOpen ? ' (store circuit open)' : '')));
      const summary = el('table');
      const sb = el('tbody');
      const head = el('tr');
      for (const h of ['In flight', 'Waiting', 'Acquired/s', 'Refused/s', 'In flight, history']) head.appendChild(el('th', h));
      sb.appendChild(head);
      const tr = el('tr');
      cell(tr, fmt(l.inFlight), 'num in-flight');
      cell(tr, fmt(l.waiting), 'num');
      cell(tr, fmt(lastOf(l.acquiredPerSecond)), 'num');
      cell(tr, fmt(lastOf(l.refusedPerSecond)), 'num');
      cell(tr).appendChild(spark([{ values: l.inFlightHistory, cls: 'level' },
        { values: l.refusedPerSecond, cls: 'refused' }], samples));
      sb.appendChild(tr);
      summary.appendChild(sb);
      div.appendChild(summary);
      if (l.keys.length) {
        const keys = el('table');
        const kb = el('tbody');
        const kh = el('tr');
        for (const h of ['Key', 'Limit now', 'Kind', 'Limit, history']) kh.appendChild(el('th', h));
        kb.appendChild(kh);
        for (const k of l.keys) {
          const r = el('tr');
          r.dataset.key = k.key;
          cell(r, k.key, 'key');
          cell(r, fmt(k.limit), 'num key-limit');
          cell(r, k.adaptive ? 'adaptive' : 'fixed');
          cell(r).appendChild(spark([{ values: k.limitHistory, cls: 'level' }], samples));
          kb.appendChild(r);
        }
        keys.appendChild(kb);
        div.appendChild(keys);
      }
      box.appendChild(div);
    }
  }

  function renderFleet(d) {
    const body = $('leases').tBodies[0];
    body.replaceChildren();
    let any = false;
    for (const p of d.policies) {
      if (!p.leased) continue;
      any = true;
      const l = p.lease;
      const tr = el('tr');
      cell(tr, p.name);
      cell(tr, fmt(l.instances), 'num');
      cell(tr, fmt(l.keysLeased), 'num');
      cell(tr, fmt(l.unitsHeld), 'num');
      cell(tr, fmt(l.unitsSpent), 'num');
      cell(tr, fmt(l.localRejections), 'num');
      cell(tr, l.meanLeaseCallMillis.toFixed(2), 'num');
      body.appendChild(tr);
    }
    $('leases').hidden = !any;
    $('no-leases').hidden = any;
  }

  function describe(q) {
    if (!q) return '';
    if (q.concurrency !== undefined) return q.concurrency + ' at once';
    return q.limits.map((l) => l.rate !== undefined
      ? l.algorithm + ' ' + l.rate + ', capacity ' + fmt(l.capacity)
      : l.algorithm + ' ' + fmt(l.limit) + ' per ' + l.window).join('; ');
  }

  function target(q) {
    return q.prefix ? q.key + '*' : q.key;
  }

  function renderQuotas(d) {
    $('quota-version').textContent = 'version ' + d.version;
    const body = $('quotas').tBodies[0];
    body.replaceChildren();
    for (const q of d.quotas) {
      const tr = el('tr');
      tr.dataset.policy = q.policy;
      tr.dataset.key = q.key;
      cell(tr, q.policy);
      cell(tr, target(q), 'key');
      cell(tr, describe(q));
      cell(tr, q.expiresAt || 'never');
      cell(tr, q.reason);
      const actions = cell(tr);
      const edit = el('button', 'Edit');
      edit.type = 'button';
      edit.className = 'edit';
      edit.addEventListener('click', () => fill(q));
      const remove = el('button', 'Remove');
      remove.type = 'button';
      remove.className = 'remove';
      remove.addEventListener('click', () => removeQuota(q));
      actions.append(edit, ' ', remove);
      body.appendChild(tr);
    }
    if (!d.quotas.length) {
      const tr = el('tr');
      const td = cell(tr, 'No quota: every key takes its policy\'s limits.', 'muted');
      td.colSpan = 6;
      body.appendChild(tr);
    }
  }

  function renderAudit(d) {
    const body = $('audit').tBodies[0];
    body.replaceChildren();
    for (const c of d.audit) {
      const tr = el('tr');
      const q = c.after || c.before;
      cell(tr, c.version, 'num');
      cell(tr, c.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
      cell(tr, c.who);
      cell(tr, q.policy + ' ' + target(q), 'key');
      cell(tr, c.before ? describe(c.before) : '(none)');
      cell(tr, c.after ? describe(c.after) : '(removed)');
      cell(tr, c.reason);
      body.appendChild(tr);
    }
  }

  function renderChoices(d) {
    const select = $('q-policy');
    const names = d.policies.map((p) => 'rate:' + p.name).concat(d.limits.map((l) => 'concurrency:' + l.name));
    const now = Array.from(select.options).map((o) => o.value);
    if (names.join('\n') === now.join('\n')) return;
    const chosen = select.value;
    select.replaceChildren();
    for (const p of d.policies) {
      const o = el('option', p.name + ' (rate)');
      o.value = 'rate:' + p.name;
      select.appendChild(o);
    }
    for (const l of d.limits) {
      const o = el('option', l.name + ' (concurrency)');
      o.value = 'concurrency:' + l.name;
      select.appendChild(o);
    }
    if (names.includes(chosen)) select.value = chosen;
    kindChanged();
  }

  function kind() {
    return $('q-policy').value.startsWith('concurrency:') ? 'concurrency' : 'rate';
  }

  function kindChanged() {
    const c = kind() === 'concurrency';
    $('q-rate-fields').hidden = c;
    $('q-concurrency-fields').hidden = !c;
  }

  function fill(q) {
    $('q-policy').value = (q.concurrency !== undefined ? 'concurrency:' : 'rate:') + q.policy;
    kindChanged();
    $('q-key').value = q.key;
    $('q-prefix').checked = q.prefix;
    $('q-expires').value = q.expiresAt || '';
    $('q-reason').value = q.reason;
    if (q.concurrency !== undefined) {
      $('q-concurrency').value = q.concurrency;
    } else if (q.limits.length && q.limits[0].rate !== undefined) {
      $('q-algorithm').value = q.limits[0].algorithm;
      $('q-capacity').value = q.limits[0].capacity;
      $('q-rate').value = q.limits[0].rate;
    }
    message('Editing ' + q.policy + ' ' + target(q) + ': ' + describe(q), '');
  }

  function message(text, cls) {
    const m = $('quota-message');
    m.textContent = text;
    m.className = cls;
  }

  async function save(event) {
    event.preventDefault();
    const [k, policy] = splitChoice($('q-policy').value);
    const body = {
      policy: policy,
      key: $('q-key').value.trim(),
      prefix: $('q-prefix').checked,
      reason: $('q-reason').value,
      who: $('q-who').value.trim(),
    };
    const expires = $('q-expires').value.trim();
    if (expires) body.expiresAt = expires;
    if (k === 'concurrency') {
      const n = Number($('q-concurrency').value);
      body.concurrency = Number.isInteger(n) ? n : $('q-concurrency').value;
    } else {
      const limit = {
        algorithm: $('q-algorithm').value,
        capacity: $('q-capacity').value.trim(),
        rate: $('q-rate').value.trim(),
      };
      if (FLAT) Object.assign(body, limit); else body.limits = [limit];
    }
    const r = await fetch(QUOTAS, {
      method: FLAT ? 'POST' : 'PUT',
      headers: headers({ 'Content-Type': 'application/json' }),
      body: JSON.stringify(body),
    });
    if (r.ok) {
      const set = await r.json();
      message('Saved (version ' + set.version + '): ' + policy + ' ' + target(set.quota) + ', ' + describe(set.quota), 'ok');
      poll();
    } else {
      message(await problem(r), 'bad');
    }
  }

  function splitChoice(v) {
    const i = v.indexOf(':');
    return [v.substring(0, i), v.substring(i + 1)];
  }

  async function removeQuota(q) {
    const who = $('q-who').value.trim();
    if (!who) {
      message('Say who you are (Who) before removing a quota.', 'bad');
      $('q-who').focus();
      return;
    }
    const params = new URLSearchParams({ policy: q.policy, key: q.key, who: who,
      reason: $('q-reason').value });
    if (q.prefix) params.set('prefix', 'true');
    const r = await fetch(QUOTAS + '?' + params.toString(), { method: 'DELETE', headers: headers() });
    if (r.ok) {
      message('Removed ' + q.policy + ' ' + target(q), 'ok');
      poll();
    } else {
      message(await problem(r), 'bad');
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    if (!USE_TOKEN) $('login').hidden = true;
    $('token').value = token;
    $('login').addEventListener('submit', (e) => {
      e.preventDefault();
      token = $('token').value.trim();
      sessionStorage.setItem(TOKEN_KEY, token);
      start();
    });
    $('quota-form').addEventListener('submit', save);
    $('q-policy').addEventListener('change', kindChanged);
    if (token || !USE_TOKEN) start(); else status('enter the admin token', 'bad');
  });
})();
