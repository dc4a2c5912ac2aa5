import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A new temporary directory that may hold an embedded warehouse. mkdtemp makes it 0700; when the
 * tests run as root the embedded server runs as user postgres, who must be able to pass through it
 * (search permission only: it still cannot list it).
 */
export async function warehouseTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o711);
  return dir;
}
