/**
 * The simulator stands in for CyberSource: it must not share the product's assumptions, so no file
 * under src/simulator imports product code (catalog, parsers, api, ...). The error family
 * (src/errors.ts) is the one shared module.
 */
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(process.cwd(), 'src');
const SIMULATOR = join(SRC, 'simulator');
const ALLOWED = new Set([join(SRC, 'errors.ts')]);

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(path)));
    else if (/\.[cm]?ts$/.test(entry.name)) out.push(path);
  }
  return out;
}

/** Module specifiers of static imports, re-exports and dynamic imports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/\b(?:import|export)\s[^'"]*?\bfrom\s*['"]([^'"]+)['"]/g)) found.push(m[1]!);
  for (const m of text.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push(m[1]!);
  return found;
}

describe('simulator import boundary', () => {
  it('imports nothing from src outside src/simulator but src/errors.ts', async () => {
    const files = await sourceFiles(SIMULATOR);
    expect(files.length).toBeGreaterThan(10);
    const offending: string[] = [];
    for (const file of files) {
      for (const spec of specifiers(await readFile(file, 'utf8'))) {
        if (!spec.startsWith('.')) continue; // packages and node: built-ins
        const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
        const inside = !relative(SIMULATOR, target).startsWith('..');
        if (!inside && !ALLOWED.has(target)) offending.push(`${relative(SRC, file)} → ${spec}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('would catch an import of the product catalog', () => {
    expect(specifiers(`import { scmpName } from '../catalog/naming.js';`)).toEqual(['../catalog/naming.js']);
    expect(specifiers(`import type { X } from "../parse/index.js";`)).toEqual(['../parse/index.js']);
    expect(specifiers(`const m = await import('../api/index.js');`)).toEqual(['../api/index.js']);
  });
});
