/**
 * The simulator stands in for CyberSource: it must not share the product's assumptions, so no file
 * of the package's src/ imports anything outside it by path (the product's catalog, parsers, api,
 * error family, ...) nor the product by name; it has its own naming tables and its own error.
 */
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGE_SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

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
  it('imports nothing outside its own src/ by path, and not the product by name', async () => {
    const files = await sourceFiles(PACKAGE_SRC);
    expect(files.length).toBeGreaterThan(10);
    const offending: string[] = [];
    for (const file of files) {
      for (const spec of specifiers(await readFile(file, 'utf8'))) {
        const product = spec === 'cybs-etl' || spec.startsWith('cybs-etl/');
        const outside =
          spec.startsWith('.') && relative(PACKAGE_SRC, resolve(dirname(file), spec)).startsWith('..');
        if (product || outside) offending.push(`${relative(PACKAGE_SRC, file)} → ${spec}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('would catch an import of the product catalog', () => {
    expect(specifiers(`import { scmpName } from '../../../../src/catalog/naming.js';`)).toEqual([
      '../../../../src/catalog/naming.js',
    ]);
    expect(specifiers(`import type { X } from "../parse/index.js";`)).toEqual(['../parse/index.js']);
    expect(specifiers(`const m = await import('../api/index.js');`)).toEqual(['../api/index.js']);
  });
});
