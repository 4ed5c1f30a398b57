import { parseReplayFile, replay } from '../../guard';

describe('StopReport of a FATAL stop', () => {
  it("names the tool's own message as the unmet precondition, and nothing when it gave none", () => {
    const withMessage = replay(
      parseReplayFile({
        calls: [
          {
            tool: 'deploy',
            args: { service: 'web' },
            result: {
              kind: 'FATAL',
              code: 'permission_denied',
              message: 'write permission for repository A',
            },
          },
        ],
      }),
    );
    expect(withMessage.terminal_state).toBe('NEEDS_HUMAN');
    expect(withMessage.report?.unmet_precondition).toBe('write permission for repository A');
    expect(withMessage.report?.resume_condition).toBe('permission granted and re-verified');

    const bare = replay(parseReplayFile({ calls: [{ tool: 'x', result: { kind: 'FATAL', code: 'boom' } }] }));
    expect(bare.terminal_state).toBe('FAILED');
    expect(bare.report?.unmet_precondition).toBeNull();
    expect(bare.report?.next_allowed_action).toBe('none');
  });
});
