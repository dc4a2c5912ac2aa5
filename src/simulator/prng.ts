/**
 * Deterministic pseudo-random numbers for the simulator (never Math.random): a 32-bit string hash
 * (FNV-1a mixed with murmur finalisers) turns a key such as `seed|org|day|index` into the state of
 * a small fast generator (sfc32). The same key always yields the same sequence on every platform.
 */

/** 32-bit hash of a string (FNV-1a, then the murmur3 finaliser for avalanche). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A seeded generator: `next()` is uniform in [0, 1); helpers draw integers, picks and digits. */
export interface Rng {
  next(): number;
  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** Pick by weights (same length as items). */
  weighted<T>(items: readonly T[], weights: readonly number[]): T;
  chance(probability: number): boolean;
  digits(count: number): string;
  hex(count: number): string;
}

export function createRng(key: string): Rng {
  let a = hash32(`a|${key}`);
  let b = hash32(`b|${key}`);
  let c = hash32(`c|${key}`);
  let d = hash32(`d|${key}`) | 1;
  const next32 = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 12; i++) next32();
  const rng: Rng = {
    next: () => next32() / 4294967296,
    int: (min, max) => min + Math.floor(rng.next() * (max - min + 1)),
    pick: (items) => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[Math.floor(rng.next() * items.length)]!;
    },
    weighted: (items, weights) => {
      let total = 0;
      for (const w of weights) total += w;
      let r = rng.next() * total;
      for (let i = 0; i < items.length; i++) {
        r -= weights[i] ?? 0;
        if (r < 0) return items[i]!;
      }
      return items[items.length - 1]!;
    },
    chance: (p) => rng.next() < p,
    digits: (count) => {
      let s = '';
      for (let i = 0; i < count; i++) s += String(next32() % 10);
      return s;
    },
    hex: (count) => {
      let s = '';
      for (let i = 0; i < count; i++) s += (next32() & 15).toString(16);
      return s;
    },
  };
  return rng;
}

/** A deterministic UUID-looking id (8-4-4-4-12 hex) for a key. */
export function stableUuid(key: string): string {
  const r = createRng(`uuid|${key}`);
  const h = r.hex(32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
