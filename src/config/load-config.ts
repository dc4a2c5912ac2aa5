import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { ZodError } from 'zod';
import type { z } from 'zod';
import { PIPELINE_NAME_ALIASES } from '../catalog/index.js';
import { configError } from '../errors.js';
import { expandAnalytics } from './analytics.js';
import { configSchema } from './schema.js';
import type { Config } from './schema.js';
import { subscriptionWarnings } from './subscriptions-schema.js';

const WARNINGS = new WeakMap<object, readonly string[]>();
const FILES = new WeakMap<object, string>();

/**
 * What parsing a config found worth a warning but not an error (former pipeline names, seed names
 * of report definitions, subscription fields the catalog does not know): one sentence each, naming
 * the file and key path. The CLI logs them once per invocation.
 */
export function configWarnings(config: Config): readonly string[] {
  return WARNINGS.get(config) ?? [];
}

/**
 * The file a config was read from (`--config PATH`, else ./config.yaml), for errors found after
 * parsing (an unknown pipeline name, a missing `subscriptions:`) to name the file the user gave.
 */
export function configFile(config: Config): string {
  return FILES.get(config) ?? 'config.yaml';
}

/** Keys that would put a secret in the file; they are refused with a pointer to the env variable. */
const SECRET_KEYS: Record<string, string> = {
  sharedSecret: 'CYBS_SHARED_SECRET',
  shared_secret: 'CYBS_SHARED_SECRET',
  secret: 'CYBS_SHARED_SECRET',
  keyId: 'CYBS_KEY_ID',
  p12Password: 'CYBS_P12_PASSWORD',
  password: 'CYBS_P12_PASSWORD or the DATABASE_URL',
};

/** Read, parse and validate a config file. Errors name the file, the key path and the expected form. */
export async function loadConfig(path: string): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw configError(
      code === 'ENOENT'
        ? `Config file ${path} does not exist; pass --config PATH or create it (see config.yaml in the repository).`
        : `Config file ${path} cannot be read (${code ?? 'error'}).`,
      { file: path },
    );
  }
  return parseConfig(text, path);
}

/** Parse and validate config text (pure). */
export function parseConfig(text: string, file = 'config.yaml'): Config {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    const line = first.linePos?.[0]?.line;
    throw configError(
      `${file}${line ? `:${line}` : ''}: not valid YAML: ${first.message.split('\n')[0] ?? first.message}`,
      { file, line },
    );
  }
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw configError(`${file}: expected a mapping of settings at the top level.`, { file });
  }
  rejectSecrets(raw, [], file);
  const warnings = renameFormerPipelines(raw as Record<string, unknown>, file);
  warnings.push(
    ...subscriptionWarnings((raw as Record<string, unknown>).subscriptions).map((w) => `${file}: ${w}`),
  );
  const result = configSchema.safeParse(raw);
  if (!result.success) throw configError(formatIssues(result.error.issues, file), { file });
  let expanded: ReturnType<typeof expandAnalytics>;
  try {
    expanded = expandAnalytics(result.data, raw as Record<string, unknown>, file);
  } catch (error) {
    if (error instanceof ZodError)
      throw configError(
        `${formatIssues(
          error.issues.map((i) => ({ ...i, path: ['subscriptions', ...i.path] })),
          file,
        ).replace(/\.$/, '')} (with the subscriptions analytics.enabled declares).`,
        { file },
      );
    throw error;
  }
  warnings.push(...expanded.warnings);
  const config = deepFreeze({
    ...result.data,
    pipelines: expanded.pipelines,
    ...(expanded.subscriptions ? { subscriptions: expanded.subscriptions } : {}),
  });
  WARNINGS.set(config, Object.freeze(warnings));
  FILES.set(config, file);
  return config;
}

/** Settings under a pipeline's former name (`PIPELINE_NAME_ALIASES`) move to its name, with a warning. */
function renameFormerPipelines(raw: Record<string, unknown>, file: string): string[] {
  const pipelines = raw.pipelines;
  if (!pipelines || typeof pipelines !== 'object' || Array.isArray(pipelines)) return [];
  const settings = pipelines as Record<string, unknown>;
  const warnings: string[] = [];
  for (const [former, name] of Object.entries(PIPELINE_NAME_ALIASES)) {
    if (!(former in settings)) continue;
    if (name in settings) {
      throw configError(
        `${file}: keys "pipelines.${former}" and "pipelines.${name}" name the same pipeline; keep "pipelines.${name}".`,
        { file, key: `pipelines.${former}` },
      );
    }
    settings[name] = settings[former];
    delete settings[former];
    warnings.push(
      `${file}: key "pipelines.${former}" is the former name of pipeline ${name}; its settings apply to ${name} (rename the key)`,
    );
  }
  return warnings;
}

function rejectSecrets(value: unknown, path: (string | number)[], file: string): void {
  if (!value || typeof value !== 'object') return;
  for (const [key, item] of Object.entries(value)) {
    const env = SECRET_KEYS[key];
    if (env) {
      throw configError(
        `${file}: key "${[...path, key].join('.')}" would hold a secret; secrets are read only from the environment (${env}).`,
        { file, key: [...path, key].join('.') },
      );
    }
    rejectSecrets(item, [...path, key], file);
  }
}

/** One sentence per issue, key path first. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], file: string): string {
  const lines = issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String).join('.') || '(top level)';
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => (path === '(top level)' ? k : `${path}.${k}`));
      return `unknown key ${keys.map((k) => `"${k}"`).join(', ')}`;
    }
    return `key "${path}": ${issue.message}`;
  });
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : '';
  return `${file}: ${lines.join('; ')}${more}.`;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
