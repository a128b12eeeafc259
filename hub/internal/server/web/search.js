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
  // Counting every match of a search reads COUNT_PAGE a request, at most
  // COUNT_MAX_PAGES requests.
  const COUNT_PAGE = 1000;
  const COUNT_MAX_PAGES = 200;
  // Export requests get longer than the page's usual requests: the hub
  // streams every page of the search.
  const EXPORT_TIMEOUT_MS = 10 * 60 * 1000;

  const bw = window.bwDashboard;
  const { api, el, $, view } = bw;

  const state = {
    firstPage: 0, // matches on the first page
    countSeq: 0, // bumps on every new search, so a count of an old one stops
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

  // localOf turns an RFC 3339 time into a datetime-local value (local
  // time); '' for none or a bad one.
  function localOf(iso) {
    const d = new Date(iso || '');
    if (!iso || isNaN(d)) return '';
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
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

  // highlightTerms are the words a mention is highlighted for: the query
  // terms it matched (its crawler's) and the search's own, each a
  // lowercase word, phrase, #tag or @handle, or a prefix ending in *.
  function highlightTerms(matched, q) {
    const out = new Set();
    const add = (t) => {
      t = String(t || '').toLowerCase().replace(/^"|"$/g, '').trim();
      if (t && !/^(or|and|not)$/.test(t)) out.add(t);
    };
    for (const m of matched || []) add(m);
    // The search's positive atoms: phrases, then words; negated ones and
    // field atoms (from:, lang:, sentiment:) are not in the text as such.
    const text = q || '';
    for (const m of text.matchAll(/(^|[\s(])(-?)"([^"]+)"/g)) if (!m[2]) add(m[3]);
    const rest = text.replace(/"[^"]*"/g, ' ');
    let negate = false;
    for (const w of rest.split(/[\s()]+/)) {
      if (!w) continue;
      if (w === 'NOT') { negate = true; continue; }
      if (w === 'OR' || w === 'AND' || /^NEAR\//.test(w)) continue;
      if (!negate && !w.startsWith('-') && !/^[a-z]+:/i.test(w)) add(w);
      negate = false;
    }
    return [...out];
  }

  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

  // highlighted is a mention's text as text nodes, with the words of
  // terms (whole words, any case; a trailing * matches a word's start) in
  // <mark>.
  function highlighted(text, terms) {
    const out = el('p', { class: 'comment-text', dir: 'auto' });
    const parts = terms.filter((t) => t.replace(/\*$/, '').length > 0).map((t) => {
      const prefix = t.endsWith('*');
      const body = escapeRe(prefix ? t.slice(0, -1) : t).replace(/\s+/g, '\\s+');
      const start = /^[#@]/.test(t) ? '' : '(?<![\\p{L}\\p{N}_#@])';
      return start + body + (prefix ? '[\\p{L}\\p{N}_]*' : '(?![\\p{L}\\p{N}_])');
    });
    if (parts.length === 0) {
      out.textContent = text;
      return out;
    }
    let re;
    try {
      re = new RegExp(parts.join('|'), 'giu');
    } catch (e) {
      out.textContent = text;
      return out;
    }
    let last = 0;
    for (const m of text.matchAll(re)) {
      if (m[0] === '') continue;
      if (m.index > last) out.append(text.slice(last, m.index));
      out.append(el('mark', {}, m[0]));
      last = m.index + m[0].length;
    }
    if (last < text.length) out.append(text.slice(last));
    return out;
  }

  // sentimentBadge shows a mention's sentiment, when it has one.
  function sentimentBadge(s) {
    if (!s || !/^(positive|neutral|negative)$/.test(s.label || '')) return null;
    const score = typeof s.score === 'number' ? ` ${s.score > 0 ? '+' : ''}${s.score.toFixed(2)}` : '';
    return el('span', { class: `badge sent-badge sent-${s.label}`, title: `sentiment ${s.label}${score}` }, s.label + score);
  }

  function renderComment(cm, opts) {
    const o = opts || {};
    const meta = el('div', { class: 'comment-meta' },
      el('span', { class: 'comment-author', title: cm.author_id || '' }, bw.shown(cm.author || 'anonymous')),
      el('time', { datetime: cm.published_at, title: 'published ' + bw.dateTime(cm.published_at) }, bw.dateTime(cm.published_at)));
    if (view.selected === null && cm.crawler_id) meta.append(el('span', { class: 'dim' }, `crawler ${cm.crawler_id}`));
    if (cm.source) meta.append(el('span', { class: 'dim' }, cm.source));
    if (cm.lang) meta.append(el('span', { class: 'dim comment-lang', title: cm.lang_detected ? 'language detected from the text' : 'language given by the source' }, cm.lang + (cm.lang_detected ? '*' : '')));
    const sb = sentimentBadge(cm.sentiment);
    if (sb) meta.append(sb);
    if (cm.engagement) {
      meta.append(el('span', { class: 'engagement', title: 'reposts and likes when it was fetched' },
        `↻ ${bw.fmtNumber(cm.engagement.reposts)} · ♥ ${bw.fmtNumber(cm.engagement.likes)}`));
    }
    const href = bw.safeURL(cm.url);
    if (href) meta.append(el('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow', title: href }, 'source'));
    for (const term of cm.matched || []) meta.append(el('span', { class: 'term' }, bw.bidi(term)));
    if (!o.inThread && cm.crawler_id) {
      meta.append(el('button', { type: 'button', class: 'btn btn-small btn-plain thread-btn', dataset: { thread: cm.id, crawler: String(cm.crawler_id) },
        'aria-label': `Thread of ${cm.author || 'an anonymous author'}'s mention` }, 'Thread'));
    }
    const li = el('li', { dataset: { commentId: cm.id }, class: o.current ? 'current' : null }, meta,
      highlighted(cm.text || '', o.inThread ? [] : highlightTerms(cm.matched, state.q)));
    return li;
  }

  // openThread shows the conversation a mention belongs to.
  async function openThread(crawlerID, commentID) {
    const dlg = $('thread-dialog');
    $('th-comments').replaceChildren();
    $('th-status').textContent = 'Reading the conversation…';
    if (!dlg.open) dlg.showModal();
    $('th-close').focus();
    try {
      const th = await api(`/v1/crawlers/${encodeURIComponent(crawlerID)}/threads/${encodeURIComponent(commentID)}`);
      const items = (th.comments || []).map((cm) => renderComment(cm, { inThread: true, current: cm.id === commentID }));
      $('th-comments').replaceChildren(...items);
      $('th-status').textContent = `${items.length} ${items.length === 1 ? 'mention' : 'mentions'} in this conversation, by published time; the one opened is marked.`;
      const cur = $('th-comments').querySelector('li.current');
      if (cur) cur.scrollIntoView({ block: 'nearest' });
    } catch (e) {
      if (e instanceof bw.AuthError) { dlg.close(); bw.refreshNow(); return; }
      $('th-status').textContent = `The conversation could not be read: ${e instanceof bw.APIError ? e.reason : e.message}`;
    }
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
      $('search-status').textContent = `${items.length} shown · ${bw.fmtNumber(page.scanned || 0)} stored mentions read for this page` +
        (state.next ? '' : ' · the search is complete');
      if (state.cursors.length === 1) {
        state.firstPage = items.length;
        totalAfterFirstPage(!state.next);
      }
      pagerState();
    } catch (e) {
      if (seq !== state.seq || e instanceof bw.AuthError) return; // the page's loop signs out
      showError(e instanceof bw.APIError ? e.reason : e.message);
      $('search-status').textContent = '';
    } finally {
      if (seq === state.seq) state.busy = false;
    }
  }

  // totalAfterFirstPage says how many mentions the search finds: all of
  // them when its first page is its last; else the count is offered (it
  // reads every page of the search).
  function totalAfterFirstPage(complete) {
    state.countSeq++;
    if (complete) {
      setTotal(state.firstPage, true);
      return;
    }
    $('search-total-text').textContent = 'More than one page of matches.';
    $('search-count').hidden = false;
    $('search-count').disabled = false;
  }

  function setTotal(n, exact) {
    $('search-total').dataset.total = String(n);
    $('search-total-text').textContent = `${bw.fmtNumber(n)} ${n === 1 ? 'mention matches' : 'mentions match'}${exact ? '' : ' so far'}.`;
    $('search-count').hidden = true;
  }

  // countAll walks every page of the search, counting its matches, until
  // it is complete, another search starts, or COUNT_MAX_PAGES were read.
  async function countAll() {
    const t = target();
    if (!t) return;
    const seq = ++state.countSeq;
    const key = state.target;
    $('search-count').disabled = true;
    let n = 0;
    let cursor = '';
    for (let pages = 0; pages < COUNT_MAX_PAGES; pages++) {
      let page;
      try {
        page = await api(`${basePath(t)}/comments?${params(cursor, COUNT_PAGE)}`);
      } catch (e) {
        if (seq !== state.countSeq || e instanceof bw.AuthError) return;
        $('search-total-text').textContent = `Counting stopped: ${e instanceof bw.APIError ? e.reason : e.message}`;
        $('search-count').disabled = false;
        return;
      }
      if (seq !== state.countSeq || key !== state.target) return;
      n += (page.comments || []).length;
      cursor = page.next_cursor || '';
      if (!cursor) {
        setTotal(n, true);
        return;
      }
      $('search-total-text').textContent = `${bw.fmtNumber(n)} mentions match so far… counting.`;
    }
    setTotal(n, false);
    $('search-count').hidden = false;
    $('search-count').disabled = true;
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
    state.countSeq++;
    $('search-total-text').textContent = '';
    $('search-count').hidden = true;
    delete $('search-total').dataset.total;
    // The search and its range go into the page's address.
    view.link.q = state.q;
    view.link.since = state.since || '';
    view.link.until = state.until || '';
    bw.saveLink();
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
    $('comments-for').textContent = t ? bw.selectionLabel(t.kind, t.id) : '';
    $('comments-empty').textContent = t ? 'Loading…' : 'Pick a search or a customer on the left.';
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
    $('search-count').addEventListener('click', countAll);
    $('comments').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-thread]');
      if (b) openThread(Number(b.dataset.crawler), b.dataset.thread);
    });
    // A shared link's search: its query and range fill the form.
    $('search-q').value = view.link.q || '';
    $('search-since').value = localOf(view.link.since);
    $('search-until').value = localOf(view.link.until);
    $('export-csv').addEventListener('click', () => exportSearch('csv'));
    $('export-jsonl').addEventListener('click', () => exportSearch('jsonl'));
    pagerState();
  });
})();
