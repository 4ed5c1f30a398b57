/**
 * An MCP tool's args schema: the server's JSON Schema, compiled with ajv, wrapped in a
 * zod schema so the registry's strict parse (and with it the fingerprint, the operation
 * key and PRECONDITION `invalid_args`) works for MCP tools as for built-in ones.
 *
 * - ajv runs in strict mode (unknown keywords in the schema are an error); a server schema
 *   that strict mode rejects is compiled again non-strictly, with a warning.
 * - The dialect follows `$schema` (2020-12, 2019-09, else draft-07).
 * - Defaults in the schema are filled in before fingerprinting (as zod defaults are).
 * - An object schema that does not say whether it allows other properties is closed at the
 *   top level: a planner cannot dodge the repeat rule by adding an argument the server
 *   ignores (`openArgs: true` keeps it open).
 * - `format` is an annotation, not asserted (the JSON Schema 2020-12 default); the server
 *   checks its own formats.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import { z } from 'zod';
import { McpToolsError } from './errors';

/** A compiled args schema. */
export interface ArgsSchema {
  /** The zod wrapper: parses (fills defaults) or fails with an issue per invalid field. */
  readonly schema: z.ZodType<Record<string, unknown>, unknown>;
  /** The JSON Schema planners see (the server's, closed at the top level unless `openArgs`). */
  readonly jsonSchema: Record<string, unknown>;
}

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

function ajvFor(schema: Record<string, unknown>, strict: boolean): AnyAjv {
  const options = { strict, allErrors: true, useDefaults: true, validateFormats: false } as const;
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (dialect.includes('2020-12')) return new Ajv2020(options);
  if (dialect.includes('2019-09')) return new Ajv2019(options);
  return new Ajv(options);
}

/** The server's schema as planners see it. */
function closed(input: Record<string, unknown>, open: boolean): Record<string, unknown> {
  const schema: Record<string, unknown> = { ...input };
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  // draft-07 is ajv's default meta-schema; any other non-2019/2020 URI would not resolve.
  if (dialect && !/2020-12|2019-09|draft-07/.test(dialect)) delete schema.$schema;
  if (
    !open &&
    schema.type === 'object' &&
    !('additionalProperties' in schema) &&
    !('unevaluatedProperties' in schema)
  ) {
    schema.additionalProperties = false;
  }
  return schema;
}

function pathOf(e: ErrorObject): (string | number)[] {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = e.params as { missingProperty?: string; additionalProperty?: string };
  if (e.keyword === 'required' && params.missingProperty) path.push(params.missingProperty);
  if (e.keyword === 'additionalProperties' && params.additionalProperty) path.push(params.additionalProperty);
  return path;
}

function messageOf(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'additionalProperties') return 'is not an argument of this tool';
  return e.message ?? `fails ${e.keyword}`;
}

/**
 * Compiles the server's `inputSchema` of tool `tool` (named in errors). Throws
 * McpToolsError when ajv cannot compile it even non-strictly.
 */
export function compileArgsSchema(
  tool: string,
  inputSchema: Record<string, unknown>,
  options: { openArgs?: boolean; warn?: (msg: string) => void } = {},
): ArgsSchema {
  const jsonSchema = closed(inputSchema, options.openArgs === true);
  let validate: ValidateFunction;
  try {
    validate = ajvFor(jsonSchema, true).compile(jsonSchema);
  } catch (strictErr) {
    try {
      validate = ajvFor(jsonSchema, false).compile(jsonSchema);
      (options.warn ?? console.warn)(
        `MCP tool ${tool}: its inputSchema fails ajv strict mode (${(strictErr as Error).message}); validating non-strictly`,
      );
    } catch (err) {
      throw new McpToolsError(
        `MCP tool ${tool}: its inputSchema does not compile (${(err as Error).message}); hide the tool with "hidden": true`,
        { cause: err },
      );
    }
  }
  const schema = z.unknown().transform((value, ctx): Record<string, unknown> => {
    // ajv fills defaults in place: validate a copy, never the caller's object.
    const copy = structuredClone(value ?? {}) as Record<string, unknown>;
    if (validate(copy)) return copy;
    for (const e of validate.errors ?? []) {
      ctx.addIssue({ code: 'custom', path: pathOf(e), message: messageOf(e) });
    }
    return z.NEVER;
  });
  return { schema, jsonSchema };
}
