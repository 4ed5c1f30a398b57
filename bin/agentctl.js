#!/usr/bin/env node
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS launcher */
// agentctl launcher: registers tsx's CommonJS loader (tsx/cjs), then runs the TypeScript entry.
require('tsx/cjs');
require('../client/agentctl.ts').cli();
