// Black Widow hub dashboard, Listen: the analyst's view. The list of
// searches (crawlers by name, and customers) to pick one from, tick
// several to compare, or find one among thousands by name, query or id
// (GET /v1/crawlers?match=); the picked one's name, which can be changed,
// its cards, its sentiment over time (from its activity steps), its top
// authors (GET …/authors, exact) and its sources and languages
// (GET …/breakdown), all over the window chosen. Names, authors and
// queries are outside text: they go into the page as text, isolated.
'use strict';

(() => {
  // AUTHORS_SHOWN is how many authors the table lists.
  const AUTHORS_SHOWN = 15;
  // FIND_DELAY_MS is how long typing in the find box pauses before the
  // list is read again.
  const FIND_DELAY_MS = 300;
  const CHART_WIDTH = 640;
  const CHART_HEIGHT = 150;
  const CHART_AXIS = 18;
  const CHART_TOP = 14;
  // SENTIMENTS are the labels of a comment's sentiment, stacked in this
  // order from the bottom.
  const SENTIMENTS = ['negative', 'neutral', 'positive'];
  const SPANS = { '1h': 'the last hour', '24h': 'the last 24 hours', '7d': 'the last 7 days' };

  const bw = window.bwDashboard;
  const { api, el, $, view, SVG_NS } = bw;

  const state = {
    seq: 0, // bumps on every read of the picked one's voices
    key: '', // what the authors and breakdown on the page are of
    crawler: null, // the picked crawler as the hub last described it
    findTimer: null,
  };

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function selection() {
    if (view.selected !== null) return { kind: 'crawler', id: view.selected };
    if (view.selectedUser !== null) return { kind: 'user', id: view.selectedUser };
    return null;
  }

  function pct(x) { return (x * 100).toFixed(x > 0 && x < 0.1 ? 1 : 0) + '%'; }

  // The list of searches.

  function renderPicker() {
    const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest('#searches [data-listen-crawler], #listen-users [data-listen-user]') : null;
    const focusKey = focused ? (focused.dataset.listenCrawler ? 'c' + focused.dataset.listenCrawler : 'u' + focused.dataset.listenUser) : '';
    const items = view.crawlers.map((c) => {
      const on = view.selected === c.id;
      const trouble = bw.sourceTrouble(c);
      const label = c.name ? bw.shown(c.name) : el('span', { class: 'dim' }, bw.bidi(bw.truncate((c.query || []).join(', '), 60)));
      return el('li', { class: on ? 'picked' : null, dataset: { crawlerId: String(c.id) } },
        bw.compareBox('crawler', c.id),
        el('button', { type: 'button', class: 'pick-btn', dataset: { listenCrawler: String(c.id) }, 'aria-current': on ? 'true' : null },
        el('span', { class: 'pick-name' }, label),
        el('span', { class: 'pick-meta' }, `#${c.id} · ${c.source} · `, bw.badge(c.state, bw.stateClass(c.state)),
          trouble ? bw.badge(trouble, 's-failed') : null)));
    });
    $('searches').replaceChildren(...items);
    $('searches-empty').hidden = items.length > 0;
    $('searches-empty').textContent = view.crawlerMatch ? `No search matches "${view.crawlerMatch}".` : 'No search yet. Start one with New search.';
    const p = view.crawlerPage;
    const first = p.offset + (view.crawlers.length ? 1 : 0);
    $('searches-page').textContent = view.crawlerMatch
      ? `${bw.fmtNumber(first)}–${bw.fmtNumber(p.offset + view.crawlers.length)} matching`
      : `${bw.fmtNumber(first)}–${bw.fmtNumber(p.offset + view.crawlers.length)} of ${bw.fmtNumber(view.crawlerTotal)}`;
    $('searches-prev').disabled = p.stack.length === 0;
    $('searches-next').disabled = !p.hasNext;
    const users = view.users.map((u) => {
      const on = view.selectedUser === u.id;
      return el('li', { class: on ? 'picked' : null },
        bw.compareBox('user', u.id),
        el('button', { type: 'button', class: 'pick-btn', dataset: { listenUser: String(u.id) }, 'aria-current': on ? 'true' : null },
        el('span', { class: 'pick-name' }, bw.shown(u.name)),
        el('span', { class: 'pick-meta' }, `user ${u.id} · ${bw.fmtNumber(u.crawlers || 0)} searches`)));
    });
    $('listen-users').replaceChildren(...users);
    if (focusKey) {
      const sel = focusKey[0] === 'c' ? `#searches [data-listen-crawler="${focusKey.slice(1)}"]` : `#listen-users [data-listen-user="${focusKey.slice(1)}"]`;
      const b = document.querySelector(sel);
      if (b) b.focus();
    }
  }

  // The picked one's head: name, what it listens to, cards.

  async function renderHead() {
    const sel = selection();
    $('ws-rename').hidden = !sel || sel.kind !== 'crawler';
    $('ws-link').hidden = !sel;
    if (!sel) {
      $('ws-title').textContent = 'Pick a search on the left';
      $('ws-meta').textContent = 'A search is a crawler: what it listens to, where, and what it found.';
      $('ws-cards').hidden = true;
      state.crawler = null;
      return;
    }
    if (sel.kind === 'user') {
      const u = view.users.find((x) => x.id === sel.id);
      $('ws-title').replaceChildren(u ? bw.shown(u.name) : `user ${sel.id}`);
      $('ws-meta').textContent = `Customer · user ${sel.id} · the mentions of all its searches`;
      state.crawler = null;
      return;
    }
    let c = view.crawlers.find((x) => x.id === sel.id);
    if (!c) {
      try {
        c = await api(`/v1/crawlers/${encodeURIComponent(sel.id)}`);
      } catch (e) {
        if (e instanceof bw.AuthError) return;
        $('ws-title').textContent = `crawler ${sel.id}`;
        $('ws-meta').textContent = e instanceof bw.APIError ? e.reason : e.message;
        return;
      }
    }
    const now = selection();
    if (!now || now.kind !== 'crawler' || now.id !== c.id) return;
    state.crawler = c;
    $('ws-title').replaceChildren(c.name ? bw.shown(c.name) : `crawler ${c.id}`);
    const meta = [`${c.source} · `, el('code', {}, bw.bidi(bw.truncate(c.query_canonical || (c.query || []).join(', '), 200))), ' · ',
      bw.badge(c.state, bw.stateClass(c.state)), ` · crawler ${c.id}`];
    const trouble = bw.sourceTrouble(c);
    if (trouble) meta.push(' ', bw.badge(trouble, 's-failed'));
    $('ws-meta').replaceChildren(...meta);
  }

  // Sentiment over time, stacked, from the activity steps trends.js read.

  function sentimentOf(step) {
    return SENTIMENTS.map((k) => (typeof step[k] === 'number' ? step[k] : null));
  }

  function renderSentiment(steps, win) {
    const box = $('sentiment-chart');
    const empty = $('sentiment-empty');
    const scored = steps.filter((s) => sentimentOf(s).some((v) => v !== null));
    const totals = { positive: 0, neutral: 0, negative: 0 };
    for (const s of scored) for (const k of SENTIMENTS) totals[k] += s[k] || 0;
    const sum = totals.positive + totals.neutral + totals.negative;
    if (scored.length === 0 || sum === 0) {
      box.replaceChildren();
      empty.textContent = scored.length === 0
        ? 'No sentiment yet: mentions carry one once the hub scores them (in the languages it scores).'
        : `No scored mention in ${SPANS[win]}.`;
      empty.hidden = false;
      $('sentiment-summary').textContent = '';
      $('ws-sentiment').textContent = '–';
      $('ws-sentiment-note').textContent = scored.length === 0 ? 'no sentiment yet' : 'no scored mention';
      return;
    }
    empty.hidden = true;
    const net = (totals.positive - totals.negative) / sum;
    $('ws-sentiment').textContent = (net > 0 ? '+' : '') + Math.round(net * 100);
    $('ws-sentiment-note').textContent = `${pct(totals.positive / sum)} positive · ${pct(totals.negative / sum)} negative`;
    $('sentiment-summary').textContent = `${bw.fmtNumber(sum)} scored: ${pct(totals.positive / sum)} positive, ${pct(totals.neutral / sum)} neutral, ${pct(totals.negative / sum)} negative`;
    const peak = Math.max(1, ...steps.map((s) => SENTIMENTS.reduce((n, k) => n + (s[k] || 0), 0)));
    const plotH = CHART_HEIGHT - CHART_AXIS - CHART_TOP;
    const slot = CHART_WIDTH / steps.length;
    const gap = slot > 6 ? 1.5 : slot > 3 ? 0.5 : 0;
    const chart = svg('svg', { class: 'volume-svg sentiment-svg', viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, role: 'img',
      'aria-label': `mentions by sentiment over ${SPANS[win]}: ${totals.positive} positive, ${totals.neutral} neutral, ${totals.negative} negative` });
    chart.append(svg('line', { class: 'vol-base', x1: 0, x2: CHART_WIDTH, y1: CHART_TOP + plotH, y2: CHART_TOP + plotH }));
    chart.append(svg('text', { class: 'vol-label', x: 2, y: CHART_TOP - 3 }, `${bw.fmtNumber(peak)} per step`));
    steps.forEach((s, i) => {
      let base = CHART_TOP + plotH;
      for (const k of SENTIMENTS) {
        const v = s[k] || 0;
        if (!v) continue;
        const h = (v / peak) * plotH;
        base -= h;
        const r = svg('rect', { class: 'sent-' + k, x: (i * slot + gap / 2).toFixed(2), y: base.toFixed(2), width: Math.max(0.5, slot - gap).toFixed(2),
          height: h.toFixed(2), 'data-at': s.at, 'data-sentiment': k, 'data-count': v });
        r.append(svg('title', {}, `${bw.dateTime(s.at)}: ${bw.fmtNumber(v)} ${k}`));
        chart.append(r);
      }
    });
    box.replaceChildren(chart);
  }

  function onActivity(ev) {
    const { sel, win, steps } = ev.detail;
    const now = selection();
    if (!now || now.kind !== sel.kind || now.id !== sel.id) return;
    const total = steps.reduce((n, s) => n + (s.comments || 0), 0);
    $('ws-cards').hidden = false;
    $('ws-mentions').textContent = bw.fmtNumber(total);
    $('ws-mentions-note').textContent = `in ${SPANS[win]}`;
    renderSentiment(steps, win);
  }

  // Top authors and breakdowns.

  function renderAuthors(out) {
    const rows = out.authors.map((a, i) => el('tr', { dataset: { author: a.author, comments: String(a.comments) } },
      el('td', { class: 'num' }, String(i + 1)),
      el('td', { class: 'wrap' }, el('span', { class: 'comment-author', title: a.author_id || '' }, bw.shown(a.author)),
        a.author_id && a.author_id !== a.author ? el('div', { class: 'dim mono author-id' }, bw.shown(bw.truncate(a.author_id, 60))) : null),
      el('td', { class: 'num' }, bw.fmtNumber(a.comments)),
      el('td', { class: 'num' }, bw.fmtNumber(a.engagement.reposts)),
      el('td', { class: 'num' }, bw.fmtNumber(a.engagement.likes))));
    $('authors-table').tBodies[0].replaceChildren(...rows);
    $('authors-table').hidden = rows.length === 0;
    $('authors-empty').hidden = rows.length > 0;
    $('authors-empty').textContent = `No author in ${SPANS[out.window] || out.window} yet.`;
    $('authors-caption').textContent = out.folded
      ? `Over the window, most mentions first; ${bw.fmtNumber(out.folded)} mentions of authors of the busiest hours are not counted per author`
      : 'Exact counts over the window, most mentions first';
    const top = out.authors[0];
    $('ws-authors').replaceChildren(top ? bw.shown(bw.truncate(top.author, 18)) : '–');
    $('ws-authors-note').textContent = top ? `top voice: ${bw.fmtNumber(top.comments)} mentions` : 'no author yet';
  }

  function shareList(id, parts, label) {
    $(id).replaceChildren(...parts.map((p) => {
      const bar = el('span', { class: 'bd-fill' });
      bar.style.width = (p.share * 100).toFixed(1) + '%';
      return el('li', { dataset: { key: p.key, comments: String(p.comments) } },
        el('span', { class: 'bd-key' }, bw.bidi(label(p.key))),
        el('span', { class: 'bd-bar', 'aria-hidden': 'true' }, bar),
        el('span', { class: 'bd-num' }, `${bw.fmtNumber(p.comments)} · ${pct(p.share)}`));
    }));
  }

  // langName names a language by its BCP 47 subtag in English, as the
  // browser knows them.
  function langName(code) {
    if (!code) return 'not known';
    try {
      const n = new Intl.DisplayNames(['en'], { type: 'language' }).of(code);
      return n && n !== code ? `${n} (${code})` : code;
    } catch (e) {
      return code;
    }
  }

  function renderBreakdown(b) {
    const any = b.sources.length > 0 || b.languages.length > 0;
    $('breakdowns').hidden = !any;
    $('bd-empty').hidden = any;
    $('bd-empty').textContent = `No mention in ${SPANS[b.window] || b.window} yet.`;
    shareList('bd-sources', b.sources, (k) => k);
    shareList('bd-languages', b.languages, langName);
    const top = b.languages[0];
    $('ws-lang').textContent = top ? (top.key || '?') : '–';
    $('ws-lang-note').textContent = top ? `${langName(top.key)}: ${pct(top.share)}` : 'no mention yet';
  }

  async function refreshVoices() {
    renderHead();
    const sel = selection();
    if (!sel) {
      state.key = '';
      $('authors-table').hidden = true;
      $('authors-empty').hidden = false;
      $('authors-empty').textContent = 'Pick a search to see who talks most.';
      $('breakdowns').hidden = true;
      $('bd-empty').hidden = false;
      $('bd-empty').textContent = 'Pick a search to see its sources and languages.';
      $('authors-for').textContent = '';
      return;
    }
    const win = view.link.window;
    const key = `${view.session}:${sel.kind}:${sel.id}:${win}`;
    const seq = ++state.seq;
    if (state.key !== key) {
      $('authors-empty').textContent = 'Loading…';
      $('authors-empty').hidden = false;
      $('authors-table').hidden = true;
      $('bd-empty').textContent = 'Loading…';
      $('bd-empty').hidden = false;
      $('breakdowns').hidden = true;
    }
    $('authors-for').textContent = SPANS[win];
    const base = sel.kind === 'crawler' ? `/v1/crawlers/${encodeURIComponent(sel.id)}` : `/v1/users/${encodeURIComponent(sel.id)}`;
    try {
      const [authors, breakdown] = await Promise.all([
        api(`${base}/authors?window=${win}&n=${AUTHORS_SHOWN}`),
        api(`${base}/breakdown?window=${win}`),
      ]);
      if (seq !== state.seq) return;
      renderAuthors(authors);
      renderBreakdown(breakdown);
      state.key = key;
    } catch (e) {
      if (seq !== state.seq || e instanceof bw.AuthError) return;
      const msg = e instanceof bw.APIError ? e.reason : e.message;
      $('authors-empty').textContent = `Authors unavailable: ${msg}`;
      $('authors-empty').hidden = false;
      $('bd-empty').textContent = `Breakdown unavailable: ${msg}`;
      $('bd-empty').hidden = false;
    }
  }

  // Rename.

  function openRename() {
    const c = state.crawler;
    if (!c) return;
    $('rn-title').textContent = `Rename crawler ${c.id}`;
    $('rn-name').value = c.name || '';
    $('rn-error').hidden = true;
    $('rename-dialog').showModal();
    $('rn-name').focus();
  }

  async function submitRename(ev) {
    ev.preventDefault();
    const c = state.crawler;
    if (!c) return;
    const name = $('rn-name').value.trim();
    try {
      const out = await api(`/v1/crawlers/${encodeURIComponent(c.id)}`, { method: 'PATCH', body: { name } });
      state.crawler = out;
      $('rename-dialog').close();
      bw.refreshNow();
    } catch (e) {
      if (e instanceof bw.AuthError) {
        $('rename-dialog').close();
        bw.refreshNow();
        return;
      }
      $('rn-error').textContent = e instanceof bw.APIError ? e.reason : e.message;
      $('rn-error').hidden = false;
    }
  }

  async function copyLink() {
    const url = location.href;
    const f = $('flash');
    try {
      await navigator.clipboard.writeText(url);
      f.textContent = 'Link copied: it opens this view as it is now.';
    } catch (e) {
      f.textContent = `Link to this view: ${url}`;
    }
    f.hidden = false;
  }

  bw.onRefresh(() => {
    renderPicker();
    if (view.mode === 'listen') refreshVoices();
  });
  bw.onSelect(() => {
    state.key = '';
    renderPicker();
    refreshVoices();
  });
  bw.onView((mode) => {
    if (mode === 'listen') refreshVoices();
  });

  window.bwListen = Object.freeze({ refresh: refreshVoices });

  document.addEventListener('DOMContentLoaded', () => {
    document.addEventListener('bw:activity', onActivity);
    $('searches').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-listen-crawler]');
      if (b) bw.select('crawler', Number(b.dataset.listenCrawler));
    });
    $('listen-users').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-listen-user]');
      if (b) bw.select('user', Number(b.dataset.listenUser));
    });
    $('searches-prev').addEventListener('click', () => bw.pageCrawlers(-1));
    $('searches-next').addEventListener('click', () => bw.pageCrawlers(1));
    $('picker-filter').addEventListener('input', () => {
      clearTimeout(state.findTimer);
      state.findTimer = setTimeout(() => bw.findCrawlers($('picker-filter').value.trim()), FIND_DELAY_MS);
    });
    $('picker-add').addEventListener('click', () => $('add-crawler').click());
    $('ws-rename').addEventListener('click', openRename);
    $('ws-link').addEventListener('click', copyLink);
    $('rename-form').addEventListener('submit', submitRename);
  });
})();
