#!/usr/bin/env node
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS launcher */
// agentctl launcher. In a checkout the TypeScript sources sit next to it and run through tsx:
// its CommonJS hook (tsx/cjs) for `require`, and its ESM hook (importing tsx/esm registers it
// with node:module's register) for the lazy `await import(…)`s the client API uses to load
// the approval store and the ledger's drivers only when needed (client/approvals.ts). With the
// CommonJS hook alone those imports fail: `Cannot find module '…/storage/approvals/approval-store'`.
// The packed package ships no sources, only the compiled dist/.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const checkout = existsSync(join(__dirname, 'agentctl.ts'));
if (checkout) require('tsx/cjs');
// Below the Node floor (package.json engines) say so, with the remedy, before loading anything
// else: the one check of common/node-floor.ts, which loads nothing itself.
const floor = require(checkout ? '../common/node-floor.ts' : '../dist/common/node-floor.js');
const problem = floor.nodeFloorProblem(process.versions.node, floor.currentCommand('agentctl'));
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}

if (checkout) {
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
