/**
 * The console's one page: plain HTML, a little CSS and vanilla JS, no framework, no CDN. The
 * script polls `/api/inbox` every two seconds with the console's token and draws the runs
 * with DOM calls and `textContent` only, never `innerHTML`: args, reports and traces are
 * untrusted text (a model wrote them) and must show as text. A Content-Security-Policy with a
 * per-page nonce lets only this script and style run.
 */

/** What the page says about who is acting. */
export interface PageOptions {
  /** The console's token (the page sends it with every request). */
  readonly token: string;
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
header h1{font-size:17px;margin:0}header .who,header .at{opacity:.8;font-size:13px}
main{padding:12px 18px;max-width:1200px}
h2{font-size:16px;margin:16px 0 6px;border-bottom:2px solid #ccd;padding-bottom:3px}
section h2{font-size:14px;border-bottom:1px dashed #ccd;color:#6a3b00}
.card{background:#fff;border:1px solid #d8dbe3;border-radius:6px;padding:10px 12px;margin:8px 0}
.card h3{font-size:14px;margin:0 0 4px;font-family:ui-monospace,monospace;word-break:break-all}
.meta{color:#555;font-size:12px;margin-bottom:6px}.meta span{margin-right:12px}
.call{background:#fff8e6;border:1px solid #f0d890;border-radius:4px;padding:6px 8px;margin:6px 0}
pre{background:#f2f3f6;padding:6px 8px;border-radius:4px;overflow:auto;max-height:220px;margin:4px 0;white-space:pre-wrap;word-break:break-all;font-size:12px}
details{margin:4px 0}summary{cursor:pointer;color:#345}
table{border-collapse:collapse;font-size:12px;width:100%}td,th{border-bottom:1px solid #e3e5ea;padding:2px 6px;text-align:left;vertical-align:top}
form{display:flex;gap:8px;flex-wrap:wrap;align-items:center;margin-top:8px}
input{padding:3px 6px}input[name=reason]{min-width:320px}input[name=ttl]{width:60px}input[name=raise]{width:110px}
button{padding:4px 10px;border-radius:4px;border:1px solid #889;background:#fff;cursor:pointer}
button.approve{background:#1f7a3a;color:#fff;border-color:#1f7a3a}button.deny,button.stop{background:#a32020;color:#fff;border-color:#a32020}
button.resume{background:#1d4fa3;color:#fff;border-color:#1d4fa3}
.msg{margin-top:6px;font-size:13px}.msg.bad{color:#a32020}.msg.good{color:#1f7a3a}
#flash{padding:0 18px;max-width:1200px}#flash div{padding:4px 8px;margin:6px 0;border-radius:4px}#flash .bad{background:#fde8e8}#flash .good{background:#e6f6ea}
.empty{color:#666;font-style:italic}
`;

/** The page's script (runs in the browser; no build step). */
const SCRIPT = String.raw`
'use strict';
const CFG = JSON.parse(document.getElementById('cfg').textContent);
history.replaceState(null, '', '/');
const messages = new Map(); // runId -> {ok, text}: survives redraws
let lastJson = '';

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
    headers: { authorization: 'Bearer ' + CFG.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  let data = null;
  try { data = await res.json(); } catch { data = { ok: false, message: 'HTTP ' + res.status }; }
  return { status: res.status, data };
}

function flash(ok, text) {
  const box = document.getElementById('flash');
  box.prepend(el('div', { cls: ok ? 'good' : 'bad', role: 'status', text }));
  while (box.children.length > 5) box.lastChild.remove();
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
    lastJson = '';
    await refresh();
  }
}

function field(form, name) { return form.querySelector('[name="' + name + '"]').value; }

function input(runId, name, attrs) {
  const id = runId + ':' + name;
  const e = el('input', { name, 'data-key': id, ...attrs });
  const kept = document.querySelector('[data-key="' + CSS.escape(id) + '"]');
  if (kept) e.value = kept.value;
  return e;
}

/** A <details> that stays open across redraws when the person opened it. */
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

function waitingCard(r) {
  const card = el('div', { cls: 'card', 'data-run': r.runId });
  card.append(el('h3', { text: r.runId }));
  card.append(el('div', { cls: 'meta' },
    el('span', { text: r.terminalState + ' · ' + r.reason }),
    el('span', { text: 'stop ' + (r.stopRef || '-') }),
    el('span', { text: 'steps ' + r.steps }),
    el('a', { href: r.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' })));
  if (r.goal) card.append(el('div', { text: 'goal: ' + r.goal }));
  if (r.blockedCall) {
    card.append(el('div', { cls: 'call' },
      el('div', { text: 'blocked call: ' + r.blockedCall.tool }),
      el('div', { cls: 'digest', text: 'approves exactly the call with digest ' + (r.blockedCall.argsDigest || '(none recorded: cannot be approved)') }),
      el('div', { cls: 'fp', text: 'repeat fingerprint (not a security check): ' + r.blockedCall.fingerprint }),
      el('pre', { cls: 'args', text: pretty(r.blockedCall.args) })));
  }
  card.append(details(r.runId + ':report', 'StopReport: ' + (r.report.resume_condition || r.report.next_allowed_action), el('pre', { text: pretty(r.report) })));
  card.append(traceTable(r.runId, r.trace, r.traceTotal));
  const form = el('form', {});
  form.addEventListener('submit', (e) => e.preventDefault());
  const reason = input(r.runId, 'reason', { type: 'text', placeholder: 'reason (what you checked)', 'aria-label': 'reason' });
  form.append(reason);
  if (r.waitsOnChild) {
    // The parent waits on its stopped sub-agent: act on the child; Stop here stops the subtree.
    form.append(el('div', { cls: 'empty', text: 'waits on its sub-agent ' + r.waitsOnChild + ': act on that run; this one continues when it does' }));
    form.append(stopButton(form, r.runId, 'Stop the tree'));
  } else if (r.needsApproval) {
    form.append(el('label', { text: 'valid for ' }), input(r.runId, 'ttl', { type: 'text', value: '15m', 'aria-label': 'ttl' }));
    const yes = el('button', { cls: 'approve', type: 'button', text: 'Approve & resume' });
    yes.onclick = () => act('approve', r.runId, { runId: r.runId, stopRef: r.stopRef, fingerprint: r.blockedCall.fingerprint, argsDigest: r.blockedCall.argsDigest || undefined, reason: field(form, 'reason'), ttl: field(form, 'ttl') }, yes);
    const no = el('button', { cls: 'deny', type: 'button', text: 'Deny' });
    no.onclick = () => act('deny', r.runId, { runId: r.runId, stopRef: r.stopRef, fingerprint: r.blockedCall.fingerprint, argsDigest: r.blockedCall.argsDigest || undefined, reason: field(form, 'reason') }, no);
    form.append(yes, no);
  } else {
    if (r.raise) form.append(el('label', { text: 'raise ' + r.raise.key + ' (now ' + r.raise.current + ') to ' }), input(r.runId, 'raise', { type: 'number', min: '1', 'aria-label': 'raise' }));
    const go = el('button', { cls: 'resume', type: 'button', text: 'Resume' });
    go.onclick = () => {
      const body = { runId: r.runId, stopRef: r.stopRef, reason: field(form, 'reason') };
      if (r.raise && field(form, 'raise') !== '') body.raise = { [r.raise.key]: Number(field(form, 'raise')) };
      act('resume', r.runId, body, go);
    };
    form.append(go);
  }
  return withMessage(card, form, r.runId);
}

/** The card with its form and the answer to its last action. */
function withMessage(card, form, runId) {
  card.append(form);
  const m = messages.get(runId);
  if (m) card.append(el('div', { cls: 'msg ' + (m.ok ? 'good' : 'bad'), role: 'status', text: m.text }));
  return card;
}

/** A Stop button (the kill switch) for the run, with the form's reason. */
function stopButton(form, runId, text) {
  const b = el('button', { cls: 'stop', type: 'button', text });
  b.onclick = () => act('stop', runId, { runId, reason: field(form, 'reason') }, b);
  return b;
}

function runningCard(r) {
  const card = el('div', { cls: 'card', 'data-run': r.runId });
  card.append(el('h3', { text: r.runId }));
  card.append(el('div', { cls: 'meta' }, el('span', { text: 'running · steps ' + (r.steps ?? '-') }), el('span', { text: 'since ' + r.startedAt }),
    el('a', { href: r.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' })));
  const form = el('form', {});
  form.addEventListener('submit', (e) => e.preventDefault());
  form.append(input(r.runId, 'reason', { type: 'text', placeholder: 'reason', 'aria-label': 'reason' }));
  form.append(stopButton(form, r.runId, 'Stop'));
  return withMessage(card, form, r.runId);
}

function draw(inbox) {
  const main = el('main', { id: 'main' });
  const groups = new Map();
  for (const r of inbox.waiting) { if (!groups.has(r.reason)) groups.set(r.reason, []); groups.get(r.reason).push(r); }
  main.append(el('h2', { text: 'Waiting for a person (' + inbox.waiting.length + ')' }));
  if (inbox.waiting.length === 0) main.append(el('div', { cls: 'empty', text: 'no run is waiting for a person' }));
  for (const [reason, runs] of [...groups].sort((a, b) => a[0].localeCompare(b[0]))) {
    const sec = el('section', { 'data-reason': reason }, el('h2', { text: reason + ' (' + runs.length + ')' }));
    for (const r of runs) sec.append(waitingCard(r));
    main.append(sec);
  }
  if (inbox.unanswered.length) {
    const sec = el('section', { 'data-reason': 'unanswered' }, el('h2', { text: 'Not answering (' + inbox.unanswered.length + ')' }));
    for (const u of inbox.unanswered)
      sec.append(el('div', { cls: 'card', 'data-run': u.runId }, el('h3', { text: u.runId }),
        el('div', { cls: 'meta' }, el('span', { text: u.why }), el('a', { href: u.uiUrl, target: '_blank', rel: 'noopener noreferrer', text: 'open in Temporal Web UI' }))));
    main.append(sec);
  }
  main.append(el('h2', { text: 'Running (' + inbox.running.length + ')' }));
  if (inbox.running.length === 0) main.append(el('div', { cls: 'empty', text: 'no run is running' }));
  for (const r of inbox.running) main.append(runningCard(r));
  document.getElementById('main').replaceWith(main);
}

async function refresh() {
  try {
    const { status, data } = await api('/api/inbox');
    document.getElementById('at').textContent = status === 200 ? 'updated ' + new Date().toLocaleTimeString() : 'error: ' + data.message;
    if (status !== 200) return;
    const json = JSON.stringify({ w: data.waiting, r: data.running, u: data.unanswered, m: [...messages] });
    if (json === lastJson) return;
    lastJson = json;
    draw(data);
  } catch (err) {
    document.getElementById('at').textContent = 'offline: ' + err;
  }
}
refresh();
setInterval(refresh, CFG.refreshMs);
`;

/** The page's HTML. */
export function renderPage(o: PageOptions): string {
  const cfg = scriptJson({ token: o.token, refreshMs: o.refreshMs });
  const who = o.operator.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<link rel="icon" href="data:,"><title>agent-loop-guard · approvals inbox</title><style nonce="${o.nonce}">${STYLE}</style></head>
<body><header><h1>agent-loop-guard · approvals inbox</h1><span class="who">acting as ${who}</span><span class="at" id="at">loading…</span></header>
<div id="flash" aria-live="polite"></div>
<main id="main"><div class="empty">loading…</div></main>
<script id="cfg" type="application/json">${cfg}</script>
<script nonce="${o.nonce}">${SCRIPT}</script>
</body></html>`;
}
