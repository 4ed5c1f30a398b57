/**
 * The few dialect pieces that are pure functions. Everything observable is tested once for
 * both backends in semantics.test.ts; this covers what that suite cannot reach directly.
 */
import { toPgPlaceholders } from '../../storage/ledger';

describe('toPgPlaceholders', () => {
  it('numbers ? placeholders in order and leaves quoted question marks alone', () => {
    expect(
      toPgPlaceholders(`SELECT '?' AS q, "a?b" FROM t WHERE x = ? AND y IN (?, ?) AND z = 'it''s?'`),
    ).toBe(`SELECT '?' AS q, "a?b" FROM t WHERE x = $1 AND y IN ($2, $3) AND z = 'it''s?'`);
  });

  it('keeps SQL without placeholders as it is', () => {
    expect(toPgPlaceholders("SELECT nextval('ledger_fencing_seq')")).toBe(
      "SELECT nextval('ledger_fencing_seq')",
    );
  });
});
