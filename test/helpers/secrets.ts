/**
 * Find credentials in text: the literal secrets (and their URL-encoded, base64url and decoded-hex
 * forms), any JWT (`eyJ….eyJ….…`), any HTTP signature value or Authorization bearer token.
 */
import type { E2eWorld } from './e2e.js';

export function secretsOf(world: Pick<E2eWorld, 'sim'>, extra: string[] = []): string[] {
  const out = new Set<string>(extra);
  out.add(world.sim.portfolioCredentials.sharedSecret);
  out.add(world.sim.credentials.sharedSecret);
  for (const c of Object.values(world.sim.merchantCredentials)) out.add(c.sharedSecret);
  return [...out].filter((s) => s.length >= 8);
}

function variants(secret: string): string[] {
  const out = [
    secret,
    encodeURIComponent(secret),
    secret.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
  ];
  if (/^[A-Za-z0-9+/]+=*$/.test(secret)) {
    const bytes = Buffer.from(secret, 'base64');
    if (bytes.length >= 16) out.push(bytes.toString('hex'));
  }
  return [...new Set(out)];
}

const PATTERNS: [string, RegExp][] = [
  ['JWT', /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/],
  ['Bearer token', /Bearer\s+[A-Za-z0-9._-]{20,}/i],
  ['HTTP signature', /signature="[A-Za-z0-9+/]{20,}={0,2}"/i],
];

/** Every finding as "what: …excerpt…"; empty when the text holds no credential. */
export function findSecrets(text: string, secrets: readonly string[]): string[] {
  const findings: string[] = [];
  const excerpt = (at: number) => JSON.stringify(text.slice(Math.max(0, at - 40), at + 60));
  for (const s of secrets) {
    for (const v of variants(s)) {
      const at = text.indexOf(v);
      if (at >= 0) findings.push(`secret ${s.slice(0, 4)}…: ${excerpt(at)}`);
    }
  }
  for (const [name, re] of PATTERNS) {
    const m = re.exec(text);
    if (m) findings.push(`${name}: ${excerpt(m.index)}`);
  }
  return findings;
}
