/**
 * `agentctl spend status|raise`: a tenant's model spend under its cap (docs/spec.md §7.10,
 * docs/cli.md). Both read the spend tables in the workers' database (LEDGER_URL).
 *
 * - `status --tenant T`: the cap in force (the newest trusted raise, else AGENT_SPEND_LIMITS in
 *   agentctl's own environment, which should match the workers'), settled spend in the window,
 *   reservations in flight, expired ones (a crashed worker's), refused calls, what is left.
 * - `raise --tenant T --max-usd N`: stores a new cap for the tenant, signed with the operator's
 *   key (`--key` / AGENT_OPERATOR_KEY_FILE). A worker with an operators file puts it in force
 *   only when the signature verifies and a role of the operator allows that cap
 *   (`raiseSpendUsd`). Runs stopped `spend_limit` then resume (`agentctl resume ID`).
 */
import { Command } from 'commander';
import { tenantSchema } from '../../common/contracts';
import { OperatorRegistry } from '../../operators/registry';
import { readOperatorKey, signRequest } from '../../operators/sign';
import { ledgerUrlFromEnv, openLedger, type Ledger } from '../../storage/ledger';
import {
  RAISE_ID_PREFIX,
  raiseSignedFields,
  raiseSubject,
  raiseVerifier,
  SpendError,
  spendLimitsFromEnv,
  SpendStore,
} from '../../storage/spend';
import { CliError, Exit, json, keyValues } from '../format';
import { defaultActor, positiveInt, type Ctx } from './common';
import { randomUUID } from 'node:crypto';

/** Runs `fn` over the spend store of LEDGER_URL, trusting what the workers' operators trust. */
async function withStore<T>(ctx: Ctx, fn: (store: SpendStore) => Promise<T>): Promise<T> {
  let ledger: Ledger | undefined;
  try {
    const limits = spendLimitsFromEnv(ctx.env) ?? {};
    const operators = OperatorRegistry.fromEnv(ctx.env);
    ledger = await openLedger(ledgerUrlFromEnv(ctx.env));
    return await fn(SpendStore.over(ledger, limits).verifiedBy(raiseVerifier(operators)));
  } catch (err) {
    if (err instanceof SpendError || err instanceof TypeError)
      throw new CliError(Exit.USAGE, (err as Error).message, { cause: err });
    throw err;
  } finally {
    await ledger?.close().catch(() => undefined);
  }
}

