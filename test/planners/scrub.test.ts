/**
 * Secret scrubbing: what leaves a planner (error messages → history, traces, logs)
 * never holds an API key.
 */
import fc from 'fast-check';
import { REDACTED, redactSecrets } from '../../planners/scrub';

describe('redactSecrets', () => {
  it('removes the given key and anything key-shaped', () => {
    const text =
      'key sk-ant-api03-AbCdEf012345 and Bearer abc.def-123456 and x-api-key: zzzzzzzz and my-own-key-1234 ok';
    const out = redactSecrets(text, ['my-own-key-1234']);
    expect(out).toBe('key [REDACTED] and Bearer [REDACTED] and x-api-key: [REDACTED] and [REDACTED] ok');
  });

  it('keeps the label of a labelled credential and drops its value', () => {
    expect(redactSecrets('{"api_key": "abcdef123456"}')).toBe(`{"api_key": "${REDACTED}"}`);
    // The value runs to the next space, quote, comma or brace: a query string loses its tail too.
    expect(redactSecrets('apikey=abcdef123456&x=1 next')).toBe(`apikey=${REDACTED} next`);
    expect(redactSecrets('authorization: bearer abcdef123456')).toBe(`authorization: bearer ${REDACTED}`);
  });

  it('leaves ordinary text and keys too short to be secrets alone', () => {
    const text = 'The model `gpt-4o` does not exist (x is not a key)';
    expect(redactSecrets(text, ['x', undefined, ''])).toBe(text);
  });

  it('never lets a given key survive, wherever and however often it stands in the message', () => {
    // Real keys: at least 12 characters of the key alphabet (shorter ones could be part of the marker).
    const key = fc.stringMatching(/^[A-Za-z0-9_-]{12,64}$/);
    const filler = fc.string({ maxLength: 40 });
    fc.assert(
      fc.property(key, fc.array(filler, { minLength: 1, maxLength: 5 }), (secret, parts) => {
        const message = parts.join(secret);
        expect(redactSecrets(message, [secret])).not.toContain(secret);
        expect(redactSecrets(`${message} ${secret}`, [undefined, secret])).not.toContain(secret);
      }),
    );
  });

  it('catches an unnamed sk- key in any message', () => {
    const body = fc.stringMatching(/^[A-Za-z0-9_-]{6,48}$/);
    fc.assert(
      fc.property(
        fc.constantFrom('sk-', 'sk_', 'sk-ant-', 'sk-proj-'),
        body,
        fc.string(),
        (prefix, rest, text) => {
          const key = `${prefix}${rest}`;
          expect(redactSecrets(`${text} ${key} ${text}`)).not.toContain(key);
        },
      ),
    );
  });
});
