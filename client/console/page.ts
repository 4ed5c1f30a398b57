/**
 * The console's one page: plain HTML, a little CSS and vanilla JS, no framework, no CDN. The
 * script polls `/api/inbox` every two seconds (the HttpOnly cookie authenticates it; the page
 * never holds the token) and draws the runs with DOM calls and `textContent` only, never
 * `innerHTML`: args, reports and traces are untrusted text (a model wrote them) and must show
 * as text. A Content-Security-Policy with a per-page nonce lets only this script and style run.
 *
 * It holds still: cards are keyed by run; a card whose run did not change is
 * not touched, a changed one has its view redrawn but keeps its form (focus, typed text) while
 * the stop it acts on is the same; new runs are appended below, and while the pointer is over
 * the list or a field has focus no card is inserted or removed at all: a fixed badge says
 * "N new" instead, so nothing moves under the pointer.
 */

/** What the page says about who is acting. */
export interface PageOptions {
  /** The CSP nonce of this response. */
  readonly nonce: string;
  /** Who acts, e.g. `alice (signed with her operator key)`. */
  readonly operator: string;
  /** How often the page refreshes, ms. */
  readonly refreshMs: number;
}

/** JSON a `<script>` block can hold: nothing in it can close the tag. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 18px;display:flex;gap:18px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:17px;margin:0}header .who,header .at{opacity:.8;font-size:13px}header .tools{margin-left:auto;display:flex;gap:8px}
main{padding:12px 18px;max-width:1200px}
h2{font-size:16px;margin:16px 0 6px;border-bottom:2px solid #ccd;padding-bottom:3px}
section h2{font-size:14px;border-bottom:1px dashed #ccd;color:#6a3b00}
.card{background:#fff;border:1px solid #d8dbe3;border-radius:6px;padding:10px 12px;margin:8px 0}
.card.gone{opacity:.55}
.card h3{font-size:14px;margin:0 0 4px;font-family:ui-monospace,monospace;word-break:break-all}
.meta{color:#555;font-size:12px;margin-bottom:6px}.meta span{margin-right:12px}
.call{background:#fff8e6;border:1px solid #f0d890;border-radius:4px;padding:6px 8px;margin:6px 0}
.fp{color:#666;font-size:12px}.warn{background:#fde8e8;color:#7a0000;border-radius:4px;padding:4px 6px;margin:4px 0;font-size:12px}
.amounts{font-size:13px;margin:4px 0}.amounts b{font-family:ui-monospace,monospace}
pre .esc{background:#a32020;color:#fff;border-radius:2px;padding:0 2px}pre .nonascii{background:#ffe08a;outline:1px solid #c08000}
pre{background:#f2f3f6;padding:6px 8px;border-radius:4px;overflow:auto;max-height:220px;margin:4px 0;white-space:pre-wrap;word-break:break-all;font-size:12px}
details{margin:4px 0}summary{cursor:pointer;color:#345}
table{border-collapse:collapse;font-size:12px;width:100%}td,th{border-bottom:1px solid #e3e5ea;padding:2px 6px;text-align:left;vertical-align:top}
form{display:flex;gap:8px;flex-wrap:wrap;align-items:center;margin-top:8px}
input{padding:3px 6px}input[name=reason]{min-width:320px}input[name=ttl]{width:60px}input[name=raise]{width:110px}
button{padding:4px 10px;border-radius:4px;border:1px solid #889;background:#fff;cursor:pointer}
button.approve{background:#1f7a3a;color:#fff;border-color:#1f7a3a}button.deny,button.stop{background:#a32020;color:#fff;border-color:#a32020}
button.resume{background:#1d4fa3;color:#fff;border-color:#1d4fa3}
.msg{margin-top:6px;font-size:13px}.msg.bad{color:#a32020}.msg.good{color:#1f7a3a}
.pager{font-size:13px;color:#444;display:flex;gap:8px;align-items:center}
#flash{position:fixed;left:12px;bottom:12px;max-width:560px;z-index:10}#flash div{padding:4px 8px;margin:6px 0;border-radius:4px;box-shadow:0 1px 4px #0003}#flash .bad{background:#fde8e8}#flash .good{background:#e6f6ea}
#held{position:fixed;right:12px;bottom:12px;background:#1d4fa3;color:#fff;padding:6px 10px;border-radius:4px;z-index:10;box-shadow:0 1px 4px #0005}
#held button{margin-left:8px}
.empty{color:#666;font-style:italic}
`;

/** The page's script (runs in the browser; no build step). */
const SCRIPT = String.raw`
'use strict';
const CFG = JSON.parse(document.getElementById('cfg').textContent);
history.replaceState(null, '', '/');
const messages = new Map(); // runId -> {ok, text}: survives redraws
const view = { page: 0, rpage: 0, q: '' };
const cards = new Map(); // runId -> {el, sig, formKey}
const $ = (id) => document.getElementById(id);
const main = $('main');
let pointerIn = false;
let pending = null; // the newest inbox not drawn yet (held)
main.addEventListener('pointerenter', () => { pointerIn = true; });
main.addEventListener('pointerleave', () => { pointerIn = false; if (pending) apply(pending); });
main.addEventListener('focusout', () => setTimeout(() => { if (pending && !holding()) apply(pending); }, 0));

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') e.textContent = v;
    else if (k === 'cls') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k) e.append(k);
  return e;
}
const pretty = (v) => JSON.stringify(v, null, 2);

async function api(path, body) {
  const res = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    credentials: 'same-origin',
    headers: { 'x-console-request': '1', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  let data = null;
  try { data = await res.json(); } catch { data = { ok: false, message: 'HTTP ' + res.status }; }
  return { status: res.status, data };
}

function flash(ok, text) {
  const box = $('flash');
  box.prepend(el('div', { cls: ok ? 'good' : 'bad', role: 'status', text }));
  while (box.children.length > 4) box.lastChild.remove();
  setTimeout(() => box.lastChild && box.lastChild.remove(), 15000);
}

async function act(action, runId, body, button) {
  button.disabled = true;
  try {
    const { status, data } = await api('/api/' + action, body);
    const text = (data && data.message) || 'HTTP ' + status;
    messages.set(runId, { ok: status === 200, text });
    flash(status === 200, runId + ': ' + text);
  } catch (err) {
    messages.set(runId, { ok: false, text: String(err) });
  } finally {
    button.disabled = false;
    showMessage(runId);
    await refresh();
  }
}

/** The answer to a card's last action, in the card (its form and fields untouched). */
function showMessage(runId) {
  const c = cards.get(runId);
  const m = messages.get(runId);
  if (!c || !m) return;
  let box = c.el.querySelector(':scope > .msg');
  if (!box) { box = el('div', { role: 'status' }); c.el.append(box); }
  box.className = 'msg ' + (m.ok ? 'good' : 'bad');
  box.textContent = m.text;
}

function field(form, name) { return form.querySelector('[name="' + name + '"]').value; }

function details(key, summary, body) {
  const d = el('details', { 'data-key': key }, el('summary', { text: summary }), body);
  const kept = document.querySelector('details[data-key="' + CSS.escape(key) + '"]');
  if (kept && kept.open) d.open = true;
  return d;
}

function traceTable(runId, records, total) {
  const t = el('table', {}, el('tr', {}, ...['step', 'phase', 'tool', 'decision', 'reason'].map((h) => el('th', { text: h }))));
  for (const r of records)
    t.append(el('tr', {}, ...[r.step, r.phase, r.fingerprint || r.tool || '', r.decision, r.reason || ''].map((v) => el('td', { text: String(v) }))));
  return details(runId + ':trace', 'trace: last ' + records.length + ' of ' + total + ' records', t);
}

/** The args as a person must check them: invisible characters escaped, non-ASCII marked. */
function argsBox(call) {
  const v = call.view;
  const pre = el('pre', { cls: 'args' });
  for (const s of v.segments) pre.append(s.k === 't' ? document.createTextNode(s.s) : el('span', { cls: s.k === 'x' ? 'esc' : 'nonascii', text: s.s }));
  const box = el('div', { cls: 'call' },
    el('div', { text: 'blocked call: ' + call.tool }),
    el('div', { cls: 'digest', text: 'approves exactly the call with digest ' + (call.argsDigest || '(none recorded: cannot be approved)') }),
    el('div', { cls: 'fp', text: 'repeat-counting fingerprint (the guard\'s, not a security hash): ' + call.fingerprint }));
  if (v.warnings.length) {
    const w = el('div', { cls: 'warn', role: 'alert' }, el('div', { text: '⚠ invisible or non-ASCII characters: check them before deciding' }));
    for (const line of v.warnings) w.append(el('div', { text: line }));
    box.append(w);
  }
  if (v.amounts.length) {
    const a = el('div', { cls: 'amounts' });
    for (const x of v.amounts) a.append(el('div', {}, document.createTextNode(x.arg + ' = '), el('b', { text: x.shown }), document.createTextNode(' (raw ' + x.raw + ', as the tool declares)')));
    box.append(a);
  }
  box.append(pre);
  return box;
}

function waitingInfo(r) {
  const info = el('div', { cls: 'info' });
  info.append(el('h3', { text: r.runId }));
  info.append(el('div', { cls: 'meta' },
    el('span', { text: r.terminalState + ' · ' + r.reason }),
    el('span', { text: 'stop ' + (r.stopRef || '-') }),
    el('span', { text: 'steps ' + r.steps }),
    el('a', { href: r.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' })));
  if (r.goal) info.append(el('div', { text: 'goal: ' + r.goal }));
  info.append(el('div', { cls: 'ended', text: 'ended: ' + r.ended }));
  if (r.finalMessage !== null) info.append(el('div', { cls: 'final', text: 'final message: ' + r.finalMessage }));
  if (r.blockedCall) info.append(argsBox(r.blockedCall));
  info.append(details(r.runId + ':report', 'StopReport: ' + (r.report.resume_condition || r.report.next_allowed_action), el('pre', { text: pretty(r.report) })));
  info.append(traceTable(r.runId, r.trace, r.traceTotal));
  return info;
}

function reasonInput(placeholder) { return el('input', { name: 'reason', type: 'text', placeholder, 'aria-label': 'reason' }); }

/** The form of a waiting run; its key says when it must be rebuilt (another stop or call). */
function waitingForm(r) {
  const form = el('form', {});
  form.addEventListener('submit', (e) => e.preventDefault());
  form.append(reasonInput('reason (what you checked)'));
  if (r.waitsOnChild) {
    form.append(el('div', { cls: 'empty', text: 'waits on its sub-agent ' + r.waitsOnChild + ': act on that run; this one continues when it does' }));
    form.append(stopButton(form, r.runId, 'Stop the tree'));
  } else if (r.needsApproval) {
    form.append(el('label', { text: 'valid for ' }), el('input', { name: 'ttl', type: 'text', value: '15m', 'aria-label': 'ttl' }));
    const yes = el('button', { cls: 'approve', type: 'button', text: 'Approve & resume' });
    yes.onclick = () => act('approve', r.runId, { runId: r.runId, stopRef: r.stopRef, fingerprint: r.blockedCall.fingerprint, argsDigest: r.blockedCall.argsDigest || undefined, reason: field(form, 'reason'), ttl: field(form, 'ttl') }, yes);
    const no = el('button', { cls: 'deny', type: 'button', text: 'Deny' });
    no.onclick = () => act('deny', r.runId, { runId: r.runId, stopRef: r.stopRef, fingerprint: r.blockedCall.fingerprint, argsDigest: r.blockedCall.argsDigest || undefined, reason: field(form, 'reason') }, no);
    form.append(yes, no);
  } else {
    if (r.raise) form.append(el('label', { text: 'raise ' + r.raise.key + ' (now ' + r.raise.current + ') to ' }), el('input', { name: 'raise', type: 'number', min: '1', 'aria-label': 'raise' }));
    const go = el('button', { cls: 'resume', type: 'button', text: 'Resume' });
    go.onclick = () => {
      const body = { runId: r.runId, stopRef: r.stopRef, reason: field(form, 'reason') };
      if (r.raise && field(form, 'raise') !== '') body.raise = { [r.raise.key]: Number(field(form, 'raise')) };
      act('resume', r.runId, body, go);
    };
    form.append(go);
  }
  return form;
}
const waitingFormKey = (r) => JSON.stringify([r.stopRef, r.blockedCall && r.blockedCall.fingerprint, r.blockedCall && r.blockedCall.argsDigest, r.needsApproval, r.waitsOnChild, r.raise]);

function stopButton(form, runId, text) {
  const b = el('button', { cls: 'stop', type: 'button', text });
  b.onclick = () => act('stop', runId, { runId, reason: field(form, 'reason') }, b);
  return b;
}

function runningInfo(r) {
  return el('div', { cls: 'info' }, el('h3', { text: r.runId }),
    el('div', { cls: 'meta' }, el('span', { text: 'running · steps ' + (r.steps ?? '-') }), el('span', { text: 'since ' + r.startedAt }),
      el('a', { href: r.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' })));
}
function conversationInfo(r) {
  return el('div', { cls: 'info' }, el('h3', { text: r.runId }),
    el('div', { cls: 'meta' }, el('span', { text: 'conversation · its agent waits for its person (agentctl send / replies) · steps ' + (r.steps ?? '-') }),
      el('span', { text: 'since ' + r.startedAt }),
      el('a', { href: r.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' })));
}
function runningForm(r) {
  const form = el('form', {});
  form.addEventListener('submit', (e) => e.preventDefault());
  form.append(reasonInput('reason'), stopButton(form, r.runId, 'Stop'));
  return form;
}

/**
 * Draws run r into its keyed card: an unchanged card is not touched; a changed one gets a new
 * view, and a new form only when the stop it acts on changed (typed text carried over).
 */
function upsert(r, kind) {
  const sig = JSON.stringify(r);
  const formKey = kind === 'w' ? waitingFormKey(r) : 'running';
  let c = cards.get(r.runId);
  if (c && c.kind === kind && c.sig === sig) return c.el;
  const info = kind === 'w' ? waitingInfo(r) : kind === 'c' ? conversationInfo(r) : runningInfo(r);
  if (!c || c.kind !== kind) {
    const card = el('div', { cls: 'card', 'data-run': r.runId }, info, kind === 'w' ? waitingForm(r) : runningForm(r));
    c = { el: card, sig, formKey, kind };
    cards.set(r.runId, c);
    showMessage(r.runId);
    return card;
  }
  c.el.querySelector(':scope > .info').replaceWith(info);
  if (c.formKey !== formKey) {
    const old = c.el.querySelector(':scope > form');
    const typed = old.querySelector('[name=reason]').value;
    const focused = old.contains(document.activeElement) ? document.activeElement : null;
    const form = waitingForm(r);
    const reason = form.querySelector('[name=reason]');
    reason.value = typed;
    old.replaceWith(form);
    if (focused && focused.name === 'reason') { reason.focus(); reason.setSelectionRange(focused.selectionStart, focused.selectionEnd); }
  }
  c.el.classList.remove('gone');
  c.sig = sig;
  c.formKey = formKey;
  return c.el;
}

/** Places the cards of runs under parent in order: kept cards stay, new ones go below. */
function place(parent, runs, kind, sectionOf) {
  const ids = new Set(runs.map((r) => r.runId));
  for (const [id, c] of cards) if (c.kind === kind && !ids.has(id)) { c.el.remove(); cards.delete(id); }
  for (const r of runs) {
    const card = upsert(r, kind);
    const home = sectionOf ? sectionOf(r) : parent;
    if (card.parentNode !== home) home.append(card);
  }
}

function section(reason) {
  const box = $('waiting');
  let sec = [...box.children].find((s) => s.dataset && s.dataset.reason === reason);
  if (!sec) { sec = el('section', { 'data-reason': reason }, el('h2', { text: reason })); box.append(sec); }
  return sec;
}

const holding = () => pointerIn || (document.activeElement && main.contains(document.activeElement) && document.activeElement.tagName === 'INPUT');

function pager(box, total, page, pageSize, key) {
  box.replaceChildren();
  if (total <= pageSize && page === 0) return;
  const from = page * pageSize + 1;
  box.append(el('span', { text: 'showing ' + Math.min(from, total) + '–' + Math.min(total, from + pageSize - 1) + ' of ' + total }));
  const prev = el('button', { type: 'button', text: '◀ newer' });
  prev.disabled = page === 0;
  prev.onclick = () => { view[key] = page - 1; refresh(true); };
  const next = el('button', { type: 'button', text: 'older ▶' });
  next.disabled = from + pageSize > total;
  next.onclick = () => { view[key] = page + 1; refresh(true); };
  box.append(prev, next);
}

/** What a held update would change on the page. */
function changesOf(inbox) {
  const now = new Set([...inbox.waiting, ...inbox.running, ...(inbox.conversations || [])].map((r) => r.runId));
  let added = 0, gone = 0;
  for (const id of now) if (!cards.has(id)) added++;
  for (const id of cards.keys()) if (!now.has(id)) gone++;
  return { added, gone };
}

function apply(inbox) {
  const { added, gone } = changesOf(inbox);
  if (holding() && cards.size > 0 && (added || gone)) {
    pending = inbox;
    const held = $('held');
    held.replaceChildren(el('span', { text: (added ? added + ' new' : '') + (added && gone ? ' · ' : '') + (gone ? gone + ' gone' : '') + ' — held while the pointer is on the list' }));
    const show = el('button', { type: 'button', text: 'show' });
    show.onclick = () => { pointerIn = false; if (document.activeElement) document.activeElement.blur(); apply(pending); };
    held.append(show);
    held.hidden = false;
    // What is on the page may still change in place: a run that left is marked, not removed.
    for (const [id, c] of cards) if (!inbox.waiting.concat(inbox.running, inbox.conversations).some((r) => r.runId === id)) c.el.classList.add('gone');
    return;
  }
  pending = null;
  $('held').hidden = true;
  $('wh').textContent = 'Waiting for a person (' + inbox.waitingTotal + ')';
  $('rh').textContent = 'Running (' + inbox.runningTotal + ')';
  pager($('wpager'), inbox.waitingTotal, inbox.page, inbox.pageSize, 'page');
  pager($('rpager'), inbox.runningTotal, inbox.runningPage, inbox.pageSize, 'rpage');
  const wbox = $('waiting');
  for (const e of [...wbox.children]) if (!e.dataset || !e.dataset.reason) e.remove();
  place(wbox, inbox.waiting, 'w', (r) => section(r.reason));
  for (const sec of [...wbox.children]) {
    const n = sec.querySelectorAll(':scope > .card').length;
    if (n === 0) sec.remove();
    else sec.firstChild.textContent = sec.dataset.reason + ' (' + n + ')';
  }
  if (inbox.waiting.length === 0) wbox.append(el('div', { cls: 'empty', text: inbox.waitingTotal ? 'no run on this page' : 'no run is waiting for a person' }));
  const ubox = $('unanswered');
  ubox.replaceChildren();
  if (inbox.unanswered.length) {
    const sec = el('section', { 'data-reason': 'unanswered' }, el('h2', { text: 'Not answering (' + inbox.unanswered.length + ')' }));
    for (const u of inbox.unanswered)
      sec.append(el('div', { cls: 'card', 'data-run': u.runId }, el('h3', { text: u.runId }),
        el('div', { cls: 'meta' }, el('span', { text: u.why }), el('a', { href: u.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' }))));
    ubox.append(sec);
  }
  const rbox = $('running');
  for (const e of [...rbox.children]) if (!e.classList.contains('card')) e.remove();
  place(rbox, inbox.running, 'r');
  if (inbox.running.length === 0) rbox.append(el('div', { cls: 'empty', text: 'no run is running' }));
  $('ch').textContent = 'Conversations waiting for their person, not an operator (' + inbox.conversationsTotal + ')';
  const cbox = $('conversations');
  for (const e of [...cbox.children]) if (!e.classList.contains('card')) e.remove();
  place(cbox, inbox.conversations, 'c');
  if (inbox.conversations.length === 0) cbox.append(el('div', { cls: 'empty', text: 'no conversation waits for its person' }));
}

let inflight = false;
async function refresh(reset) {
  if (inflight && !reset) return;
  inflight = true;
  try {
    const qs = new URLSearchParams({ page: String(view.page), rpage: String(view.rpage) });
    if (view.q) qs.set('q', view.q);
    const { status, data } = await api('/api/inbox?' + qs);
    $('at').textContent = status === 200 ? 'updated ' + new Date().toLocaleTimeString() : 'error: ' + data.message;
    if (status !== 200) return;
    if (reset) { for (const c of cards.values()) c.el.remove(); cards.clear(); pending = null; }
    apply(data);
  } catch (err) {
    $('at').textContent = 'offline: ' + err;
  } finally {
    inflight = false;
  }
}
$('q').addEventListener('change', () => { view.q = $('q').value.trim(); view.page = 0; view.rpage = 0; refresh(true); });
$('rotate').onclick = async () => {
  const { status, data } = await api('/api/token', {});
  flash(status === 200, data.message || 'HTTP ' + status);
};
refresh();
setInterval(refresh, CFG.refreshMs);
`;

/** The page's HTML. */
export function renderPage(o: PageOptions): string {
  const cfg = scriptJson({ refreshMs: o.refreshMs });
  const who = o.operator.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="icon" href="data:,"><title>agent-loop-guard · approvals inbox</title><style nonce="${o.nonce}">${STYLE}</style></head>
<body><header><h1>agent-loop-guard · approvals inbox</h1><span class="who">acting as ${who}</span><span class="at" id="at">loading…</span>
<span class="tools"><input id="q" type="search" placeholder="run id starts with…" aria-label="search runs"><button id="rotate" type="button" title="issue a new token: the old URL and cookie stop working">new token</button></span></header>
<div id="flash" aria-live="polite"></div><div id="held" role="status" hidden></div>
<main id="main"><h2 id="wh">Waiting for a person</h2><div class="pager" id="wpager"></div><div id="waiting"><div class="empty">loading…</div></div><div id="unanswered"></div>
<h2 id="rh">Running</h2><div class="pager" id="rpager"></div><div id="running"></div>
<h2 id="ch">Conversations waiting for their person</h2><div id="conversations"></div></main>
<script id="cfg" type="application/json">${cfg}</script>
<script nonce="${o.nonce}">${SCRIPT}</script>
</body></html>`;
}