function tenantOf(value: string): string {
  const parsed = tenantSchema.safeParse(value);
  if (!parsed.success) throw new CliError(Exit.USAGE, `--tenant: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

function usdOf(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new CliError(Exit.USAGE, `--max-usd must be a number ≥ 0 (USD), got "${value}"`);
  return n;
}

/** Builds the `spend` command: status, raise. */
export function spendCommand(ctx: Ctx): Command {
  const cmd = new Command('spend').description(
    "A tenant's model spend under its cap (AGENT_SPEND_LIMITS), and raising it",
  );

  cmd
    .command('status')
    .description("The tenant's cap in force and its spend in the window (from LEDGER_URL)")
    .requiredOption('--tenant <name>', 'the tenant (a run\'s --tenant; default tenant: "default")')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; json?: boolean }) => {
      const st = await withStore(ctx, (s) => s.status(tenantOf(o.tenant)));
      if (o.json) {
        ctx.io.out(json(st));
        return;
      }
      const cap = st.cap
        ? `$${st.cap.maxUsd} per ${st.cap.windowMs} ms (${st.cap.source === 'raise' ? `raised: ${st.cap.raiseId}` : 'AGENT_SPEND_LIMITS'})`
        : 'none (not in AGENT_SPEND_LIMITS here, never raised)';
      ctx.io.out(
        keyValues([
          ['tenant', st.tenant],
          ['cap', cap],
          ['settled', `$${st.settledUsd} (${st.calls.settled} calls)`],
          ['in flight', `$${st.inFlightUsd} (${st.calls.inFlight} calls, at their worst case)`],
          [
            'expired',
            `$${st.expiredUsd} (unsettled reservations of a crashed worker, counted at their worst case)`,
          ],
          ['used', `$${st.usedUsd}`],
          ['available', st.availableUsd === null ? '-' : `$${st.availableUsd}`],
          ['refused', `${st.calls.refused} calls in the window`],
        ]),
      );
    });

  cmd
    .command('raise')
    .description(
      "Set a new cap for the tenant (signed with the operator's key); then resume its spend_limit runs",
    )
    .requiredOption('--tenant <name>', 'the tenant')
    .requiredOption('--max-usd <usd>', 'the new cap in USD for the window')
    .option('--window-ms <ms>', 'the window (default the configured one, else one day)', positiveInt)
    .requiredOption('--reason <text>', 'why (stored with the raise)')
    .option('--actor <name>', "who raises (default the key's operator, else $AGENTCTL_ACTOR / $USER)")
    .option('--key <file>', 'operator key file to sign with (default AGENT_OPERATOR_KEY_FILE)')
    .option('--json', 'machine-readable output')
    .action(
      async (o: {
        tenant: string;
        maxUsd: string;
        windowMs?: number;
        reason: string;
        actor?: string;
        key?: string;
        json?: boolean;
      }) => {
        const tenant = tenantOf(o.tenant);
        const maxUsd = usdOf(o.maxUsd);
        const keyPath = o.key ?? (ctx.env.AGENT_OPERATOR_KEY_FILE || undefined);
        let key;
        try {
          key = keyPath ? readOperatorKey(keyPath) : null;
        } catch (err) {
          throw new CliError(Exit.USAGE, (err as Error).message, { cause: err });
        }
        const actor = o.actor ?? key?.operator ?? defaultActor(ctx.env);
        if (key && key.operator !== actor)
          throw new CliError(
            Exit.USAGE,
            `actor ${actor} does not match the signing key's operator "${key.operator}"`,
          );
        const { raise, status } = await withStore(ctx, async (s) => {
          // The window is signed too: resolve it before signing, as the store would.
          const current = await s.status(tenant);
          const windowMs =
            o.windowMs ?? current.cap?.windowMs ?? spendLimitsFromEnv(ctx.env)?.[tenant]?.windowMs;
          const id = `${RAISE_ID_PREFIX}${randomUUID()}`;
          const w = windowMs ?? 24 * 3_600_000;
          const auth = key
            ? signRequest(
                key,
                'raise_spend',
                raiseSubject(tenant),
                raiseSignedFields({ id, actor, reason: o.reason, maxUsd, windowMs: w }),
              )
            : null;
          const raise = await s.raise({ id, tenant, maxUsd, windowMs: w, actor, reason: o.reason, auth });
          return { raise, status: await s.status(tenant) };
        });
        const inForce = status.cap?.raiseId === raise.id;
        if (!inForce)
          ctx.io.err(
            `warning: the workers' operators do not trust this raise (${raise.auth ? 'signature or role refused' : 'unsigned'}); the cap in force is unchanged\n`,
          );
        if (o.json) ctx.io.out(json({ raise, inForce, status }));
        else
          ctx.io.out(
            keyValues([
              ['raised', raise.id],
              ['tenant', tenant],
              ['cap', `$${raise.maxUsd} per ${raise.windowMs} ms`],
              ['by', `${raise.actor}${raise.auth ? ' (signed)' : ' (unsigned)'}`],
              ['in force', inForce ? 'yes' : 'no'],
              ['available', status.availableUsd === null ? '-' : `$${status.availableUsd}`],
              ['next', 'agentctl resume ID (runs stopped spend_limit)'],
            ]),
          );
        if (!inForce) throw new CliError(Exit.REFUSED, 'raise stored but not in force', { reported: true });
      },
    );
  return cmd;
}
