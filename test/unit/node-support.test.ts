import { describe, expect, it } from 'vitest';
import { unsupportedNodeMessage } from '../../src/node-support.js';

describe('the Node.js the CLI runs on', () => {
  it('refuses Node 20 and 22 before 22.12 in one sentence that says what to install', () => {
    for (const version of ['20.20.2', '22.11.0', '18.20.4']) {
      const message = unsupportedNodeMessage(version);
      expect(message).toMatch(
        new RegExp(
          `^cybs-etl needs Node\\.js 22\\.12 or newer, and this is Node\\.js ${version.replace(/\./g, '\\.')}; install Node\\.js 22 or 24 `,
        ),
      );
      expect(message?.split('. ').length).toBe(1);
    }
  });

  it('runs on 22.12 and later, and on 24', () => {
    for (const version of ['22.12.0', '22.23.3', '23.0.0', '24.21.0', '25.1.0'])
      expect(unsupportedNodeMessage(version)).toBeUndefined();
  });
});
