#!/usr/bin/env node
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS launcher */
// agentctl launcher. In a checkout the TypeScript sources sit next to it and run through
// tsx's CommonJS loader (tsx/cjs), so `npm run agentctl` never needs a build; the packed
// package ships no sources, only the compiled dist/.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

if (existsSync(join(__dirname, 'agentctl.ts'))) {
  require('tsx/cjs');
  void require('./agentctl.ts').run();
} else {
  void require('../dist/bin/agentctl.js').run();
}
