/** Converts whatever a tool threw into the JSON-safe {@link StoredError} the ledger replays. */
import { redactText } from '../../common/redact';
import type { StoredError } from './types';

/**
 * Normalises a thrown value (Error, string, object with code) to a {@link StoredError},
 * its message redacted (common/redact.ts): the ledger keeps it and replays it into results.
 */
export function toStoredError(error: unknown): StoredError {
  const stored = storedErrorOf(error);
  return { ...stored, message: redactText(stored.message) };
}

function storedErrorOf(error: unknown): StoredError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' || typeof code === 'number' ? { code: String(code) } : {}),
    };
  }
  if (typeof error === 'string') return { name: 'Error', message: error };
  if (error && typeof error === 'object') {
    const o = error as Record<string, unknown>;
    return {
      name: typeof o.name === 'string' ? o.name : 'Error',
      message: typeof o.message === 'string' ? o.message : JSON.stringify(error),
      ...(typeof o.code === 'string' ? { code: o.code } : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}

/** Serialises a result for storage; `undefined` is stored as JSON null so replays are well-defined. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}
