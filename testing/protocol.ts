/**
 * The tool-protocol checks of the two wire formats, as the real APIs enforce them: every
 * tool call answered before the conversation goes on (OpenAI), roles alternating and every
 * `tool_use` answered by a `tool_result` in the next message (Anthropic). Shared by the
 * long-model server and the scripted model servers (testing/, test/planners/servers), so a planner bug
 * is a 400 in both.
 */

type Json = Record<string, unknown>;

/** OpenAI Chat Completions: the tool protocol the real API enforces; the violation, or null. */
export function openaiViolation(body: Json): string | null {
  if (typeof body.model !== 'string') return 'you must provide a model parameter';
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    return "'messages' must contain at least one message";
  let open: string[] = [];
  for (const [i, raw] of messages.entries()) {
    const m = raw as Json;
    if (m.role === 'tool') {
      const id = m.tool_call_id as string;
      if (!open.includes(id))
        return `messages.[${i}]: a message with role 'tool' must answer a preceding tool_calls entry (${id})`;
      open = open.filter((x) => x !== id);
      continue;
    }
    if (open.length > 0)
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. Missing: ${open.join(', ')}`;
    if (m.role === 'assistant')
      open = ((m.tool_calls as Json[] | undefined) ?? []).map((tc) => tc.id as string);
  }
  if (open.length > 0)
    return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. Missing: ${open.join(', ')}`;
  return null;
}

/** Anthropic Messages: the tool protocol the real API enforces; the violation, or null. */
export function anthropicViolation(body: Json): string | null {
  if (typeof body.model !== 'string') return 'model: Field required';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  let expectedRole = 'user';
  let openToolUses: string[] = [];
  for (const [i, raw] of messages.entries()) {
    const m = raw as Json;
    if (m.role !== expectedRole)
      return `messages.${i}.role: expected ${expectedRole}, roles must alternate starting with user`;
    const blocks =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as Json[]);
    if (!Array.isArray(blocks)) return `messages.${i}.content: invalid`;
    if (m.role === 'user') {
      const answered = blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id as string);
      for (const id of answered)
        if (!openToolUses.includes(id))
          return `messages.${i}: tool_result ${id} has no tool_use in the previous message`;
      for (const id of openToolUses)
        if (!answered.includes(id))
          return `messages.${i}: tool_use ids were found without tool_result blocks immediately after: ${id}`;
      openToolUses = [];
    } else {
      openToolUses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
    }
    expectedRole = m.role === 'user' ? 'assistant' : 'user';
  }
  if (expectedRole !== 'assistant') return 'the last message must be a user message';
  return null;
}
