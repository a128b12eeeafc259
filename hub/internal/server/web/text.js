// Black Widow hub dashboard, text: how the page builds elements and shows
// what it did not write itself. Every piece of data goes into the page as
// text (text nodes, attributes, never markup): comment text, authors,
// names and errors come from outside and are hostile input. Formatting of
// numbers and times for the eye is here too. Loaded before app.js, which
// hands these on to the page's other parts.
'use strict';

(() => {
  // el builds an element. Children that are not nodes become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // bidi isolates text that comes from outside the page (crawled authors,
  // texts and URLs, queries, names, errors): a right-to-left override or
  // other bidi control inside it (invoice\u202etxt.exe) cannot reorder what
  // stands around it. The text itself is shown as it is.
  function bidi(text) {
    return el('bdi', {}, text == null ? '' : String(text));
  }

  // HIDDEN_CHARS are the bidi controls and zero-width characters: invisible,
  // yet able to make a name read as another (invoice\u202etxt.exe shows as
  // "invoiceexe.txt").
  const HIDDEN_CHARS = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

  // shown isolates a short piece of crawled text where spoofing matters
  // (an author, a URL) and makes its hidden characters visible as
  // [U+XXXX] marks, so what is read is what is there.
  function shown(text) {
    const s = text == null ? '' : String(text);
    const out = el('bdi', {});
    let last = 0;
    for (const m of s.matchAll(HIDDEN_CHARS)) {
      if (m.index > last) out.append(s.slice(last, m.index));
      const code = 'U+' + m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
      out.append(el('span', { class: 'hidden-char', title: `hidden character ${code}` }, `[${code}]`));
      last = m.index + m[0].length;
    }
    if (last < s.length) out.append(s.slice(last));
    return out;
  }

  function badge(text, cls) {
    return el('span', { class: 'badge ' + cls }, text);
  }

  function stateClass(state) {
    return /^[a-z_]+$/.test(state || '') ? 's-' + state : 's-unknown';
  }

  function shortID(id) { return (id || '').slice(0, 8); }

  function truncate(s, n) {
    const chars = Array.from(s);
    return chars.length <= n ? s : chars.slice(0, n - 1).join('') + '…';
  }

  function fmtNumber(n) { return Number(n || 0).toLocaleString('en-US'); }

  function fmtRate(perMin) {
    if (!perMin) return '0';
    if (perMin < 10) return perMin.toFixed(1);
    return fmtNumber(Math.round(perMin));
  }

  function ago(iso) {
    const t = Date.parse(iso);
    if (!t || t < 0) return 'never';
    const s = Math.max(0, (Date.now() - t) / 1000);
    if (s < 60) return s.toFixed(1) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    return Math.round(s / 3600) + ' h ago';
  }


  const pad2 = (n) => String(n).padStart(2, '0');

  // dateTime shows a time as local YYYY-MM-DD HH:MM:SS.
  function dateTime(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  }

  // clock shows a time as local HH:MM:SS.
  function clock(iso) {
    return dateTime(iso).slice(11);
  }

  // safeURL returns an http(s) URL to link to, or null.
  function safeURL(raw) {
    try {
      const u = new URL(raw);
      return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  window.bwText = Object.freeze({
    el, bidi, shown, badge, stateClass, shortID, truncate, fmtNumber, fmtRate, ago, dateTime, clock, safeURL,
  });
})();
