/**
 * Secret scrubbing shared by the logger, error messages and config dumps. Pure functions.
 */

/** Header and key names whose values are secrets, compared case-insensitively. */
export const SECRET_KEY_PATTERN =
  /^(authorization|signature|proxy-authorization|cookie|set-cookie|password|passwd|secret|shared_?secret|sharedsecret|p12_?password|token|jwt|api_?key|private_?key|cybs_shared_secret|cybs_p12_password)$/i;

export const REDACTED = '[redacted]';

/** Replace the password of any URL (`postgres://user:pw@host`) with [redacted]. */
export function redactUrlPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s]+:)([^@\s]+)(@)/gi, `$1${REDACTED}$3`);
}

/** Remove every occurrence of the given secret values (and their base64 forms) from a text. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = redactUrlPasswords(text);
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    out = out.split(secret).join(REDACTED);
  }
  // Bearer tokens and signature header values never leave the process.
  out = out.replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]+/g, `$1${REDACTED}`);
  out = out.replace(/(signature=")[^"]*(")/g, `$1${REDACTED}$2`);
  return out;
}

/** A deep copy of a plain value with secret keys replaced; used for config dumps. */
export function redactObject(value: unknown, secrets: readonly string[] = []): unknown {
  if (typeof value === 'string') return scrubSecrets(value, secrets);
  if (Array.isArray(value)) return value.map((item) => redactObject(item, secrets));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] = SECRET_KEY_PATTERN.test(key) ? REDACTED : redactObject(item, secrets);
    }
    return out;
  }
  return value;
}
