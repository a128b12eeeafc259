// Black Widow hub dashboard, comments: a search over the selected crawler's
// (or user's) stored comments in the query language
// (GET /v1/crawlers/{id}/comments?q=…, GET /v1/users/{id}/comments?q=…),
// newest first, page by page with the hub's cursors, with a date range, and
// export of the whole search as CSV or JSON Lines
// (GET …/comments/export?format=…). An empty query shows every comment and
// follows new ones live on its first page. A query the hub refuses shows
// the parser's message. Comments are crawled text, hostile input: they go
// into the page as text only, isolated from the text around them.
'use strict';

(() => {
  // Comments a page shows.
  const PAGE_SIZE = 20;
  // Export requests get longer than the page's usual requests: the hub
  // streams every page of the search.
  const EXPORT_TIMEOUT_MS = 10 * 60 * 1000;

  const bw = window.bwDashboard;
  const { api, el, $, view } = bw;

  const state = {
    target: '', // "crawler:ID" or "user:ID" the results are for
    q: '',
    since: '',
    until: '',
    cursors: [''], // the cursor of each page read so far; the last is shown
    next: '', // the cursor of the page after the one shown
    seq: 0, // bumps on every read: only the latest answer is drawn
    busy: false,
  };

  function target() {
    if (view.selected !== null) return { kind: 'crawler', id: view.selected };
    if (view.selectedUser !== null) return { kind: 'user', id: view.selectedUser };
    return null;
  }

  function basePath(t) {
    return t.kind === 'crawler' ? `/v1/crawlers/${encodeURIComponent(t.id)}` : `/v1/users/${encodeURIComponent(t.id)}`;
  }

  // isoOf turns a datetime-local value (local time) into RFC 3339 UTC.
  function isoOf(local) {
    if (!local) return '';
    const d = new Date(local);
    return isNaN(d) ? null : d.toISOString();
  }

  function params(cursor, limit) {
    const p = new URLSearchParams();
    p.set('q', state.q);
    if (state.since) p.set('since', state.since);
    if (state.until) p.set('until', state.until);
    if (cursor) p.set('cursor', cursor);
    if (limit) p.set('limit', String(limit));
    return p;
  }

  function renderComment(cm) {
    const meta = el('div', { class: 'comment-meta' },
      el('span', { class: 'comment-author', title: cm.author_id || '' }, bw.shown(cm.author || 'anonymous')),
      el('time', { datetime: cm.published_at, title: 'published ' + bw.dateTime(cm.published_at) }, bw.dateTime(cm.published_at)));
    if (view.selected === null && cm.crawler_id) meta.append(el('span', { class: 'dim' }, `crawler ${cm.crawler_id}`));
    const href = bw.safeURL(cm.url);
    if (href) meta.append(el('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow', title: href }, 'source'));
    for (const term of cm.matched || []) meta.append(el('span', { class: 'term' }, bw.bidi(term)));
    if (cm.lang) {
      meta.append(el('span', { class: 'dim comment-lang', title: cm.lang_detected ? 'language detected from the text' : 'language given by the source' },
        cm.lang + (cm.lang_detected ? '*' : '')));
    }
    const mood = cm.sentiment && ['positive', 'neutral', 'negative'].includes(cm.sentiment.label) ? cm.sentiment : null;
    if (mood) {
      meta.append(el('span', { class: 'sentiment sentiment-' + mood.label, title: 'sentiment score ' + Number(mood.score).toFixed(2) }, mood.label));
    }
    return el('li', { dataset: { commentId: cm.id } }, meta, el('p', { class: 'comment-text', dir: 'auto' }, cm.text));
  }

  function showError(msg) {
    const box = $('search-error');
    box.textContent = msg || '';
    box.hidden = !msg;
  }

  function pagerState() {
    const page = state.cursors.length;
    $('search-newer').disabled = page <= 1;
    $('search-older').disabled = !state.next;
    $('search-page').textContent = state.target ? `page ${page}` : '';
    const t = target();
    $('export-csv').disabled = !t;
    $('export-jsonl').disabled = !t;
  }

  // read reads the page at the last of state.cursors and draws it.
  async function read(quiet) {
    const t = target();
    if (!t) return;
    const key = `${t.kind}:${t.id}`;
    const seq = ++state.seq;
    state.busy = true;
    if (!quiet) $('search-status').textContent = 'Searching…';
    try {
      const cursor = state.cursors[state.cursors.length - 1];
      const page = await api(`${basePath(t)}/comments?${params(cursor, PAGE_SIZE)}`);
      if (seq !== state.seq || key !== state.target) return;
      showError('');
      const items = (page.comments || []).map(renderComment);
      $('comments').replaceChildren(...items);
      state.next = page.next_cursor || '';
      const empty = $('comments-empty');
      empty.hidden = items.length > 0;
      empty.textContent = state.next ? 'No match on this page: the search stopped at its bound. Older goes on.' : (state.q ? 'No comment matches.' : 'No comment stored yet.');
      $('search-status').textContent = `${items.length} shown · ${bw.fmtNumber(page.scanned || 0)} stored comments read for this page` +
        (state.next ? '' : ' · the search is complete');
      pagerState();
    } catch (e) {
      if (seq !== state.seq || e instanceof bw.AuthError) return; // the page's loop signs out
      showError(e instanceof bw.APIError ? e.reason : e.message);
      $('search-status').textContent = '';
    } finally {
      if (seq === state.seq) state.busy = false;
    }
  }

  // start begins a search with what the form holds.
  function start() {
    const t = target();
    if (!t) return;
    const since = isoOf($('search-since').value);
    const until = isoOf($('search-until').value);
    if (since === null || until === null) {
      showError('Enter the dates as the date fields show them.');
      return;
    }
    state.target = `${t.kind}:${t.id}`;
    state.q = $('search-q').value.trim();
    state.since = since;
    state.until = until;
    state.cursors = [''];
    state.next = '';
    read(false);
  }

  // search runs q in the current selection (trends.js calls it for a term).
  function search(q) {
    $('search-q').value = q;
    start();
    $('comments-title').scrollIntoView({ block: 'nearest' });
  }

  function onSelect() {
    const t = target();
    $('comments').replaceChildren();
    showError('');
    $('comments-for').textContent = t ? `${t.kind} ${t.id}` : '';
    $('comments-empty').textContent = t ? 'Loading…' : 'Select a crawler or a user above.';
    $('comments-empty').hidden = false;
    $('search-status').textContent = '';
    state.target = '';
    state.cursors = [''];
    state.next = '';
    pagerState();
    if (t) start();
  }

  // onRefresh follows new comments: the first page of an unfiltered search
  // is read again with the page's refresh (a query waits for Search).
  function onRefresh() {
    const t = target();
    const key = t ? `${t.kind}:${t.id}` : '';
    if (key !== state.target) {
      onSelect();
      return;
    }
    if (t && !state.busy && state.cursors.length === 1 && state.q === '' && !state.until) read(true);
  }

  // exportSearch downloads every comment of the search in format. The
  // token travels in a header, so the page reads the stream itself and
  // hands the file to the browser when it is complete.
  async function exportSearch(format) {
    const t = target();
    if (!t) return;
    const button = $(format === 'csv' ? 'export-csv' : 'export-jsonl');
    button.disabled = true;
    $('search-status').textContent = 'Exporting…';
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), EXPORT_TIMEOUT_MS);
    try {
      const p = params('', 0);
      p.set('format', format);
      const resp = await fetch(`${basePath(t)}/comments/export?${p}`, {
        headers: { Authorization: 'Bearer ' + bw.getToken() }, signal: ctl.signal, cache: 'no-store', credentials: 'omit' });
      if (!resp.ok) {
        let msg = resp.statusText;
        try { msg = (await resp.json()).error || msg; } catch (e) { /* not JSON */ }
        throw new Error(msg);
      }
      const blob = await resp.blob();
      const name = `${t.kind}-${t.id}-comments.${format}`;
      const url = URL.createObjectURL(blob);
      const a = el('a', { href: url, download: name, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      $('search-status').textContent = `Exported ${name} (${bw.fmtNumber(blob.size)} bytes).`;
    } catch (e) {
      showError(`Export failed: ${e.message}`);
      $('search-status').textContent = '';
    } finally {
      clearTimeout(timer);
      button.disabled = false;
    }
  }

  bw.onSelect(onSelect);
  bw.onRefresh(onRefresh);
  window.bwSearch = Object.freeze({ search });

  document.addEventListener('DOMContentLoaded', () => {
    $('search-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      start();
    });
    $('search-older').addEventListener('click', () => {
      if (!state.next) return;
      state.cursors.push(state.next);
      read(false);
    });
    $('search-newer').addEventListener('click', () => {
      if (state.cursors.length <= 1) return;
      state.cursors.pop();
      read(false);
    });
    $('export-csv').addEventListener('click', () => exportSearch('csv'));
    $('export-jsonl').addEventListener('click', () => exportSearch('jsonl'));
    pagerState();
  });
})();
