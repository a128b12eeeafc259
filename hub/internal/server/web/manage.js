// Black Widow hub dashboard, management: add, edit, enable, disable and
// delete crawlers, add users and change limits. Every change goes through
// the admin API, which validates it as it does bwctl's; the page shows the
// hub's reason when it refuses one, and stores nothing itself. Queries are
// checked as they are typed by POST /v1/queries/validate, the hub's own
// parser, so the page and the API never disagree.
'use strict';

(() => {
  // How long typing pauses before the query is checked.
  const VALIDATE_DELAY_MS = 250;
  // How long a confirmation of a change stays on the page.
  const FLASH_MS = 5000;

  const bw = window.bwDashboard;
  const { api, $ } = bw;

  const form = {
    mode: 'add', // 'add' or 'edit' (crawler form); 'add' or 'limit' (user form)
    id: null, // crawler or user being edited
    checkSeq: 0, // bumps on every check, so a late answer is dropped
    checkTimer: null,
    flashTimer: null,
  };

  function flash(text) {
    const f = $('flash');
    f.textContent = text;
    f.hidden = false;
    clearTimeout(form.flashTimer);
    form.flashTimer = setTimeout(() => { f.hidden = true; }, FLASH_MS);
  }

  function showError(id, err) {
    const box = $(id);
    if (err instanceof bw.AuthError) {
      closeDialogs();
      bw.refreshNow(); // the refresh signs the page out with the reason
      return;
    }
    box.textContent = err instanceof bw.APIError ? err.reason : err.message;
    box.hidden = false;
  }

  function hideError(id) {
    $(id).hidden = true;
    $(id).textContent = '';
  }

  function closeDialogs() {
    for (const d of document.querySelectorAll('dialog[open]')) d.close();
  }

  // busy disables a form's buttons while its request runs.
  async function busy(formEl, fn) {
    const buttons = formEl.querySelectorAll('button');
    for (const b of buttons) b.disabled = true;
    try {
      return await fn();
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  // intField reads a whole number as typed; the hub judges its value, so a
  // negative limit reaches it and comes back with its reason.
  function intField(id, what) {
    const raw = $(id).value.trim();
    if (!/^-?[0-9]+$/.test(raw)) throw new Error(`${what} must be a whole number, got "${raw}"`);
    return Number(raw);
  }

  // sources are the source kinds' declarations (GET /v1/sources), read
  // once: the page names no kind, it shows what each declares.
  let sources = null;

  async function loadSources() {
    if (sources) return;
    sources = await api('/v1/sources');
    $('cf-source').replaceChildren(...sources.map((s) => bw.el('option', { value: s.name }, `${s.name} — ${s.title}`)));
  }

  // readsURLs says whether a kind's query is a list of URLs (feeds), which
  // its keywords filter.
  function readsURLs(source) {
    const info = (sources || []).find((s) => s.name === source);
    return !!info && info.query === 'urls';
  }

  // queryTerms is the query as the API takes it: feed URLs are
  // comma-separated; a query in the language stays whole (the hub reads the
  // same split in /v1/queries/validate).
  function queryTerms(source, q) {
    if (q.trim() === '') return [];
    return readsURLs(source) ? q.split(',') : [q];
  }

  // Crawler form.

  function sourceChanged() {
    const source = $('cf-source').value;
    const urls = readsURLs(source);
    const info = (sources || []).find((s) => s.name === source);
    $('cf-keywords-field').hidden = !urls;
    $('cf-keywords-status').hidden = !urls;
    $('cf-query-label').textContent = urls ? 'Feed URLs (comma-separated)' : 'Query';
    $('cf-query').placeholder = (info && info.query_hint) || (urls ? 'https://example.com/feed.xml' : 'golang OR "go 1.23" -job lang:en');
  }

  function fillUsers() {
    const opts = bw.view.users.map((u) => bw.el('option', { value: String(u.id) }, u.name));
    $('cf-users').replaceChildren(...opts);
  }

  async function openCrawlerForm(c, userID) {
    try {
      await loadSources();
    } catch (e) {
      flash(`The source kinds could not be read: ${e.message}`);
      return;
    }
    form.mode = c ? 'edit' : 'add';
    form.id = c ? c.id : null;
    hideError('cf-error');
    fillUsers();
    $('cf-title').textContent = c ? `Edit crawler ${c.id}` : 'Add a crawler (a search)';
    $('cf-submit').textContent = c ? 'Save changes' : 'Add crawler';
    $('cf-user').value = c ? String(c.user_id) : (userID ? String(userID) : '');
    $('cf-user').disabled = !!c;
    $('cf-source').value = c ? c.source : sources[0].name;
    $('cf-source').disabled = !!c;
    $('cf-name').value = c ? (c.name || '') : '';
    $('cf-query').value = c ? (readsURLs(c.source) ? (c.query || []).join(',') : c.query_canonical || (c.query || []).join(',')) : '';
    $('cf-keywords').value = c ? (c.keywords || []).join(',') : '';
    $('cf-limit').value = c ? String(c.comment_limit) : '0';
    $('cf-retention').value = c && c.retention_from === 'crawler' ? c.retention : '';
    $('cf-enabled').checked = c ? c.enabled : true;
    for (const id of ['cf-query-status', 'cf-keywords-status']) {
      $(id).textContent = '';
      $(id).className = 'check';
    }
    sourceChanged();
    $('crawler-dialog').showModal();
    if (c || userID) $('cf-query').focus(); else $('cf-user').focus();
    if (c) scheduleCheck();
  }

  function scheduleCheck() {
    clearTimeout(form.checkTimer);
    form.checkTimer = setTimeout(checkQuery, VALIDATE_DELAY_MS);
  }

  // checkQuery asks the hub to validate the query (and a feed filter) as typed.
  async function checkQuery() {
    const seq = ++form.checkSeq;
    const source = $('cf-source').value;
    const query = $('cf-query').value;
    const keywords = readsURLs(source) ? $('cf-keywords').value : '';
    const status = $('cf-query-status');
    const kwStatus = $('cf-keywords-status');
    if (query.trim() === '') {
      status.textContent = '';
      status.className = 'check';
      return;
    }
    status.textContent = 'checking…';
    status.className = 'check check-wait';
    let result;
    try {
      result = await api('/v1/queries/validate', { method: 'POST', body: { source, query, keywords } });
    } catch (e) {
      if (seq !== form.checkSeq) return;
      if (e instanceof bw.AuthError) {
        showError('cf-error', e);
        return;
      }
      const reason = e instanceof bw.APIError ? e.reason : e.message;
      const onKeywords = reason.startsWith('keywords:');
      const target = onKeywords ? kwStatus : status;
      (onKeywords ? status : kwStatus).className = 'check';
      (onKeywords ? status : kwStatus).textContent = '';
      target.textContent = reason;
      target.className = 'check check-bad';
      return;
    }
    if (seq !== form.checkSeq) return;
    status.textContent = `✓ ${result.canonical} · query uuid ${result.query_uuid.slice(0, 8)}`;
    status.className = 'check check-ok';
    kwStatus.textContent = result.keywords_canonical ? `✓ ${result.keywords_canonical}` : '';
    kwStatus.className = result.keywords_canonical ? 'check check-ok' : 'check';
  }

  async function submitCrawler() {
    hideError('cf-error');
    const source = $('cf-source').value;
    const enabled = $('cf-enabled').checked;
    let limit;
    let userID;
    try {
      limit = intField('cf-limit', 'the comment limit');
      if (form.mode === 'add') userID = intField('cf-user', 'the user');
    } catch (e) {
      showError('cf-error', e);
      return;
    }
    const query = queryTerms(source, $('cf-query').value);
    const keywords = readsURLs(source) ? queryTerms('', $('cf-keywords').value) : [];
    // The hub checks the retention (30d, 36h); empty keeps the user's.
    const retention = $('cf-retention').value.trim();
    const name = $('cf-name').value.trim();
    try {
      if (form.mode === 'add') {
        const body = { user_id: userID, source, query, comment_limit: limit, enabled };
        if (name) body.name = name;
        if (keywords.length) body.keywords = keywords;
        if (retention) body.retention = retention;
        const c = await api('/v1/crawlers', { method: 'POST', body });
        flash(`Crawler ${c.id}${c.name ? ` (${c.name})` : ''} added: ${c.state}.`);
      } else {
        const body = { name, query, comment_limit: limit, enabled, retention: retention || '0' };
        if (readsURLs(source)) body.keywords = keywords; // [] clears the filter
        const c = await api(`/v1/crawlers/${encodeURIComponent(form.id)}`, { method: 'PATCH', body });
        flash(`Crawler ${c.id} saved.`);
      }
      $('crawler-dialog').close();
      bw.refreshNow();
    } catch (e) {
      showError('cf-error', e);
    }
  }

  // User form.

  function openUserForm(u) {
    form.mode = u ? 'limit' : 'add';
    form.id = u ? u.id : null;
    hideError('uf-error');
    $('uf-title').textContent = u ? `Change the limit of user ${u.id} (${u.name})` : 'Add user';
    $('uf-submit').textContent = u ? 'Save limit' : 'Add user';
    $('uf-name-field').hidden = !!u;
    $('uf-name').value = '';
    $('uf-limit').value = u ? String(u.comment_limit) : '0';
    $('uf-retention').value = u && u.retention ? u.retention : '';
    $('user-dialog').showModal();
    (u ? $('uf-limit') : $('uf-name')).focus();
  }

  async function submitUser() {
    hideError('uf-error');
    let limit;
    try {
      limit = intField('uf-limit', 'the comment limit');
    } catch (e) {
      showError('uf-error', e);
      return;
    }
    const retention = $('uf-retention').value.trim();
    try {
      if (form.mode === 'add') {
        const body = { name: $('uf-name').value, comment_limit: limit };
        if (retention) body.retention = retention;
        const u = await api('/v1/users', { method: 'POST', body });
        flash(`User ${u.id} (${u.name}) added.`);
      } else {
        const u = await api(`/v1/users/${encodeURIComponent(form.id)}`, { method: 'PATCH', body: { comment_limit: limit, retention: retention || '0' } });
        flash(`User ${u.id}'s limit is now ${u.comment_limit || 'none'}, its crawlers' retention ${u.retention || 'none'}.`);
      }
      $('user-dialog').close();
      bw.refreshNow();
    } catch (e) {
      showError('uf-error', e);
    }
  }

  // Row actions.

  async function setEnabled(id, enabled) {
    try {
      await api(`/v1/crawlers/${encodeURIComponent(id)}`, { method: 'PATCH', body: { enabled } });
      flash(`Crawler ${id} ${enabled ? 'enabled' : 'disabled'}.`);
    } catch (e) {
      if (e instanceof bw.AuthError) { bw.refreshNow(); return; }
      flash(`Crawler ${id} was not changed: ${e instanceof bw.APIError ? e.reason : e.message}`);
    }
    bw.refreshNow();
  }

  let pendingDelete = null;

  function confirmDelete(c) {
    pendingDelete = { kind: 'crawler', id: c.id };
    hideError('confirm-error');
    $('confirm-title').textContent = `Delete crawler ${c.id}?`;
    $('confirm-text').textContent = `Crawler ${c.id} (${c.source}: ${(c.query || []).join(', ')}) stops on its node ` +
      'and is removed from the hub. Its stored comments stay in the store. This cannot be undone.';
    $('confirm-dialog').showModal();
    $('confirm-dialog').querySelector('[data-close]').focus();
  }

  function confirmDeleteUser(u) {
    pendingDelete = { kind: 'user', id: u.id };
    hideError('confirm-error');
    $('confirm-title').textContent = `Delete user ${u.id}?`;
    $('confirm-text').textContent = `User ${u.id} (${u.name}) is removed from the hub. ` +
      'A user who still has crawlers is refused: delete the crawlers first. This cannot be undone.';
    $('confirm-dialog').showModal();
    $('confirm-dialog').querySelector('[data-close]').focus();
  }

  async function submitDelete() {
    const { kind, id } = pendingDelete;
    try {
      await api(`/v1/${kind}s/${encodeURIComponent(id)}`, { method: 'DELETE' });
      $('confirm-dialog').close();
      flash(`${kind === 'user' ? 'User' : 'Crawler'} ${id} deleted.`);
      bw.refreshNow();
    } catch (e) {
      showError('confirm-error', e);
    }
  }

  function onAction(ev) {
    const b = ev.target.closest('button[data-action]');
    if (!b) return;
    ev.stopPropagation();
    const id = Number(b.dataset.id);
    const crawler = bw.view.crawlers.find((c) => c.id === id);
    const user = bw.view.users.find((u) => u.id === id);
    switch (b.dataset.action) {
      case 'edit-crawler': if (crawler) openCrawlerForm(crawler); break;
      case 'enable-crawler': setEnabled(id, true); break;
      case 'disable-crawler': setEnabled(id, false); break;
      case 'delete-crawler': if (crawler) confirmDelete(crawler); break;
      case 'limit-user': if (user) openUserForm(user); break;
      case 'delete-user': if (user) confirmDeleteUser(user); break;
      case 'add-crawler-for': openCrawlerForm(null, id); break;
      default: break;
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('add-crawler').addEventListener('click', () => openCrawlerForm(null));
    $('add-user').addEventListener('click', () => openUserForm(null));
    $('crawlers').tBodies[0].addEventListener('click', onAction);
    $('users').tBodies[0].addEventListener('click', onAction);
    $('cf-source').addEventListener('change', () => { sourceChanged(); scheduleCheck(); });
    $('cf-query').addEventListener('input', scheduleCheck);
    $('cf-keywords').addEventListener('input', scheduleCheck);
    const onSubmit = (id, fn) => $(id).addEventListener('submit', (ev) => {
      ev.preventDefault();
      busy(ev.currentTarget, fn);
    });
    onSubmit('crawler-form', submitCrawler);
    onSubmit('user-form', submitUser);
    onSubmit('confirm-form', submitDelete);
    for (const b of document.querySelectorAll('dialog [data-close]')) {
      b.addEventListener('click', () => b.closest('dialog').close());
    }
  });
})();
