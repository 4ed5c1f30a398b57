/**
 * The operator's side (agentctl): Ed25519 keys and signatures over {@link signedPayload}.
 * The private key stays in the operator's file (`AGENT_OPERATOR_KEY_FILE`); only the
 * public key goes into the worker's operators file.
 */
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  signedPayload,
  type OperatorAction,
  type OperatorAuth,
  type SignedFields,
} from '../common/operator-auth';

/** An operator's key file. */
export const operatorKeyFileSchema = z
  .object({ operator: z.string().min(1), privateKey: z.string().min(1) })
  .strict();
/** An operator's key file. */
export type OperatorKeyFile = z.output<typeof operatorKeyFileSchema>;

/** A new Ed25519 key pair for an operator: the private key file and the public key (PEM). */
export function generateOperatorKey(operator: string): { keyFile: OperatorKeyFile; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    keyFile: { operator, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** Reads an operator key file; a clear error names what is wrong. */
export function readOperatorKey(path: string): OperatorKeyFile {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new TypeError(`operator key file ${path}: ${(err as Error).message}`);
  }
  const parsed = operatorKeyFileSchema.safeParse(value);
  if (!parsed.success) throw new TypeError(`operator key file ${path}: expected {"operator", "privateKey"}`);
  return parsed.data;
}

/** Signs a request: the `auth` block to send with it. */
export function signRequest(
  key: OperatorKeyFile,
  action: OperatorAction,
  workflowId: string,
  fields: SignedFields,
  issuedAtMs: number = Date.now(),
): OperatorAuth {
  const payload = signedPayload(action, workflowId, fields, issuedAtMs);
  const signature = sign(null, Buffer.from(payload), createPrivateKey(key.privateKey)).toString('base64');
  return { operator: key.operator, issuedAtMs, signature };
}
