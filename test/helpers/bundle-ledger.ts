/**
 * A real, empty ledger in memory for a guard plugin whose writes never run in the test (a
 * bundle, a workflow refused before any write): the plugin takes only an open ledger.
 */
import { SqliteLedger } from '../../storage/ledger/sqlite-ledger';
import type { Ledger } from '../../storage/ledger';

export function bundleLedger(): Ledger {
  return new SqliteLedger(':memory:');
}
