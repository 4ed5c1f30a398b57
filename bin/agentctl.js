#!/usr/bin/env node
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS launcher */
// agentctl launcher. In a checkout the TypeScript sources sit next to it and run through tsx:
// its CommonJS hook (tsx/cjs) for `require`, and its ESM hook (importing tsx/esm registers it
// with node:module's register) for the lazy `await import(…)`s the client API uses to load
// the approval store and the ledger's drivers only when needed (client/approvals.ts). With the
// CommonJS hook alone those imports fail: `Cannot find module '…/storage/approvals/approval-store'`
// (issue 31). The packed package ships no sources, only the compiled dist/.
// Below the Node floor (package.json engines; common/node-floor.ts) say so before loading
// anything: better-sqlite3 13 would crash the process on Node 20.
const NODE_FLOOR_MAJOR = 22;
if (Number.parseInt(process.versions.node, 10) < NODE_FLOOR_MAJOR) {
  process.stderr.write(
    `agent-loop-guard needs Node ${NODE_FLOOR_MAJOR} or newer (this is v${process.versions.node})\n`,
  );
  process.exit(1);
}
const { existsSync } = require('node:fs');
const { join } = require('node:path');

if (existsSync(join(__dirname, 'agentctl.ts'))) {
  require('tsx/cjs');
  import('tsx/esm').then(
    () => require('./agentctl.ts').run(),
    (err) => {
      process.stderr.write(`agentctl: cannot load tsx's ESM hook (tsx/esm): ${err.message}\n`);
      process.exitCode = 1;
    },
  );
} else {
  void require('../dist/bin/agentctl.js').run();
}
