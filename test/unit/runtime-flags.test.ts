/**
 * Every way of starting cybs-etl runs it with the same V8 flags and environment
 * (src/runtime-flags.ts): the bin's shebang, npm start and npm run cybs-etl, the Docker image.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../src/runtime-flags.js';
import { repoRoot } from '../helpers/simulator-process.js';

const read = (file: string) => readFileSync(path.join(repoRoot, file), 'utf8');
const env = Object.entries(NODE_RUNTIME_ENV).map(([k, v]) => `${k}=${v}`);

describe('the runtime flags and environment', () => {
  it('are on the bin’s shebang, within the 127 characters older Linux kernels read', () => {
    const shebang = read('pipelines/bin.ts').split('\n')[0]!;
    expect(shebang).toBe(`#!/usr/bin/env -S ${[...env, 'node', ...NODE_RUNTIME_FLAGS].join(' ')}`);
    expect(shebang.length).toBeLessThanOrEqual(127);
  });

  it('are in the npm scripts that start the CLI', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    const prefix = [...env, 'node', ...NODE_RUNTIME_FLAGS, 'dist/cli.mjs'].join(' ');
    expect(scripts['start']).toBe(`${prefix} run`);
    expect(scripts['cybs-etl']).toBe(prefix);
  });

  it('are in the Docker image', () => {
    const dockerfile = read('Dockerfile');
    for (const assignment of env) expect(dockerfile).toContain(`\nENV ${assignment}\n`);
    expect(dockerfile).toContain(
      `ENTRYPOINT ${JSON.stringify(['node', ...NODE_RUNTIME_FLAGS, 'dist/cli.mjs']).replace(/,/g, ', ')}`,
    );
  });
});
