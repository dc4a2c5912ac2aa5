import { isIP } from 'node:net';
import type { ApiTarget } from '../config/env.js';
import type { Deployment } from '../config/schema.js';
import { CybsError } from '../errors.js';

/** The CyberSource hosts of each deployment (facts §0). India has no sandbox of its own. */
export const DEPLOYMENT_BASE_URLS: Readonly<Record<Deployment, string>> = Object.freeze({
  test: 'https://apitest.cybersource.com',
  production: 'https://api.cybersource.com',
  'production-india': 'https://api.in.cybersource.com',
});

/** Where requests go: origin for the dispatcher, host for signing, optional path prefix (proxy). */
export interface ResolvedTarget {
  /** `https://api.cybersource.com` or `http://127.0.0.1:8080` (no path). */
  origin: string;
  /** The Host header value and the host that is signed: hostname plus a non-default port. */
  host: string;
  /** A path prefix of an explicit base URL (a proxy mount point), '' for none; no trailing slash. */
  basePath: string;
  /** The deployment, when the target is one of the named deployments. */
  deployment?: Deployment;
}

/** True for 127.0.0.0/8, ::1 and localhost: the only hosts plain http:// may be used with. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1';
  return false;
}

/**
 * Resolve the API target: an explicit base URL (CYBS_BASE_URL) wins, then the deployment named by
 * the environment (CYBS_ENVIRONMENT), then the config's `api.environment`. Plain http:// is refused
 * for anything but loopback hosts, so credentials never travel unencrypted over a network.
 */
export function resolveTarget(target: ApiTarget, configEnvironment: Deployment = 'test'): ResolvedTarget {
  if (target.baseUrl) return resolveBaseUrl(target.baseUrl);
  const deployment = target.environment ?? configEnvironment;
  const url = new URL(DEPLOYMENT_BASE_URLS[deployment]);
  return { origin: url.origin, host: url.host, basePath: '', deployment };
}

function resolveBaseUrl(baseUrl: string): ResolvedTarget {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new CybsError(
      'API_BASE_URL_INVALID',
      `CYBS_BASE_URL "${baseUrl}" is not a URL; write it as https://host[:port][/prefix].`,
      { stage: 'api', exitCode: 2, context: { baseUrl } },
    );
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new CybsError(
      'API_BASE_URL_INVALID',
      'CYBS_BASE_URL must be a plain https://host[:port][/prefix] without user, password, query or fragment.',
      { stage: 'api', exitCode: 2, context: { baseUrl: url.origin } },
    );
  }
  if (url.protocol === 'http:') {
    if (!isLoopbackHost(url.hostname)) {
      throw new CybsError(
        'API_INSECURE_URL',
        `CYBS_BASE_URL ${url.origin} uses plain http to a host that is not loopback; use https:// (http:// is accepted only for 127.0.0.1, ::1 and localhost).`,
        { stage: 'api', exitCode: 2, context: { baseUrl: url.origin } },
      );
    }
  } else if (url.protocol !== 'https:') {
    throw new CybsError(
      'API_BASE_URL_INVALID',
      `CYBS_BASE_URL must start with https:// (got ${url.protocol}).`,
      { stage: 'api', exitCode: 2, context: { baseUrl } },
    );
  }
  return { origin: url.origin, host: url.host, basePath: url.pathname.replace(/\/+$/, '') };
}
