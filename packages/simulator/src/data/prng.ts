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

/** Mix two 32-bit integers into one (murmur3 finaliser over a combination). */
export function mix32(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) + b) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const POW10 = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000];

/**
 * A seeded generator (sfc32): `next()` is uniform in [0, 1); helpers draw integers, picks and
 * digits. A class (not closures) so that creating one per transaction stays cheap.
 */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(a: number, b: number, c: number, d: number) {
    this.a = a | 0;
    this.b = b | 0;
    this.c = c | 0;
    this.d = d | 1;
    for (let i = 0; i < 12; i++) this.next32();
  }

  /** A generator for (base, index) without string hashing: `base` is usually a hash32 of a key. */
  static fromInts(base: number, index: number): Rng {
    const h = mix32(base, index);
    return new Rng(h, mix32(h, 0x68e31da4), mix32(h, 0x1b56c4e9), mix32(index, base));
  }

  next32(): number {
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.next32() / 4294967296;
  }

  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Pick by weights (same length as items). */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < items.length; i++) {
      r -= weights[i] ?? 0;
      if (r < 0) return items[i]!;
    }
    return items[items.length - 1]!;
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** `count` decimal digits (leading zeros kept). */
  digits(count: number): string {
    let s = '';
    while (count > 0) {
      const k = Math.min(count, 9);
      s += String(this.next32() % POW10[k]!).padStart(k, '0');
      count -= k;
    }
    return s;
  }

  hex(count: number): string {
    let s = '';
    while (count > 0) {
      const k = Math.min(count, 8);
      s += (this.next32() >>> (32 - 4 * k)).toString(16).padStart(k, '0');
      count -= k;
    }
    return s;
  }
}

export function createRng(key: string): Rng {
  return new Rng(hash32(`a|${key}`), hash32(`b|${key}`), hash32(`c|${key}`), hash32(`d|${key}`));
}

/** A deterministic UUID-looking id (8-4-4-4-12 hex) for a key. */
export function stableUuid(key: string): string {
  const r = createRng(`uuid|${key}`);
  const h = r.hex(32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
