/**
 * The example's own tool: `save_note` writes a note into a local JSON file. It is a write,
 * so it names its business operation (`note:KEY`) and the package's ledger runs it at most
 * once per key, however often the planner proposes it. The file also counts how many times
 * the write really ran, which is what the example checks at the end.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { defineTool } from 'agent-loop-guard';
import { z } from 'zod';

/** What the notes file holds. */
export interface NotesFile {
  notes: Record<string, string>;
  /** How many times `save_note` really wrote (ledger answers do not count). */
  writes: number;
}

/** Reads the notes file (empty when it does not exist yet). */
export function readNotes(file: string): NotesFile {
  if (!existsSync(file)) return { notes: {}, writes: 0 };
  return JSON.parse(readFileSync(file, 'utf8')) as NotesFile;
}

const KEY_PREFIX = 'note:';

/** The `save_note` tool over `file`. */
export function createSaveNoteTool(file: string) {
  return defineTool({
    name: 'save_note',
    description: 'Save a short note under a key.',
    effect: 'write',
    schema: z
      .object({
        key: z.string().min(1).max(64),
        text: z.string().min(1).max(2000),
      })
      .strict(),
    // One note key is one business operation: proposing it again is answered by the ledger.
    operationKey: (args) => `${KEY_PREFIX}${args.key}`,
    // After a crash between the write and the ledger commit, the file itself says whether
    // the write happened, so the ledger can settle the record instead of asking a person.
    async reconcile(operationKey) {
      const key = operationKey.slice(KEY_PREFIX.length);
      const text = readNotes(file).notes[key];
      return text === undefined ? { status: 'not_found' } : { status: 'succeeded', result: { key } };
    },
    async execute(args) {
      const state = readNotes(file);
      state.notes[args.key] = args.text;
      state.writes += 1;
      // Write then rename, so a reader never sees half a file.
      writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 2));
      renameSync(`${file}.tmp`, file);
      return { data: { key: args.key, saved: true } };
    },
  });
}
