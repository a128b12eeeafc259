// Black Widow hub dashboard, alerts: the alert rules (GET /v1/alerts) with
// each one's latest alerts and their delivery state
// (GET /v1/alerts/{id}/events), a form that adds a rule with live checks
// (the query through POST /v1/queries/validate, a spike rule's preview
// over the last day through POST /v1/alerts/preview), test and delete
// buttons, and marks on the trends' activity chart where the selected
// crawler's rules fired. Self-contained: it reads the page's shared
// helpers from window.bwDashboard and owns every element whose id starts
// with "al".
'use strict';

(() => {
  // EVENTS_PER_RULE is how many of each rule's alerts are read.
  const EVENTS_PER_RULE = 5;
  // RECENT_SHOWN is how many alerts the recent list shows.
  const RECENT_SHOWN = 20;
  // CHECK_DELAY debounces the live checks while the operator types.
  const CHECK_DELAY = 300;

  const bw = window.bwDashboard;
  const { api, el, $, view, SVG_NS } = bw;

  const state = {
    rules: [],
    events: [], // every rule's latest alerts, newest first
    busy: false,
    checkTimer: null,
    checkSeq: 0,
  };

  function ruleOn(r) {
    if (r.crawler_id != null) return `crawler ${r.crawler_id}`;
    if (r.user_id != null) return `user ${r.user_id}`;
    return '–';
  }

  function deliveryBadge(ev) {
    const d = (ev.deliveries || [])[0];
    if (!d) return el('span', { class: 'badge' }, '–');
    const cls = d.state === 'delivered' ? 'badge badge-ok' : d.state === 'failed' ? 'badge badge-bad' : 'badge badge-wait';
    const text = `${d.state}${d.attempts > 1 ? ` after ${d.attempts} attempts` : ''}`;
    const b = el('span', { class: cls, 'data-delivery': d.id }, text);
    if (d.last_error && d.state !== 'delivered') b.title = d.last_error;
    return b;
  }

  function num(v) { return Number(v || 0).toLocaleString('en-US', { maximumFractionDigits: 1 }); }
  function pct(v) { return `${Math.round(Number(v || 0) * 100)}%`; }

  function renderRules() {
    const body = $('al-rules').tBodies[0];
    body.replaceChildren();
    const last = new Map();
    for (const ev of state.events) if (!last.has(ev.rule_id)) last.set(ev.rule_id, ev);
    for (const r of state.rules) {
      const ev = last.get(r.id);
      body.append(el('tr', { 'data-rule-id': r.id },
        el('td', { class: 'num' }, String(r.id)),
        el('td', {}, ruleOn(r)),
        el('td', {}, r.kind + (r.query ? `: ${r.query}` : '')),
        el('td', {}, r.sensitivity),
        el('td', {}, r.channel),
        el('td', { class: 'opt' }, r.target),
        el('td', {}, ev ? bw.dateTime(ev.at) : '–', ' ', ev ? deliveryBadge(ev) : ''),
        el('td', { class: 'actions-col' },
          el('button', { class: 'btn btn-small', type: 'button', 'data-action': 'test', 'data-rule': r.id }, 'Test'),
          ' ',
          el('button', { class: 'btn btn-small btn-danger', type: 'button', 'data-action': 'delete', 'data-rule': r.id }, 'Delete'))));
    }
    $('al-rules-empty').hidden = state.rules.length > 0;
  }

  function renderRecent() {
    const list = $('al-recent');
    list.replaceChildren();
    for (const ev of state.events.slice(0, RECENT_SHOWN)) {
      const what = ev.test ? 'a test of the channel'
        : ev.kind === 'match' ? `${num(ev.observed)} matching comments`
        : ev.kind === 'term' ? `a rising term (${num(ev.observed)}, about ${num(ev.expected)} expected)`
        : ev.kind === 'sentiment' ? `negative share ${pct(ev.observed)} (usually ${pct(ev.expected)})`
          : `${num(ev.observed)} comments a minute, about ${num(ev.expected)} expected`;
      const item = el('li', { 'data-alert-id': ev.id },
        el('span', { class: 'ev-time' }, bw.dateTime(ev.at)), ' ',
        el('strong', {}, `${ev.test ? 'test ' : ''}${ev.kind}`), ` on ${ruleOn(ev)} (rule ${ev.rule_id}): ${what} `,
        deliveryBadge(ev));
      list.append(item);
    }
    $('al-recent-empty').hidden = state.events.length > 0;
  }

  async function refresh() {
    if (state.busy) return;
    state.busy = true;
    try {
      state.rules = await api('/v1/alerts');
      const lists = await Promise.all(state.rules.map((r) =>
        api(`/v1/alerts/${r.id}/events?n=${EVENTS_PER_RULE}`).catch(() => [])));
      state.events = lists.flat().sort((a, b) => (b.created_at || '').localeCompare(a.created_at || '') || b.id - a.id);
      renderRules();
      renderRecent();
      markChart();
    } catch (err) {
      if (err instanceof bw.AuthError) throw err;
    } finally {
      state.busy = false;
    }
  }

  // markChart draws a mark on the activity chart where a rule on the
  // selected crawler (or user) fired. trends.js names the chart's span in
  // the svg's data-from and data-to.
  function markChart() {
    const chart = document.querySelector('#volume-chart svg');
    if (!chart || !chart.dataset.from || !chart.dataset.to) return;
    chart.querySelectorAll('.alert-mark').forEach((m) => m.remove());
    const from = Date.parse(chart.dataset.from);
    const to = Date.parse(chart.dataset.to);
    const box = chart.viewBox.baseVal;
    if (!(to > from) || !box) return;
    const mine = state.events.filter((ev) => (view.selected !== null && ev.crawler_id === view.selected) ||
      (view.selected === null && view.selectedUser !== null && ev.user_id === view.selectedUser));
    for (const ev of mine) {
      const t = Date.parse(ev.at);
      if (t < from || t > to) continue;
      const x = ((t - from) / (to - from)) * box.width;
      const g = document.createElementNS(SVG_NS, 'g');
      g.setAttribute('class', 'alert-mark');
      const line = document.createElementNS(SVG_NS, 'line');
      for (const [k, v] of Object.entries({ x1: x, x2: x, y1: 0, y2: box.height })) line.setAttribute(k, String(v));
      const title = document.createElementNS(SVG_NS, 'title');
      title.textContent = `${ev.kind} alert at ${bw.dateTime(ev.at)}: ${num(ev.observed)} observed, ${num(ev.expected)} expected`;
      g.append(line, title);
      chart.append(g);
    }
  }

  // The form.

  function field(id) { return $(id).value.trim(); }

  function formBody() {
    const body = { kind: field('al-kind'), sensitivity: field('al-sensitivity') };
    const id = Number(field('al-on-id'));
    if (field('al-on') === 'user') body.user_id = id; else body.crawler_id = id;
    if (body.kind === 'match') body.query = field('al-query');
    const channel = field('al-channel');
    body[channel] = field('al-target');
    if (channel === 'webhook' && field('al-secret')) body.secret = field('al-secret');
    return body;
  }

  function setCheck(id, ok, text) {
    const p = $(id);
    p.textContent = text;
    p.className = ok === null ? 'check' : ok ? 'check check-ok' : 'check check-bad';
  }

  // targetProblem says what is wrong with the target as typed, or ''.
  function targetProblem() {
    const channel = field('al-channel');
    const v = field('al-target');
    if (!v) return `give the ${channel === 'email' ? 'address' : 'URL'} to send to`;
    if (channel === 'email') return /^[^@\s]+@[^@\s]+$/.test(v) ? '' : 'not an address like ops@example.com';
    try {
      const u = new URL(v);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'the URL must be http or https';
    } catch {
      return 'not a URL';
    }
    return '';
  }

  function syncForm() {
    const kind = field('al-kind');
    $('al-query-field').hidden = kind !== 'match';
    $('al-secret-field').hidden = field('al-channel') !== 'webhook';
    $('al-target-label').textContent = field('al-channel') === 'email' ? 'Address' : 'URL';
    clearTimeout(state.checkTimer);
    state.checkTimer = setTimeout(check, CHECK_DELAY);
  }

  // check validates the form as typed: the target here, the query and the
  // preview at the hub.
  async function check() {
    const seq = ++state.checkSeq;
    const problem = targetProblem();
    setCheck('al-target-status', problem ? false : true, problem || 'looks right; the hub checks where it resolves');
    let ok = !problem && Number(field('al-on-id')) > 0;
    if (field('al-kind') === 'match') {
      if (!field('al-query')) {
        setCheck('al-query-status', false, 'a match rule needs a query');
        ok = false;
      } else {
        try {
          const v = await api('/v1/queries/validate', { method: 'POST', body: { query: field('al-query') } });
          if (seq !== state.checkSeq) return;
          setCheck('al-query-status', true, `canonical: ${v.canonical}`);
        } catch (err) {
          if (seq !== state.checkSeq) return;
          setCheck('al-query-status', false, err.reason || String(err));
          ok = false;
        }
      }
    }
    if (field('al-kind') === 'spike' && Number(field('al-on-id')) > 0) {
      const body = { kind: 'spike', sensitivity: field('al-sensitivity') };
      if (field('al-on') === 'user') body.user_id = Number(field('al-on-id')); else body.crawler_id = Number(field('al-on-id'));
      try {
        const p = await api('/v1/alerts/preview', { method: 'POST', body });
        if (seq !== state.checkSeq) return;
        const n = p.alerts.length;
        setCheck('al-preview', null, `would have fired ${n} time${n === 1 ? '' : 's'} in the last 24 hours`);
      } catch (err) {
        if (seq !== state.checkSeq) return;
        setCheck('al-preview', false, err.reason || String(err));
        ok = false;
      }
    } else {
      setCheck('al-preview', null, '');
    }
    $('al-submit').disabled = !ok;
  }

  async function submit(ev) {
    ev.preventDefault();
    $('al-error').hidden = true;
    try {
      await api('/v1/alerts', { method: 'POST', body: formBody() });
      $('al-dialog').close();
      await refresh();
    } catch (err) {
      $('al-error').textContent = err.reason || String(err);
      $('al-error').hidden = false;
    }
  }

  async function act(ev) {
    const b = ev.target.closest('button[data-action]');
    if (!b) return;
    const id = Number(b.dataset.rule);
    b.disabled = true;
    try {
      if (b.dataset.action === 'test') {
        const res = await api(`/v1/alerts/${id}/test`, { method: 'POST', body: {} });
        const d = (res.deliveries || [])[0] || {};
        $('al-flash').textContent = d.state === 'delivered' ? `Test alert of rule ${id} delivered.`
          : `Test alert of rule ${id} ${d.state || 'not sent'}: ${d.last_error || ''}`;
      } else if (b.dataset.action === 'delete') {
        await api(`/v1/alerts/${id}`, { method: 'DELETE' });
        $('al-flash').textContent = `Rule ${id} deleted.`;
      }
      $('al-flash').hidden = false;
      await refresh();
    } catch (err) {
      $('al-flash').textContent = err.reason || String(err);
      $('al-flash').hidden = false;
    } finally {
      b.disabled = false;
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('al-add').addEventListener('click', () => {
      $('al-error').hidden = true;
      if (view.selected !== null) {
        $('al-on').value = 'crawler';
        $('al-on-id').value = String(view.selected);
      } else if (view.selectedUser !== null) {
        $('al-on').value = 'user';
        $('al-on-id').value = String(view.selectedUser);
      }
      syncForm();
      $('al-dialog').showModal();
    });
    for (const id of ['al-on', 'al-on-id', 'al-kind', 'al-query', 'al-sensitivity', 'al-channel', 'al-target', 'al-secret']) {
      $(id).addEventListener('input', syncForm);
      $(id).addEventListener('change', syncForm);
    }
    $('al-form').addEventListener('submit', submit);
    $('al-dialog').querySelector('[data-close]').addEventListener('click', () => $('al-dialog').close());
    $('al-rules').tBodies[0].addEventListener('click', act);
    new MutationObserver(markChart).observe($('volume-chart'), { childList: true });
    bw.onRefresh(refresh);
  });
})();
