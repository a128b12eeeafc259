// Black Widow hub dashboard, comparison: the crawlers (or users) ticked in
// their tables, side by side over a window (GET /v1/compare): one line per
// series, as comments per step or as each one's share of all of them, and
// a table of totals and shares (share of voice).
'use strict';

(() => {
  const WINDOWS = { '1h': '1m', '24h': '1h', '7d': '6h' };
  const CHART_WIDTH = 640;
  const CHART_HEIGHT = 170;
  const CHART_AXIS = 18;
  const CHART_TOP = 14;
  // Series colours, told apart by more than hue: each line has its own
  // dash pattern too.
  const DASHES = ['', '6 3', '2 3', '8 3 2 3', '1 2', '10 4', '4 4', '12 3 3 3', '3 6', '6 2 2 2'];

  const bw = window.bwDashboard;
  const { api, el, $, view, SVG_NS } = bw;

  const state = { mode: 'counts', seq: 0, last: null };
  const SENTIMENTS = ['positive', 'neutral', 'negative'];

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function pct(x) { return (x * 100).toFixed(1) + '%'; }

  function render(cmp) {
    const series = cmp.series || [];
    const shares = state.mode === 'shares';
    const value = (st) => (shares ? st.share : st.comments);
    const n = Math.max(0, ...series.map((s) => s.steps.length));
    const peak = shares ? 1 : Math.max(1, ...series.flatMap((s) => s.steps.map((st) => st.comments)));
    const plotH = CHART_HEIGHT - CHART_AXIS - CHART_TOP;
    const x = (i) => (n <= 1 ? 0 : (i / (n - 1)) * CHART_WIDTH);
    const y = (v) => CHART_TOP + plotH - (v / peak) * plotH;
    const what = shares ? 'share of the compared comments' : 'comments';
    const chart = svg('svg', { class: 'cmp-svg', viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, role: 'img',
      'aria-label': `${what} per ${cmp.step} over ${cmp.window}: ${series.map((s) => `${s.label} ${shares ? pct(s.share) : bw.fmtNumber(s.total)}`).join(', ')}` });
    chart.append(svg('line', { class: 'vol-base', x1: 0, x2: CHART_WIDTH, y1: CHART_TOP + plotH, y2: CHART_TOP + plotH }));
    chart.append(svg('text', { class: 'vol-label', x: 2, y: CHART_TOP - 3 }, shares ? '100%' : `${bw.fmtNumber(peak)} per step`));
    series.forEach((s, k) => {
      const pts = s.steps.map((st, i) => `${x(i).toFixed(1)},${y(value(st)).toFixed(1)}`).join(' ');
      const line = svg('polyline', { class: `cmp-line cmp-c${k}`, points: pts, 'data-series': s.label });
      if (DASHES[k]) line.setAttribute('stroke-dasharray', DASHES[k]);
      line.append(svg('title', {}, `${s.label}: ${bw.fmtNumber(s.total)} comments, ${pct(s.share)}`));
      chart.append(line);
    });
    if (n > 0) {
      const first = series[0].steps[0].at;
      chart.append(svg('text', { class: 'vol-label', x: 2, y: CHART_HEIGHT - 4 }, bw.dateTime(first).slice(5, 16)));
      chart.append(svg('text', { class: 'vol-label', x: CHART_WIDTH - 2, y: CHART_HEIGHT - 4, 'text-anchor': 'end' }, 'now'));
    }
    $('cmp-chart').replaceChildren(chart);
    const rows = series.map((s, k) => el('tr', { dataset: { series: s.label, total: String(s.total), share: s.share.toFixed(4) } },
      el('th', { scope: 'row' }, el('span', { class: `cmp-key cmp-c${k}`, 'aria-hidden': 'true' }), bw.shown(s.label)),
      el('td', { class: 'num' }, bw.fmtNumber(s.total)),
      el('td', { class: 'num' }, pct(s.share)),
      el('td', {}, sentimentCell(s))));
    $('cmp-table').tBodies[0].replaceChildren(...rows);
  }

  // sentimentCell is a series' mentions by sentiment over the window: a
  // stacked bar and its shares, or a note while none is scored.
  function sentimentCell(s) {
    const sums = { positive: 0, neutral: 0, negative: 0 };
    let scored = false;
    for (const st of s.steps || []) {
      for (const k of SENTIMENTS) {
        if (typeof st[k] === 'number') {
          scored = true;
          sums[k] += st[k];
        }
      }
    }
    const total = sums.positive + sums.neutral + sums.negative;
    if (!scored || total === 0) return el('span', { class: 'dim' }, scored ? 'none scored' : 'no sentiment yet');
    const bar = el('span', { class: 'sent-bar', role: 'img',
      'aria-label': SENTIMENTS.map((k) => `${pct(sums[k] / total)} ${k}`).join(', ') });
    for (const k of SENTIMENTS) {
      const part = el('span', { class: 'sent-part sent-' + k });
      part.style.width = ((sums[k] / total) * 100).toFixed(1) + '%';
      bar.append(part);
    }
    return el('span', { class: 'sent-cell', dataset: sums }, bar,
      el('span', { class: 'hint' }, `${pct(sums.positive / total)} + · ${pct(sums.negative / total)} −`));
  }

  async function refresh() {
    const { kind, ids } = view.compare;
    const figure = $('cmp');
    const empty = $('cmp-empty');
    if (ids.length < 2) {
      figure.hidden = true;
      empty.hidden = false;
      empty.textContent = ids.length === 1 ? `Tick one more ${kind === 'user' ? 'customer' : 'search'} to compare.` : 'Tick two or more searches (or customers) on the left.';
      return;
    }
    const seq = ++state.seq;
    try {
      const p = new URLSearchParams();
      p.set(kind === 'user' ? 'users' : 'crawlers', ids.join(','));
      p.set('window', view.link.window);
      p.set('step', WINDOWS[view.link.window]);
      const cmp = await api(`/v1/compare?${p}`);
      if (seq !== state.seq) return;
      state.last = cmp;
      render(cmp);
      figure.hidden = false;
      empty.hidden = true;
    } catch (e) {
      if (seq !== state.seq || e instanceof bw.AuthError) return;
      empty.textContent = `Comparison unavailable: ${e instanceof bw.APIError ? e.reason : e.message}`;
      empty.hidden = false;
    }
  }

  // toggle ticks or unticks a crawler or user; ticking another kind starts
  // a new comparison.
  function toggle(kind, id, on) {
    const c = view.compare;
    if (c.kind !== kind) {
      c.kind = kind;
      c.ids = [];
      for (const box of document.querySelectorAll(`input[data-compare]:not([data-compare="${kind}"])`)) box.checked = false;
    }
    c.ids = c.ids.filter((x) => x !== id);
    if (on) c.ids.push(id);
    if (c.ids.length > 10) {
      c.ids.shift();
      for (const box of document.querySelectorAll(`input[data-compare="${kind}"]`)) box.checked = c.ids.includes(Number(box.dataset.id));
    }
    bw.saveLink();
    refresh();
  }

  function setPressed(attr, value) {
    for (const b of document.querySelectorAll(`button[${attr}]`)) b.setAttribute('aria-pressed', b.getAttribute(attr) === value ? 'true' : 'false');
  }

  bw.onRefresh(refresh);
  window.bwCompare = Object.freeze({ refresh });

  document.addEventListener('DOMContentLoaded', () => {
    document.addEventListener('change', (ev) => {
      const box = ev.target.closest && ev.target.closest('input[data-compare]');
      if (box) toggle(box.dataset.compare, Number(box.dataset.id), box.checked);
    });
    for (const b of document.querySelectorAll('button[data-cmp-mode]')) {
      b.addEventListener('click', () => {
        state.mode = b.dataset.cmpMode;
        setPressed('data-cmp-mode', state.mode);
        if (state.last) render(state.last);
      });
    }

  });
})();
