import { configError } from '../errors.js';
import { POSTGRES_URL_EXAMPLE, postgresUrlProblem } from './database-url.js';
import { DEPLOYMENTS } from './schema.js';
import type { Deployment } from './schema.js';

export const AUTH_SCHEMES = ['jwt', 'http-signature', 'jwt-p12'] as const;
export type AuthScheme = (typeof AUTH_SCHEMES)[number];

/** Credentials and target of the CyberSource API, from the environment only (never from config.yaml). */
export interface Credentials {
  auth: AuthScheme;
  merchantId: string;
  /** Meta key: the portfolio (or account) that owns the key. */
  portfolioId?: string;
  keyId?: string;
  /** Base64 shared secret (http-signature, jwt). */
  sharedSecret?: string;
  p12Path?: string;
  p12Password?: string;
  /** Key alias inside the P12 file; defaults to the merchant (or portfolio) id. */
  keyAlias?: string;
}

export interface ApiTarget {
  environment?: Deployment;
  baseUrl?: string;
}

export interface EnvSettings {
  credentials?: Credentials;
  target: ApiTarget;
  databaseUrl?: string;
  /**
   * CYBS_METRICS_HOST: where `schedule` serves /healthz, /readyz and /metrics, over
   * schedule.metricsHost (a container sets 0.0.0.0 here, whatever config file is mounted).
   */
  metricsHost?: string;
}

/** The credential variables a command that calls the service needs, as one phrase. */
export const CREDENTIAL_VARIABLES =
  'CYBS_MERCHANT_ID, CYBS_KEY_ID and CYBS_SHARED_SECRET (or CYBS_AUTH=jwt-p12 with CYBS_P12_PATH and CYBS_P12_PASSWORD)';

type Env = Record<string, string | undefined>;

const val = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v ? v : undefined;
};

/** Resolve env variables; returns no credentials when none are set at all (simulator mode). */
export function readEnv(env: Env): EnvSettings {
  const environment = val(env, 'CYBS_ENVIRONMENT');
  if (environment && !(DEPLOYMENTS as readonly string[]).includes(environment)) {
    throw configError(`CYBS_ENVIRONMENT must be one of ${DEPLOYMENTS.join(', ')} (got "${environment}").`);
  }
  const auth = val(env, 'CYBS_AUTH') ?? 'jwt';
  if (!(AUTH_SCHEMES as readonly string[]).includes(auth)) {
    throw configError(`CYBS_AUTH must be one of ${AUTH_SCHEMES.join(', ')} (got "${auth}").`);
  }
  const target: ApiTarget = {};
  if (environment) target.environment = environment as Deployment;
  const baseUrl = val(env, 'CYBS_BASE_URL');
  if (baseUrl) target.baseUrl = baseUrl;

  const merchantId = val(env, 'CYBS_MERCHANT_ID');
  const anyCredential = ['CYBS_MERCHANT_ID', 'CYBS_KEY_ID', 'CYBS_SHARED_SECRET', 'CYBS_P12_PATH'].some((n) =>
    val(env, n),
  );
  const out: EnvSettings = { target };
  const databaseUrl = val(env, 'DATABASE_URL');
  if (databaseUrl) {
    const problem = postgresUrlProblem(databaseUrl);
    if (problem) {
      throw configError(
        `DATABASE_URL ${problem}; the warehouse is PostgreSQL: set it to ${POSTGRES_URL_EXAMPLE}, or unset it for the embedded warehouse.`,
      );
    }
    out.databaseUrl = databaseUrl;
  }
  const metricsHost = val(env, 'CYBS_METRICS_HOST');
  if (metricsHost) out.metricsHost = metricsHost;
  if (!anyCredential) return out;
  if (!merchantId) throw configError('CYBS_MERCHANT_ID is required when CyberSource credentials are set.');

  const credentials: Credentials = { auth: auth as AuthScheme, merchantId };
  const optional: [keyof Credentials, string][] = [
    ['portfolioId', 'CYBS_PORTFOLIO_ID'],
    ['keyId', 'CYBS_KEY_ID'],
    ['sharedSecret', 'CYBS_SHARED_SECRET'],
    ['p12Path', 'CYBS_P12_PATH'],
    ['p12Password', 'CYBS_P12_PASSWORD'],
    ['keyAlias', 'CYBS_KEY_ALIAS'],
  ];
  for (const [key, name] of optional) {
    const v = val(env, name);
    if (v !== undefined) (credentials as unknown as Record<string, string>)[key] = v;
  }
  if (credentials.auth === 'jwt-p12') {
    if (!credentials.p12Path)
      throw configError('CYBS_AUTH=jwt-p12 needs CYBS_P12_PATH (the PKCS#12 key file).');
  } else {
    if (!credentials.keyId) throw configError(`CYBS_AUTH=${credentials.auth} needs CYBS_KEY_ID.`);
    if (!credentials.sharedSecret)
      throw configError(`CYBS_AUTH=${credentials.auth} needs CYBS_SHARED_SECRET.`);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(credentials.sharedSecret)) {
      throw configError('CYBS_SHARED_SECRET must be the base64 shared secret key as issued by CyberSource.');
    }
  }
  return { ...out, credentials };
}

/** Every secret value in the settings, for log scrubbing. */
export function secretValues(settings: EnvSettings): string[] {
  const c = settings.credentials;
  const out: string[] = [];
  if (c?.sharedSecret) out.push(c.sharedSecret);
  if (c?.p12Password) out.push(c.p12Password);
  const pw = settings.databaseUrl ? safePassword(settings.databaseUrl) : undefined;
  if (pw) out.push(pw);
  return out;
}

function safePassword(url: string): string | undefined {
  try {
    const p = decodeURIComponent(new URL(url).password);
    return p || undefined;
  } catch {
    return undefined;
  }
}
