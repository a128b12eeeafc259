// Black Widow hub dashboard, trends: for the selected crawler, a volume
// chart of its comments and distinct authors per step
// (GET /v1/crawlers/{id}/activity) and a cloud of its trending terms
// (GET /v1/crawlers/{id}/terms); for a selected user, the cloud of all its
// crawlers (GET /v1/users/{id}/terms). The window (1 h, 24 h, 7 d) is
// switchable, and both are read again on every refresh of the page. Terms
// are crawled text, hostile input: they go into the page as text only.
'use strict';

(() => {
  // Terms the cloud shows at most (the API's n).
  const TERMS_SHOWN = 40;
  // Font sizes of the least and the most frequent term shown, in px.
  const CLOUD_MIN_PX = 12;
  const CLOUD_MAX_PX = 34;
  // The activity step of each window: a bar a minute for the last hour, an
  // hour for a day, six hours for a week.
  const WINDOWS = {
    '1h': { step: '1m', stepWord: 'minute', span: 'the last hour' },
    '24h': { step: '1h', stepWord: 'hour', span: 'the last 24 hours' },
    '7d': { step: '6h', stepWord: '6 hours', span: 'the last 7 days' },
  };
  // A term's curve over the last hour reads at most CURVE_MAX_MATCHES
  // mentions, CURVE_PAGE a request.
  const CURVE_PAGE = 1000;
  const CURVE_MAX_MATCHES = 5000;
  // SIX_HOURS_MS is the step of the 7-day window.
  const SIX_HOURS_MS = 6 * 3600 * 1000;
  const CHART_WIDTH = 640;
  const CHART_HEIGHT = 150;
  const CHART_AXIS = 18; // room under the bars for the time labels
  const CHART_TOP = 14; // room above the bars for the peak label

  const bw = window.bwDashboard;
  const { api, el, $, view, SVG_NS } = bw;

  const state = {
    busy: false,
    again: false, // a refresh was asked while one ran
    seq: 0, // bumps on every read, so only the latest answer is drawn
    shown: '', // the selection and window now on the page
    merge: false, // a hashtag counted with the word it spells
    curve: null, // the term whose curve is shown
    curveSeq: 0,
  };

  // selection is what the trends show: a crawler, else a user, else null.
  function selection() {
    if (view.selected !== null) return { kind: 'crawler', id: view.selected };
    if (view.selectedUser !== null) return { kind: 'user', id: view.selectedUser };
    return null;
  }

  // termKind tells hashtags, mentions, phrases and words apart, for their
  // colour.
  function termKind(term) {
    if (term.startsWith('#')) return 'hashtag';
    if (term.startsWith('@')) return 'mention';
    return term.includes(' ') ? 'phrase' : 'word';
  }

  // fontSize scales a count between the window's least and most frequent
  // terms on a log scale, so one huge term does not flatten the rest.
  function fontSize(count, least, most) {
    if (most <= least) return (CLOUD_MIN_PX + CLOUD_MAX_PX) / 2;
    const f = (Math.log(count) - Math.log(least)) / (Math.log(most) - Math.log(least));
    return CLOUD_MIN_PX + Math.max(0, Math.min(1, f)) * (CLOUD_MAX_PX - CLOUD_MIN_PX);
  }

  function renderCloud(terms, span) {
    const cloud = $('term-cloud');
    const empty = $('cloud-empty');
    const shown = terms.filter((t) => t && typeof t.term === 'string' && t.count > 0);
    if (shown.length === 0) {
      cloud.replaceChildren();
      empty.textContent = `No terms in ${span} yet: they appear as comments are counted.`;
      empty.hidden = false;
      return;
    }
    empty.hidden = true;
    const counts = shown.map((t) => t.count);
    const least = Math.min(...counts);
    const most = Math.max(...counts);
    cloud.replaceChildren(...shown.map((t) => {
      const kind = termKind(t.term);
      const li = el('li', { class: 'tc tc-' + kind, dataset: { term: t.term, count: String(t.count), kind } },
        el('button', { type: 'button', class: 'tc-btn', dataset: { term: t.term },
          'aria-label': `${t.term} ${bw.fmtNumber(t.count)} comments: show them and the term's curve` },
        el('span', { class: 'tc-term' }, bw.bidi(t.term)), ' ', el('span', { class: 'tc-count' }, bw.fmtNumber(t.count))));
      li.style.fontSize = fontSize(t.count, least, most).toFixed(1) + 'px';
      return li;
    }));
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // label is a step's start as the chart's axis shows it: a time within a
  // day, the date and hour beyond.
  function label(iso, win) {
    const s = bw.dateTime(iso);
    return win === '7d' ? s.slice(5, 13) + 'h' : s.slice(11, 16);
  }

  function renderVolume(activity, win) {
    const box = $('volume-chart');
    const empty = $('volume-empty');
    const steps = (activity.steps || []).filter((s) => s && typeof s.at === 'string');
    const total = steps.reduce((n, s) => n + (s.comments || 0), 0);
    const busiest = steps.reduce((b, s) => (!b || s.comments > b.comments ? s : b), null);
    const w = WINDOWS[win];
    const sum = (k) => steps.reduce((n, s) => n + (s[k] || 0), 0);
    const moods = activity.user ? '' : `; ${bw.fmtNumber(sum('positive'))} positive, ${bw.fmtNumber(sum('neutral'))} neutral, ${bw.fmtNumber(sum('negative'))} negative`;
    $('volume-summary').textContent = !total ? '' : activity.user
      ? `${bw.fmtNumber(total)} comments in ${w.span}; busiest ${w.stepWord} ${bw.fmtNumber(busiest.comments)}`
      : `${bw.fmtNumber(total)} comments in ${w.span}; busiest ${w.stepWord} ${bw.fmtNumber(busiest.comments)} from about ${bw.fmtNumber(busiest.authors)} authors${moods}`;
    document.querySelector('.vol-key-authors').hidden = !!activity.user;
    empty.textContent = total ? '' : `No comments in ${w.span}.`;
    empty.hidden = total > 0;
    const chart = svg('svg', { class: 'volume-svg', viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, role: 'img',
      'aria-label': `comments and distinct authors per ${w.stepWord} over ${w.span}` });
    chart.append(svg('title', {}, `comments and distinct authors per ${w.stepWord} over ${w.span}`));
    if (steps.length === 0) {
      box.replaceChildren(chart);
      return;
    }
    // The chart's span, for the marks alerts.js draws on it.
    const stepMs = steps.length > 1 ? Date.parse(steps[1].at) - Date.parse(steps[0].at) : 60000;
    chart.dataset.from = steps[0].at;
    chart.dataset.to = new Date(Date.parse(steps[steps.length - 1].at) + stepMs).toISOString();
    const peak = Math.max(1, ...steps.map((s) => Math.max(s.comments || 0, s.authors || 0)));
    const plotH = CHART_HEIGHT - CHART_AXIS - CHART_TOP;
    const slot = CHART_WIDTH / steps.length;
    const gap = slot > 6 ? 1.5 : slot > 3 ? 0.5 : 0;
    const y = (v) => CHART_TOP + plotH - (v / peak) * plotH;
    chart.append(svg('line', { class: 'vol-base', x1: 0, x2: CHART_WIDTH, y1: CHART_TOP + plotH, y2: CHART_TOP + plotH }));
    chart.append(svg('text', { class: 'vol-label', x: 2, y: CHART_TOP - 3 }, `${bw.fmtNumber(peak)} per ${w.stepWord}`));
    const bars = svg('g', { class: 'vol-bars' });
    const pts = [];
    steps.forEach((s, i) => {
      const h = CHART_TOP + plotH - y(s.comments || 0);
      const bar = svg('rect', { x: (i * slot + gap / 2).toFixed(2), y: y(s.comments || 0).toFixed(2),
        width: Math.max(0.5, slot - gap).toFixed(2), height: Math.max(0, h).toFixed(2),
        'data-at': s.at, 'data-comments': s.comments || 0, 'data-authors': s.authors || 0 });
      bar.append(svg('title', {}, `${bw.dateTime(s.at)}: ${bw.fmtNumber(s.comments || 0)} comments, about ${bw.fmtNumber(s.authors || 0)} authors` +
        (activity.user ? '' : ` (${bw.fmtNumber(s.positive || 0)} positive, ${bw.fmtNumber(s.neutral || 0)} neutral, ${bw.fmtNumber(s.negative || 0)} negative)`)));
      bars.append(bar);
      pts.push(`${((i + 0.5) * slot).toFixed(2)},${y(s.authors || 0).toFixed(2)}`);
    });
    chart.append(bars);
    if (!activity.user) chart.append(svg('polyline', { class: 'vol-authors', points: pts.join(' ') }));
    const base = CHART_HEIGHT - 4;
    chart.append(svg('text', { class: 'vol-label', x: 2, y: base }, label(steps[0].at, win)));
    chart.append(svg('text', { class: 'vol-label', x: CHART_WIDTH - 2, y: base, 'text-anchor': 'end' }, 'now'));
    box.replaceChildren(chart);
  }

  function renderEmptySelection() {
    $('trends').hidden = true;
    $('trends-empty').textContent = 'Select a crawler or a user above to see its trending terms and activity.';
    $('trends-empty').hidden = false;
    $('trends-for').textContent = '';
  }

  // refresh reads the selection's terms and activity and draws them. It
  // runs beside the page's loop; an answer for a selection or window no
  // longer shown is dropped.
  async function refresh() {
    const sel = selection();
    if (!sel) {
      state.shown = '';
      renderEmptySelection();
      return;
    }
    if (state.busy) {
      state.again = true;
      return;
    }
    const win = view.link.window;
    const key = `${view.session}:${sel.kind}:${sel.id}:${win}:${state.merge}`;
    const seq = ++state.seq;
    state.busy = true;
    if (state.shown !== key) {
      // A new selection or window: say so rather than show the old one.
      $('trends-for').textContent = `${bw.selectionLabel(sel.kind, sel.id)} · ${WINDOWS[win].span}`;
      $('trends-empty').textContent = 'Loading…';
      $('trends-empty').hidden = false;
      $('trends').hidden = true;
    }
    try {
      const base = sel.kind === 'crawler' ? `/v1/crawlers/${encodeURIComponent(sel.id)}` : `/v1/users/${encodeURIComponent(sel.id)}`;
      const [terms, activity] = await Promise.all([
        api(`${base}/terms?window=${encodeURIComponent(win)}&n=${TERMS_SHOWN}&merge=${state.merge}`),
        sel.kind === 'crawler'
          ? api(`${base}/activity?window=${encodeURIComponent(win)}&step=${WINDOWS[win].step}`)
          : api(`/v1/compare?users=${encodeURIComponent(sel.id)}&window=${encodeURIComponent(win)}&step=${WINDOWS[win].step}`)
            .then((cmp) => ({ steps: (cmp.series[0] || { steps: [] }).steps.map((st) => ({ ...st, authors: 0 })), user: true })),
      ]);
      const now = selection();
      if (seq !== state.seq || !now || `${view.session}:${now.kind}:${now.id}:${view.link.window}:${state.merge}` !== key) return;
      renderCloud(terms.terms || [], WINDOWS[win].span);
      const volume = $('volume');
      volume.hidden = !activity;
      if (activity) renderVolume(activity, win);
      // The Listen view's cards and sentiment chart read the same steps.
      document.dispatchEvent(new CustomEvent('bw:activity', { detail: { sel, win, steps: activity.steps || [] } }));
      $('trends-for').textContent = `${bw.selectionLabel(sel.kind, sel.id)} · ${WINDOWS[win].span}` +
        (activity.user ? ' · comments of all its crawlers' : '');
      $('trends-empty').hidden = true;
      $('trends').hidden = false;
      state.shown = key;
    } catch (e) {
      if (seq !== state.seq || e instanceof bw.AuthError) return; // the page's loop signs out
      $('trends-empty').textContent = `Trends unavailable: ${e instanceof bw.APIError ? e.reason : e.message}`;
      $('trends-empty').hidden = false;
    } finally {
      state.busy = false;
      if (state.again) {
        state.again = false;
        refresh();
      }
    }
  }

  function pressWindow(win) {
    for (const b of document.querySelectorAll('button[data-window]')) b.setAttribute('aria-pressed', b.dataset.window === win ? 'true' : 'false');
  }

  // setWindow changes the window of everything the Listen view shows: the
  // charts, the terms and their curve, the authors, the breakdowns and the
  // comparison.
  function setWindow(win) {
    if (!WINDOWS[win] || win === view.link.window) return;
    view.link.window = win;
    pressWindow(win);
    bw.saveLink();
    refresh();
    if (state.curve) showCurve(state.curve);
    if (window.bwListen) window.bwListen.refresh();
    if (window.bwCompare) window.bwCompare.refresh();
  }

  // queryFor is the search that finds a term's comments: a phrase in
  // quotes; merged, a word also finds its hashtag (the word rule sees a
  // hashtag's word).
  function queryFor(term) {
    if (term.includes(' ')) return `"${term}"`;
    if (state.merge && term.startsWith('#')) return term.slice(1);
    return term;
  }

  // showCurve reads and draws a term's mentions in the selected crawler
  // over the window: per minute over the last hour (minuteCurve), per hour
  // over longer ones (the hub's term counts).
  async function showCurve(term) {
    const sel = selection();
    const fig = $('term-curve');
    if (!sel || sel.kind !== 'crawler') {
      fig.hidden = false;
      $('term-curve-title').textContent = term;
      $('term-curve-summary').textContent = '';
      $('term-curve-chart').replaceChildren();
      $('term-curve-empty').textContent = 'A term\'s curve is per crawler: select one of the user\'s crawlers for it.';
      $('term-curve-empty').hidden = false;
      return;
    }
    state.curve = term;
    const seq = ++state.curveSeq;
    const win = view.link.window;
    try {
      const a = win === '1h'
        ? await minuteCurve(sel.id, term)
        : await api(`/v1/crawlers/${encodeURIComponent(sel.id)}/terms/${encodeURIComponent(term)}/activity?window=${win}&merge=${state.merge}`);
      if (seq !== state.curveSeq) return;
      const steps = win === '7d' ? foldSteps(a.steps || [], SIX_HOURS_MS) : a.steps || [];
      const total = steps.reduce((n, s) => n + (s.count || 0), 0);
      fig.hidden = false;
      fig.dataset.term = a.term;
      fig.dataset.total = String(total);
      const per = win === '1h' ? 'minute' : win === '7d' ? '6 hours' : 'hour';
      $('term-curve-title').replaceChildren(`Mentions per ${per} carrying `, el('strong', {}, bw.bidi(a.merged ? a.terms.join(' + ') : a.term)));
      $('term-curve-summary').textContent = `${bw.fmtNumber(total)} in ${WINDOWS[win].span}` + (a.partial ? ` (the newest ${bw.fmtNumber(total)} matches)` : '');
      $('term-curve-empty').hidden = total > 0;
      $('term-curve-empty').textContent = total ? '' : `Not counted in ${WINDOWS[win].span}.`;
      const peak = Math.max(1, ...steps.map((s) => s.count || 0));
      const plotH = CHART_HEIGHT - CHART_AXIS - CHART_TOP;
      const slot = CHART_WIDTH / Math.max(1, steps.length);
      fig.dataset.step = per;
      const chart = svg('svg', { class: 'volume-svg', viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, role: 'img',
        'aria-label': `mentions per ${per} carrying ${a.term} over ${WINDOWS[win].span}: ${total}` });
      chart.append(svg('line', { class: 'vol-base', x1: 0, x2: CHART_WIDTH, y1: CHART_TOP + plotH, y2: CHART_TOP + plotH }));
      chart.append(svg('text', { class: 'vol-label', x: 2, y: CHART_TOP - 3 }, `${bw.fmtNumber(peak)} per ${per}`));
      const bars = svg('g', { class: 'vol-bars' });
      steps.forEach((s, i) => {
        const h = ((s.count || 0) / peak) * plotH;
        const bar = svg('rect', { x: (i * slot + 0.5).toFixed(2), y: (CHART_TOP + plotH - h).toFixed(2), width: Math.max(0.5, slot - 1).toFixed(2),
          height: h.toFixed(2), 'data-at': s.at, 'data-count': s.count || 0 });
        bar.append(svg('title', {}, `${bw.dateTime(s.at)}: ${bw.fmtNumber(s.count || 0)}`));
        bars.append(bar);
      });
      chart.append(bars);
      if (steps.length) chart.append(svg('text', { class: 'vol-label', x: 2, y: CHART_HEIGHT - 4 }, label(steps[0].at, win)));
      chart.append(svg('text', { class: 'vol-label', x: CHART_WIDTH - 2, y: CHART_HEIGHT - 4, 'text-anchor': 'end' }, 'now'));
      $('term-curve-chart').replaceChildren(chart);
    } catch (e) {
      if (seq !== state.curveSeq || e instanceof bw.AuthError) return;
      fig.hidden = false;
      $('term-curve-empty').textContent = `Curve unavailable: ${e instanceof bw.APIError ? e.reason : e.message}`;
      $('term-curve-empty').hidden = false;
    }
  }

  // foldSteps sums a term's hourly steps into steps of stepMs, aligned on
  // UTC as the hub aligns the volume chart's, so that over 7 days the
  // curve has the steps of the chart above it.
  function foldSteps(hours, stepMs) {
    const out = [];
    for (const h of hours) {
      const at = Math.floor(Date.parse(h.at) / stepMs) * stepMs;
      if (Number.isNaN(at)) continue;
      const last = out[out.length - 1];
      if (last && last.ms === at) last.count += h.count || 0;
      else out.push({ ms: at, at: new Date(at).toISOString(), count: h.count || 0 });
    }
    return out.map(({ at, count }) => ({ at, count }));
  }

  // minuteCurve is a term's mentions per minute over the last hour: the
  // hub counts terms per hour, so the minutes are counted from the stored
  // mentions the search finds (published in the hour, at most
  // CURVE_MAX_MATCHES of them, newest first).
  async function minuteCurve(id, term) {
    const now = Date.now();
    const start = Math.floor((now - 3600 * 1000) / 60000) * 60000;
    const steps = [];
    for (let t = start; t <= now; t += 60000) steps.push({ at: new Date(t).toISOString(), count: 0 });
    let cursor = '';
    let seen = 0;
    let partial = false;
    for (;;) {
      const p = new URLSearchParams({ q: queryFor(term), since: new Date(start).toISOString(), limit: String(CURVE_PAGE) });
      if (cursor) p.set('cursor', cursor);
      const page = await api(`/v1/crawlers/${encodeURIComponent(id)}/comments?${p}`);
      for (const cm of page.comments || []) {
        const i = Math.floor((Date.parse(cm.published_at) - start) / 60000);
        if (i >= 0 && i < steps.length) steps[i].count++;
        seen++;
      }
      cursor = page.next_cursor || '';
      if (!cursor) break;
      if (seen >= CURVE_MAX_MATCHES) {
        partial = true;
        break;
      }
    }
    return { term, terms: [term], merged: false, steps, partial };
  }

  function hideCurve() {
    state.curve = null;
    state.curveSeq++;
    $('term-curve').hidden = true;
  }

  bw.onRefresh(refresh);
  bw.onSelect(hideCurve);

  document.addEventListener('DOMContentLoaded', () => {
    pressWindow(view.link.window);
    for (const b of document.querySelectorAll('button[data-window]')) b.addEventListener('click', () => setWindow(b.dataset.window));
    $('term-cloud').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-term]');
      if (!b) return;
      const term = b.dataset.term;
      window.bwSearch.search(queryFor(term));
      showCurve(term);
    });
    $('term-curve-close').addEventListener('click', hideCurve);
    $('trends-merge').addEventListener('change', () => {
      state.merge = $('trends-merge').checked;
      if (state.curve) showCurve(state.curve);
      refresh();
    });
  });
})();
