/**
 * Product code says what it is and why, not which issue changed it: history lives in git and
 * CHANGELOG.md. (A migration's name is only a description stored beside its version; databases
 * migrated before keep the words they recorded.)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const ISSUE = /\bissues? \d+/i;

describe('product code comments', () => {
  it('name no issue numbers', () => {
    const files = execFileSync('git', ['ls-files', '*.ts', '*.js', '*.sh'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && !f.startsWith('test/'));
    expect(files.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const f of files) {
      const lines = readFileSync(join(ROOT, f), 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (ISSUE.test(line)) found.push(`${f}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });
});
