// Black Widow hub dashboard: reads the hub's admin API with the operator's
// admin token and redraws every REFRESH_MS. Every piece of data goes into the
// page as text (textContent, text nodes, attributes): comment text comes
// from crawled sources and is hostile input.
'use strict';

(() => {
  // How often the page polls the admin API.
  const REFRESH_MS = 2000;
  // The hub's rate history moves once per 10-second step; no need to read
  // it more often.
  const HISTORY_REFRESH_MS = 10000;
  // A request slower than this counts as failed; the next refresh retries.
  const REQUEST_TIMEOUT_MS = 8000;
  // Crawlers the table shows a page: the page reads only these, and their
  // rate histories in one request, whatever the fleet's size.
  const CRAWLERS_PAGE = 50;
  const EVENTS_SHOWN = 60;
  const QUERY_CHARS = 120;
  // A crawler's error is shown up to this many characters (all of it in its
  // tooltip), wrapped within the state column.
  const ERROR_CHARS = 160;
  const SPARK_WIDTH = 120;
  const SPARK_HEIGHT = 26;
  const TOKEN_KEY = 'bw.adminToken';
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  const {
    el, bidi, shown, badge, stateClass, shortID, truncate, fmtNumber, fmtRate, ago, dateTime, clock, safeURL,
  } = window.bwText;

  const view = {
    mode: 'listen', // the view shown: 'listen' (the analyst's) or 'operate'
    // link is the state a shared address holds besides the selection and
    // the view: the window, the search and its range, the comparison.
    link: { window: '24h', q: '', since: '', until: '', cmp: '' },
    selected: null, // crawler id whose comments and trends are shown
    selectedUser: null, // user id whose trends are shown (no crawler selected then)
    histories: new Map(), // crawler id → {values: comments per minute, oldest first; step: seconds}
    historyAt: 0,
    historyBusy: false,
    crawlers: [],
    users: [],
    crawlerTotal: 0,
    // crawlerMatch narrows the crawler list to names, queries or an id
    // holding it (the Listen list's find box); '' lists every crawler.
    crawlerMatch: '',
    compare: { kind: 'crawler', ids: [] }, // what compare.js compares
    // The crawler table's page: the id it starts after, the starts of the
    // pages before it, its first row's position, whether a next page exists.
    crawlerPage: { after: 0, stack: [], offset: 0, hasNext: false },
    totalRate: 0, // comments per minute of all crawlers (history's total)
    timer: null,
    generation: 0, // bumps on every restart of the loop, so late answers are dropped
    session: 0, // bumps on sign-out, so late histories are dropped
  };

  // refreshHooks run after every successful refresh (trends.js reads the
  // selection's analytics in one).
  const refreshHooks = [];
  // selectHooks run when the selection changes (search.js starts a new
  // search in one).
  const selectHooks = [];
  // viewHooks run when the view changes.
  const viewHooks = [];

  class AuthError extends Error {}

  // APIError is a refusal of the hub: message is its reason as it gave it.
  class APIError extends Error {
    constructor(status, reason) {
      super(`${status} ${reason}`);
      this.status = status;
      this.reason = reason;
    }
  }

  // Token storage: sessionStorage only, so closing the tab forgets it.
  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled: the token lives until reload */ }
  }

  // api calls the admin API: a GET by default, or opts.method with
  // opts.body sent as JSON. A 204 answer is null.
  async function api(path, opts) {
    const method = (opts && opts.method) || 'GET';
    const headers = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    let body;
    if (opts && opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
    try {
      let resp;
      try {
        resp = await fetch(path, { method, headers, body, signal: ctl.signal, cache: 'no-store', credentials: 'omit' });
      } catch (e) {
        throw new Error(ctl.signal.aborted ? 'the hub did not answer in time' : 'the hub is unreachable');
      }
      if (resp.status === 401) throw new AuthError(token ? 'The hub refused this admin token.' : 'This hub needs its admin token.');
      if (!resp.ok) {
        let msg = resp.statusText;
        try {
          const body = await resp.json();
          if (body && typeof body.error === 'string') msg = body.error;
        } catch (e) { /* not JSON */ }
        throw new APIError(resp.status, msg);
      }
      if (resp.status === 204) return null;
      return await resp.json();
    } finally {
      clearTimeout(timer);
    }
  }

  // liveRate is a crawler's comments per minute as its spawn last reported
  // it; a crawler that runs nowhere has none.
  function liveRate(c) {
    return c.state === 'running' || c.state === 'degraded' || c.state === 'quota_wait' ? (c.rate_per_sec || 0) * 60 : 0;
  }

  function setStatus(kind, text) {
    const s = $('status');
    s.className = 'status status-' + kind;
    s.textContent = text;
  }

  // Screens.

  function showLogin(message) {
    $('main').hidden = true;
    $('views').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    const err = $('login-error');
    err.textContent = message || '';
    err.hidden = !message;
    setStatus('wait', 'signed out');
    $('token').focus();
  }

  function showMain() {
    $('login').hidden = true;
    $('main').hidden = false;
    $('views').hidden = false;
    $('signout').hidden = !getToken();
  }

  // Rendering.

  function renderCards(nodes, health, scaling) {
    $('card-nodes').textContent = fmtNumber(nodes.length);
    const failing = nodes.filter((n) => n.state !== 'ok').length;
    $('card-nodes-note').textContent = failing ? `${failing} failing` : 'all polled';
    $('card-desired').textContent = fmtNumber(scaling.desired_nodes);
    $('card-desired').classList.toggle('up', scaling.desired_nodes > nodes.length);
    $('card-desired-note').textContent =
      `${fmtNumber(scaling.subscribers)} subscribers at ${fmtNumber(scaling.target_subscribers_per_node)} a node`;
    const counts = health.crawlers || {};
    $('card-running').textContent = fmtNumber((counts.by_state || {}).running || 0);
    $('card-crawlers-note').textContent = `of ${fmtNumber(counts.total || 0)} crawlers`;
    $('card-rate').textContent = fmtRate(view.totalRate);
  }

  function renderNodes(nodes) {
    const rows = nodes.map((n) => el('tr', { dataset: { nodeId: n.id } },
      el('td', { class: 'mono', title: n.id }, shortID(n.id)),
      el('td', { class: 'mono' }, n.url),
      el('td', {}, badge(n.state, stateClass(n.state))),
      el('td', { class: 'num' }, fmtNumber(n.subscribers)),
      el('td', { class: 'num opt' }, fmtNumber((n.data_sources || []).length)),
      el('td', { title: dateTime(n.last_poll) }, ago(n.last_poll)),
      el('td', { class: 'opt' }, n.store ? badge(n.store, stateClass(n.store)) : el('span', { class: 'dim' }, '–')),
      el('td', { class: 'opt' }, (n.sources || []).join(', ')),
    ));
    $('nodes').tBodies[0].replaceChildren(...rows);
    $('nodes-empty').hidden = nodes.length > 0;
  }

  function renderSources(nodes) {
    const rows = [];
    for (const n of nodes) {
      const sources = (n.data_sources || []).slice().sort((a, b) => a.key.localeCompare(b.key));
      for (const ds of sources) {
        rows.push(el('tr', { dataset: { nodeId: n.id } },
          el('td', { class: 'mono', title: n.id }, shortID(n.id)),
          el('td', {}, ds.source || '–'),
          el('td', { class: 'wrap mono' }, ds.key),
          el('td', { class: 'num' }, fmtNumber(ds.subscribers)),
          el('td', { class: 'wrap' }, ds.error ? errorText(ds.error) : ''),
        ));
      }
    }
    $('sources').tBodies[0].replaceChildren(...rows);
    $('sources-empty').hidden = rows.length > 0;
  }

  function usageCell(c) {
    const box = el('div', { class: 'usage' });
    // A crawler without a limit of its own is capped by its user's: show
    // that one, not "no limit".
    const owner = c.user_id !== undefined && !(c.comment_limit > 0) ? view.users.find((u) => u.id === c.user_id) : null;
    if (owner && owner.comment_limit > 0) {
      const frac = Math.min(1, owner.usage / owner.comment_limit);
      box.append(el('span', { class: 'usage-text', title: `user ${owner.id} has used ${fmtNumber(owner.usage)} of its ${fmtNumber(owner.comment_limit)}` },
        fmtNumber(c.usage), el('span', { class: 'dim' }, ` · user's limit ${fmtNumber(owner.comment_limit)} (${Math.round(frac * 100)}% used)`)));
      const fill = el('div', { class: 'bar-fill' + (frac >= 1 ? ' full' : frac >= 0.8 ? ' high' : '') });
      fill.style.width = (frac * 100).toFixed(1) + '%';
      box.append(el('div', { class: 'bar', role: 'meter', 'aria-label': `usage of user ${owner.id}'s comment limit`, 'aria-valuemin': 0,
        'aria-valuemax': owner.comment_limit, 'aria-valuenow': owner.usage }, fill));
      return box;
    }
    if (c.comment_limit > 0) {
      const frac = Math.min(1, c.usage / c.comment_limit);
      const pct = Math.round(frac * 100);
      box.append(el('span', { class: 'usage-text' }, `${fmtNumber(c.usage)} / ${fmtNumber(c.comment_limit)}`, el('span', { class: 'dim' }, ` · ${pct}%`)));
      const fill = el('div', { class: 'bar-fill' + (frac >= 1 ? ' full' : frac >= 0.8 ? ' high' : '') });
      fill.style.width = (frac * 100).toFixed(1) + '%';
      box.append(el('div', { class: 'bar', role: 'meter', 'aria-label': 'usage of the comment limit', 'aria-valuemin': 0,
        'aria-valuemax': c.comment_limit, 'aria-valuenow': c.usage }, fill));
    } else {
      box.append(el('span', { class: 'usage-text' }, fmtNumber(c.usage), el('span', { class: 'dim' }, ' · no limit')));
      box.append(el('div', { class: 'bar' }));
    }
    return box;
  }

  function sparkline(hist) {
    const values = hist ? hist.values : [];
    const svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('width', SPARK_WIDTH);
    svg.setAttribute('height', SPARK_HEIGHT);
    svg.setAttribute('viewBox', `0 0 ${SPARK_WIDTH} ${SPARK_HEIGHT}`);
    svg.setAttribute('role', 'img');
    const peak = values.length ? Math.max(...values) : 0;
    const title = document.createElementNS(SVG_NS, 'title');
    title.textContent = values.length
      ? `comments per minute over the last ${Math.round(values.length * hist.step / 60)} minutes; peak ${fmtRate(peak)}`
      : 'no history yet';
    svg.append(title);
    if (values.length < 2) return svg;
    const top = Math.max(peak, 1);
    const step = SPARK_WIDTH / (values.length - 1);
    const pts = values.map((v, i) => {
      const x = (i * step).toFixed(1);
      const y = (SPARK_HEIGHT - 2 - (v / top) * (SPARK_HEIGHT - 4)).toFixed(1);
      return `${x},${y}`;
    });
    const area = document.createElementNS(SVG_NS, 'polygon');
    area.setAttribute('points', `0,${SPARK_HEIGHT} ${pts.join(' ')} ${SPARK_WIDTH},${SPARK_HEIGHT}`);
    const line = document.createElementNS(SVG_NS, 'polyline');
    line.setAttribute('points', pts.join(' '));
    svg.append(area, line);
    return svg;
  }

  function renderCrawlers(crawlers) {
    const focusedID = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.selectCrawler : undefined;
    const rows = crawlers.map((c) => {
      const id = String(c.id);
      const query = (c.query || []).join(', ');
      const keywords = (c.keywords || []).length ? ` [${c.keywords.join(', ')}]` : '';
      const state = el('td', { class: 'state-cell' }, badge(c.state, stateClass(c.state)));
      const trouble = sourceTrouble(c);
      if (trouble) state.append(el('div', { class: 'trouble' }, badge(trouble, 's-failed')));
      if (c.error) state.append(errorText(c.error));
      const rate = el('div', { class: 'rate' },
        sparkline(view.histories.get(c.id)),
        el('span', { class: 'rate-text', title: 'live rate reported by the spawn' }, fmtRate(liveRate(c))));
      const tr = el('tr', { dataset: { crawlerId: id }, class: view.selected === c.id ? 'selected' : null, 'aria-selected': view.selected === c.id ? 'true' : 'false' },
        el('td', { class: 'crawler-cell' }, el('span', { class: 'id-cell' },
          el('button', { type: 'button', class: 'row-btn', dataset: { selectCrawler: id }, 'aria-label': `open crawler ${id}${c.name ? ' (' + c.name + ')' : ''} in Listen` }, id)),
        c.name ? el('div', { class: 'name-cell' }, shown(c.name)) : null),
        el('td', { class: 'num opt' }, c.user_id),
        el('td', {}, c.source),
        el('td', { class: 'opt wrap mono query-cell', title: query + keywords }, bidi(truncate(query, QUERY_CHARS)), keywords ? el('span', { class: 'dim' }, bidi(truncate(keywords, 40))) : null),
        state,
        el('td', { class: 'mono', title: c.node || '' }, c.node ? shortID(c.node) : el('span', { class: 'dim' }, '–')),
        el('td', {}, usageCell(c)),
        el('td', {}, rate),
        el('td', { class: 'actions-cell' }, el('div', { class: 'actions' }, ...crawlerActions(c))),
      );
      return tr;
    });
    $('crawlers').tBodies[0].replaceChildren(...rows);
    $('crawlers-empty').hidden = crawlers.length > 0;
    if (focusedID) {
      const b = $('crawlers').querySelector(`button[data-select-crawler="${CSS.escape(focusedID)}"]`);
      if (b) b.focus();
    }
  }

  // sourceTrouble names, for the list, why a crawler's source cannot be
  // reached when its spawn reports an error: the name resolution, a
  // refused connection, or the HTTP status the source answered with. A
  // hint for the eye only; the whole error stands beside it.
  function sourceTrouble(c) {
    if (!c.error || c.state === 'disabled' || c.state === 'limit_reached') return '';
    const e = c.error;
    if (/no such host|server misbehaving|name resolution|lookup [^ ]+ on /i.test(e)) return 'source unreachable: DNS';
    if (/connection refused/i.test(e)) return 'source unreachable: refused';
    if (/i\/o timeout|deadline exceeded|timed out/i.test(e)) return 'source unreachable: timeout';
    const m = /\b(?:status|HTTP)\s*:?\s*([45][0-9]{2})\b/i.exec(e) || /\b([45][0-9]{2}) (?:[A-Z][a-z]+ ?)+/.exec(e);
    if (m) return `source answered ${m[1]}`;
    return '';
  }

  // errorText shows an error whole: the cause is at its end, so a long
  // one keeps its end in view and folds its middle, with the full text a
  // click away.
  function errorText(err) {
    const chars = Array.from(err);
    if (chars.length <= ERROR_CHARS) return el('div', { class: 'dim cell-error', title: err }, bidi(err));
    const short = chars.slice(0, 40).join('') + ' … ' + chars.slice(-(ERROR_CHARS - 40)).join('');
    return el('details', { class: 'dim cell-error', title: err }, el('summary', {}, bidi(short)), el('div', { class: 'cell-error-full' }, bidi(err)));
  }

  // crawlerLabel is what a crawler is called on the page: its name, else
  // "crawler ID".
  function crawlerLabel(c) {
    return c && c.name ? c.name : `crawler ${c ? c.id : ''}`;
  }

  // selectionLabel names the selection as the page shows it: a crawler by
  // its name when the page has it, a user by name.
  function selectionLabel(kind, id) {
    if (kind === 'crawler') {
      const c = view.crawlers.find((x) => x.id === id);
      return c && c.name ? c.name : `crawler ${id}`;
    }
    const u = view.users.find((x) => x.id === id);
    return u ? `${u.name} (user ${id})` : `user ${id}`;
  }

  // compareBox ticks a crawler or a user for the comparison (compare.js
  // reads view.compare).
  function compareBox(kind, id) {
    const on = view.compare.kind === kind && view.compare.ids.includes(id);
    return el('input', { type: 'checkbox', class: 'cmp-box', dataset: { compare: kind, id: String(id) }, checked: on,
      'aria-label': `compare ${kind} ${id}`, title: `compare ${kind} ${id}` });
  }

  // crawlerActions are a crawler row's management buttons; manage.js
  // handles their clicks.
  function crawlerActions(c) {
    const id = String(c.id);
    const btn = (action, label, cls) => el('button', { type: 'button', class: 'btn btn-small ' + (cls || 'btn-plain'),
      dataset: { action, id }, 'aria-label': `${label} crawler ${id}` }, label);
    return [
      btn('edit-crawler', 'Edit'),
      c.enabled ? btn('disable-crawler', 'Disable') : btn('enable-crawler', 'Enable'),
      btn('delete-crawler', 'Delete', 'btn-plain danger'),
    ];
  }

  function renderUsers(users) {
    const rows = users.map((u) => el('tr', { dataset: { userId: String(u.id) }, class: view.selectedUser === u.id ? 'selected' : null,
      'aria-selected': view.selectedUser === u.id ? 'true' : 'false' },
      el('td', { class: 'num' }, el('span', { class: 'id-cell' },
        el('button', { type: 'button', class: 'row-btn', dataset: { selectUser: String(u.id) },
          'aria-label': `open user ${u.id} in Listen` }, u.id))),
      el('td', { class: 'wrap' }, shown(u.name)),
      el('td', {}, badge(u.state, stateClass(u.state))),
      el('td', {}, usageCell(u)),
      el('td', { class: 'num opt' }, fmtNumber(u.crawlers || 0)),
      el('td', { class: 'opt', title: dateTime(u.created_at) }, dateTime(u.created_at).slice(0, 10)),
      el('td', { class: 'actions-cell' }, el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'btn btn-small btn-plain', dataset: { action: 'limit-user', id: String(u.id) },
          'aria-label': `Change limit of user ${u.id}` }, 'Change limit'),
        el('button', { type: 'button', class: 'btn btn-small btn-plain', dataset: { action: 'add-crawler-for', id: String(u.id) },
          'aria-label': `Add crawler for user ${u.id}` }, 'Add crawler'),
        el('button', { type: 'button', class: 'btn btn-small btn-plain danger', dataset: { action: 'delete-user', id: String(u.id) },
          'aria-label': `Delete user ${u.id}` }, 'Delete'))),
    ));
    $('users').tBodies[0].replaceChildren(...rows);
    $('users-empty').hidden = users.length > 0;
  }

  function eventClass(kind) {
    const known = ['node_joined', 'node_lost', 'reload_hard', 'reload_soft', 'limit_reached', 'node_detached'];
    return known.includes(kind) ? 'k-' + kind : 'k-other';
  }

  function renderEvents(events) {
    const items = (events || []).slice(-EVENTS_SHOWN).reverse().map((ev) => el('li', {},
      el('time', { class: 'event-time', datetime: ev.time, title: dateTime(ev.time) }, clock(ev.time)),
      badge((ev.kind || '').replace(/_/g, ' '), eventClass(ev.kind)),
      el('span', { class: 'event-msg' }, bidi(ev.message))));
    $('events').replaceChildren(...items);
    $('events-empty').hidden = items.length > 0;
  }

  // Data.

  // refreshHistories reads, in one request, the rate history of the
  // crawlers the table shows and the rate of all crawlers together, and
  // redraws when done. It runs beside the refresh loop so a slow history
  // never delays the live numbers.
  async function refreshHistories(crawlers) {
    const session = view.session;
    if (view.historyBusy) return;
    view.historyBusy = true;
    view.historyAt = Date.now();
    try {
      const ids = crawlers.map((c) => c.id);
      const h = await api(`/v1/crawlers/history${ids.length ? '?ids=' + ids.join(',') : ''}`);
      if (session !== view.session) return;
      const next = new Map();
      for (const one of h.histories || []) next.set(one.crawler_id, { values: one.comments_per_minute || [], step: one.step_seconds || 10 });
      view.histories = next;
      const total = (h.total && h.total.comments_per_minute) || [];
      view.totalRate = total.length ? total[total.length - 1] : 0;
      $('card-rate').textContent = fmtRate(view.totalRate);
      renderCrawlers(view.crawlers);
    } catch (e) {
      // An AuthError reaches the main loop on its next round.
    } finally {
      view.historyBusy = false;
    }
  }

  // renderPager says which crawlers the table shows and offers the pages
  // around them.
  function renderPager(crawlers, total) {
    const p = view.crawlerPage;
    const first = p.offset + (crawlers.length ? 1 : 0);
    $('crawlers-page').textContent = `crawlers ${fmtNumber(first)}–${fmtNumber(p.offset + crawlers.length)} of ${fmtNumber(total)}`;
    $('crawlers-prev').disabled = p.stack.length === 0;
    $('crawlers-next').disabled = !p.hasNext;
    $('crawlers-pager').hidden = p.stack.length === 0 && !p.hasNext;
  }

  async function refresh() {
    const generation = view.generation;
    try {
      const page = view.crawlerPage;
      const [nodes, listed, events, scaling, users, health] = await Promise.all([
        api('/v1/nodes'), api(`/v1/crawlers?after=${page.after}&limit=${CRAWLERS_PAGE + 1}${view.crawlerMatch ? '&match=' + encodeURIComponent(view.crawlerMatch) : ''}`), api('/v1/events'),
        api('/v1/scaling'), api('/v1/users'), api('/v1/health'),
      ]);
      if (generation !== view.generation) return;
      if (listed.length === 0 && page.stack.length > 0) {
        // The crawlers of this page are gone: back to the first page.
        Object.assign(page, { after: 0, stack: [], offset: 0 });
        refreshNow();
        return;
      }
      page.hasNext = listed.length > CRAWLERS_PAGE;
      const crawlers = listed.slice(0, CRAWLERS_PAGE);
      // A selected crawler that would be on this page and is not was
      // deleted meanwhile.
      const selected = view.selected;
      const last = crawlers.length ? crawlers[crawlers.length - 1].id : page.after;
      if (selected !== null && !view.crawlerMatch && selected > page.after && (!page.hasNext || selected <= last) && !crawlers.some((c) => c.id === selected)) {
        view.selected = null;
        saveLink();
        for (const hook of selectHooks) hook();
      }
      if (view.selectedUser !== null && !users.some((u) => u.id === view.selectedUser)) {
        view.selectedUser = null;
        saveLink();
        for (const hook of selectHooks) hook();
      }
      view.crawlers = crawlers;
      view.users = users;
      view.crawlerTotal = health.crawlers.total;
      showMain();
      renderCards(nodes, health, scaling);
      renderNodes(nodes);
      renderSources(nodes);
      renderCrawlers(crawlers);
      renderPager(crawlers, health.crawlers.total);
      renderUsers(users);
      renderEvents(events);
      for (const hook of refreshHooks) hook();
      setStatus('ok', 'live · ' + clock(new Date()));
      const newCrawler = crawlers.some((c) => !view.histories.has(c.id));
      if (newCrawler || Date.now() - view.historyAt >= HISTORY_REFRESH_MS) refreshHistories(crawlers);
    } catch (e) {
      if (generation !== view.generation) return;
      if (e instanceof AuthError) {
        stop();
        view.session++;
        setToken('');
        showLogin(e.message);
        return;
      }
      setStatus('error', 'stale · ' + e.message + ' · retrying');
    }
    if (generation === view.generation) schedule();
  }

  function schedule() {
    clearTimeout(view.timer);
    view.timer = setTimeout(refresh, REFRESH_MS);
  }

  function stop() {
    clearTimeout(view.timer);
    view.timer = null;
    view.generation++;
  }

  function start() {
    stop();
    setStatus('wait', 'connecting…');
    refresh();
  }

  // The page's state is kept in the address, so a link opens the page as
  // it was shared: #view=listen&crawler=ID (or user=ID)&window=1h&q=…&
  // since=…&until=…&cmp=crawler:1,2,3; #view=operate. An old #crawler=ID
  // still opens that crawler.
  const ID_RE = /^[1-9][0-9]{0,17}$/;

  function linkFromHash() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ''));
    const out = { mode: p.get('view') === 'operate' ? 'operate' : 'listen', sel: null, link: {} };
    for (const kind of ['crawler', 'user']) {
      const v = p.get(kind);
      if (v && ID_RE.test(v)) out.sel = { kind, id: Number(v) };
    }
    const win = p.get('window');
    if (win === '1h' || win === '24h' || win === '7d') out.link.window = win;
    for (const k of ['q', 'since', 'until']) if (p.has(k)) out.link[k] = (p.get(k) || '').slice(0, 4096);
    const cmp = p.get('cmp');
    if (cmp && /^(crawler|user):[0-9]+(,[0-9]+){0,9}$/.test(cmp)) out.link.cmp = cmp;
    return out;
  }

  function selectionFromHash() {
    return linkFromHash().sel;
  }

  // linkHash is the address of what the page shows now.
  function linkHash() {
    const p = new URLSearchParams();
    p.set('view', view.mode);
    if (view.selected !== null) p.set('crawler', String(view.selected));
    else if (view.selectedUser !== null) p.set('user', String(view.selectedUser));
    if (view.mode === 'listen') {
      const l = view.link;
      if (l.window && l.window !== '24h') p.set('window', l.window);
      if (l.q) p.set('q', l.q);
      if (l.since) p.set('since', l.since);
      if (l.until) p.set('until', l.until);
      if (view.compare.ids.length) p.set('cmp', `${view.compare.kind}:${view.compare.ids.join(',')}`);
    }
    return '#' + p.toString();
  }

  // saveLink writes the page's state into the address, without a new
  // history entry.
  function saveLink() {
    const h = linkHash();
    if (location.hash !== h) history.replaceState(null, '', h);
  }

  // showView shows one of the two views.
  function showView(mode) {
    view.mode = mode === 'operate' ? 'operate' : 'listen';
    $('view-listen').hidden = view.mode !== 'listen';
    $('view-operate').hidden = view.mode !== 'operate';
    for (const a of document.querySelectorAll('.view-tab')) {
      if (a.dataset.view === view.mode) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
      a.href = '#view=' + a.dataset.view;
    }
    document.title = view.mode === 'listen' ? 'Listen · Black Widow' : 'Operate · Black Widow';
    saveLink();
    for (const hook of viewHooks) hook(view.mode);
  }

  function markSelected(table, key, id) {
    for (const tr of $(table).tBodies[0].rows) {
      const on = id !== null && tr.dataset[key] === String(id);
      tr.classList.toggle('selected', on);
      tr.setAttribute('aria-selected', on ? 'true' : 'false');
    }
  }

  // select shows a crawler's comments and trends, or a user's trends: one
  // selection at a time.
  function select(kind, id) {
    const crawler = kind === 'crawler' ? id : null;
    const user = kind === 'user' ? id : null;
    if (view.selected === crawler && view.selectedUser === user) return;
    view.selected = crawler;
    view.selectedUser = user;
    saveLink();
    markSelected('crawlers', 'crawlerId', crawler);
    markSelected('users', 'userId', user);
    for (const hook of selectHooks) hook();
    // Fetch its data now rather than at the next tick.
    stop();
    refresh();
  }

  // pageCrawlers moves the crawler page (the Operate table's and the
  // Listen list's, one and the same) forward or back.
  function pageCrawlers(dir) {
    const p = view.crawlerPage;
    if (dir > 0) {
      if (!p.hasNext || view.crawlers.length === 0) return;
      p.stack.push(p.after);
      p.offset += view.crawlers.length;
      p.after = view.crawlers[view.crawlers.length - 1].id;
    } else {
      if (p.stack.length === 0) return;
      p.after = p.stack.pop();
      p.offset = Math.max(0, p.offset - CRAWLERS_PAGE);
    }
    refreshNow();
  }

  // refreshNow redraws at once, e.g. after a change made from the page.
  function refreshNow() {
    stop();
    refresh();
  }

  // The management part of the page (manage.js) uses these.
  window.bwDashboard = Object.freeze({
    api, el, $, view, refreshNow, AuthError, APIError, SVG_NS, fmtNumber, dateTime, clock, bidi, shown, safeURL, getToken,
    badge, stateClass, sourceTrouble, crawlerLabel, selectionLabel, saveLink, linkHash, truncate, compareBox,
    onRefresh: (fn) => { refreshHooks.push(fn); },
    onSelect: (fn) => { selectHooks.push(fn); },
    onView: (fn) => { viewHooks.push(fn); },
    select: (kind, id) => select(kind, id),
    showView: (mode) => showView(mode),
    // pageCrawlers moves the crawler page: +1 the next, -1 the previous.
    pageCrawlers: (dir) => pageCrawlers(dir),
    // findCrawlers narrows the crawler list and goes back to its first page.
    findCrawlers: (text) => {
      view.crawlerMatch = text;
      Object.assign(view.crawlerPage, { after: 0, stack: [], offset: 0 });
      refreshNow();
    },
    CRAWLERS_PAGE,
  });

  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const input = $('token');
      const t = input.value.trim();
      input.value = '';
      if (!t) {
        showLogin('Enter the admin token.');
        return;
      }
      setToken(t);
      $('login-error').hidden = true;
      start();
    });
    $('signout').addEventListener('click', () => {
      stop();
      view.session++;
      setToken('');
      view.histories = new Map();
      view.selected = null;
      view.selectedUser = null;
      history.replaceState(null, '', location.pathname);
      for (const hook of selectHooks) hook();
      showLogin('');
    });
    const initial = linkFromHash();
    if (initial.sel) {
      if (initial.sel.kind === 'crawler') view.selected = initial.sel.id; else view.selectedUser = initial.sel.id;
    }
    Object.assign(view.link, initial.link);
    if (view.link.cmp) {
      const [kind, ids] = view.link.cmp.split(':');
      view.compare.kind = kind;
      view.compare.ids = ids.split(',').map(Number).filter((n) => n > 0);
    }
    showView(initial.mode);
    // An address pasted or followed in this tab opens what it holds, as a
    // new load would (the token stays with the tab).
    window.addEventListener('hashchange', () => {
      if (location.hash !== linkHash()) location.reload();
    });
    for (const a of document.querySelectorAll('.view-tab')) {
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        showView(a.dataset.view);
      });
    }
    $('crawlers-next').addEventListener('click', () => pageCrawlers(1));
    $('crawlers-prev').addEventListener('click', () => pageCrawlers(-1));
    // A crawler or user chosen in Operate opens in Listen.
    $('crawlers').tBodies[0].addEventListener('click', (ev) => {
      if (ev.target.closest('a, [data-action], input, details')) return;
      const tr = ev.target.closest('tr[data-crawler-id]');
      if (!tr) return;
      showView('listen');
      select('crawler', Number(tr.dataset.crawlerId));
    });
    $('users').tBodies[0].addEventListener('click', (ev) => {
      if (ev.target.closest('a, [data-action], input')) return;
      const tr = ev.target.closest('tr[data-user-id]');
      if (!tr) return;
      showView('listen');
      select('user', Number(tr.dataset.userId));
    });
    start();
  });
})();
