import type { z } from 'zod';

/**
 * A cheap stand-in for zod on big, regular response bodies (a purchase-refund-details page holds
 * 2,000 records in six sections, and zod checks and copies every one of them).
 *
 * `fastPageCheck(schema)` reads the schema's shape once: top-level keys that are nullable numbers,
 * and sections (`z.array(z.looseObject({...})).default([])`) whose item fields are nullable strings.
 * The returned function gives the value zod would give, or `undefined` when it cannot tell (then
 * the caller runs zod, for its result or its error message). It answers only when every top-level
 * number is a number or null, every section an array of plain objects whose known fields are
 * strings or null, and every item's keys come in zod's output order (the schema's fields first, in
 * shape order, then the others): so the items are returned as they are, and the body is rebuilt
 * in zod's key order with `[]` for an absent section.
 */
export function fastPageCheck(schema: z.ZodType): ((data: unknown) => unknown) | undefined {
  const plan = planOf(schema);
  if (!plan) return undefined;
  return (data) => {
    if (!isPlainObject(data)) return undefined;
    const out: Record<string, unknown> = {};
    for (const key of plan.numbers) {
      if (!(key in data)) continue;
      const value = data[key];
      if (value !== null && value !== undefined && typeof value !== 'number') return undefined;
      out[key] = value;
    }
    for (const [key, fields] of plan.sections) {
      const value = data[key];
      if (value === undefined) {
        out[key] = [];
        continue;
      }
      if (!Array.isArray(value)) return undefined;
      for (const item of value) if (!inZodOrder(item, fields)) return undefined;
      out[key] = value;
    }
    for (const key of Object.keys(data)) {
      if (!plan.known.has(key)) out[key] = data[key];
    }
    return out;
  };
}

interface Plan {
  numbers: string[];
  sections: [string, Map<string, number>][];
  known: Set<string>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Known fields are strings or null and come first, in shape order. */
function inZodOrder(item: unknown, fields: Map<string, number>): boolean {
  if (!isPlainObject(item)) return false;
  let last = -1;
  let other = false;
  for (const key in item) {
    const index = fields.get(key);
    if (index === undefined) {
      other = true;
      continue;
    }
    if (other || index <= last) return false;
    last = index;
    const value = item[key];
    if (value !== null && typeof value !== 'string') return false;
  }
  return true;
}

type Def = { type?: string; innerType?: unknown; element?: unknown; shape?: Record<string, unknown> };
const defOf = (schema: unknown): Def => ((schema as { _zod?: { def?: Def } })._zod?.def ?? {}) as Def;

/** The schema's plan, or undefined when its shape is not the expected one. */
function planOf(schema: z.ZodType): Plan | undefined {
  const def = defOf(schema);
  if (def.type !== 'object' || !def.shape) return undefined;
  const plan: Plan = { numbers: [], sections: [], known: new Set(Object.keys(def.shape)) };
  // Keys must be in shape order in the output: numbers and sections are interleaved in the
  // shape, so the order is checked rather than assumed.
  const order: string[] = [];
  for (const [key, field] of Object.entries(def.shape)) {
    const fieldDef = defOf(field);
    const z = field as z.ZodType;
    if (fieldDef.type === 'default') {
      const array = defOf(fieldDef.innerType);
      const object = defOf(array.element);
      if (array.type !== 'array' || object.type !== 'object' || !object.shape) return undefined;
      const fields = new Map<string, number>();
      for (const [name, s] of Object.entries(object.shape)) {
        const check = s as z.ZodType;
        const ok = ['x', null].every((v) => {
          const r = check.safeParse(v);
          return r.success && r.data === v;
        });
        if (!ok) return undefined;
        fields.set(name, fields.size);
      }
      const empty = z.safeParse(undefined);
      if (!empty.success || !Array.isArray(empty.data) || empty.data.length !== 0) return undefined;
      plan.sections.push([key, fields]);
    } else {
      const ok = [1, null].every((v) => {
        const r = z.safeParse(v);
        return r.success && r.data === v;
      });
      const absent = z.safeParse(undefined);
      if (!ok || !absent.success || absent.data !== undefined || z.safeParse('1').success) return undefined;
      plan.numbers.push(key);
    }
    order.push(key);
  }
  // Numbers are written before sections in the output: only valid if the shape lists them first.
  const firstSection = order.findIndex((k) => plan.sections.some(([s]) => s === k));
  if (firstSection >= 0 && order.slice(firstSection).some((k) => plan.numbers.includes(k))) return undefined;
  return plan;
}
