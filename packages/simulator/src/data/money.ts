/**
 * Exact money for the simulator: amounts are integers in minor units (bigint when summed) and
 * become decimal strings only when written. No floating point ever touches an amount.
 */

/** Decimal places per ISO 4217 currency used by the simulator (JPY has none, KWD three). */
export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = {
  USD: 2,
  EUR: 2,
  GBP: 2,
  CAD: 2,
  AUD: 2,
  JPY: 0,
  KWD: 3,
};

export function currencyExponent(currency: string): number {
  return CURRENCY_EXPONENTS[currency] ?? 2;
}

/** Minor units → decimal string with `scale` places: (-1234n, 2) → "-12.34"; (5n, 0) → "5". */
export function formatScaled(units: bigint | number, scale: number): string {
  const v = typeof units === 'bigint' ? units : BigInt(units);
  const negative = v < 0n;
  const abs = negative ? -v : v;
  let text = abs.toString();
  if (scale > 0) {
    text = text.padStart(scale + 1, '0');
    text = `${text.slice(0, -scale)}.${text.slice(-scale)}`;
  }
  return negative ? `-${text}` : text;
}

/** Minor units of a currency → its decimal string (JPY 1500 → "1500", USD 1500 → "15.00"). */
export function formatMoney(units: bigint | number, currency: string): string {
  return formatScaled(units, currencyExponent(currency));
}

/** Parse an exact decimal string to units at `scale` places; throws on anything else. */
export function parseScaled(text: string, scale: number): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) throw new Error(`Not a decimal: ${text}`);
  const frac = m[3] ?? '';
  if (frac.length > scale && /[1-9]/.test(frac.slice(scale))) throw new Error(`Too many decimals: ${text}`);
  const units = BigInt(m[2]! + frac.slice(0, scale).padEnd(scale, '0'));
  return m[1] === '-' ? -units : units;
}

/** Sum of exact decimal strings, as an exact decimal string with the largest scale seen. */
export function sumDecimals(values: Iterable<string>): string {
  let scale = 0;
  const list: string[] = [];
  for (const v of values) {
    list.push(v);
    const dot = v.indexOf('.');
    if (dot >= 0) scale = Math.max(scale, v.length - dot - 1);
  }
  let total = 0n;
  for (const v of list) total += parseScaled(v, scale);
  return formatScaled(total, scale);
}

/** An accumulator of exact decimals: per currency (minor units) and a cross-currency total at scale 3. */
export class MoneyTally {
  count = 0;
  readonly byCurrency = new Map<string, bigint>();
  private totalMilli = 0n;

  add(units: bigint | number, currency: string): void {
    const v = typeof units === 'bigint' ? units : BigInt(units);
    this.count++;
    this.byCurrency.set(currency, (this.byCurrency.get(currency) ?? 0n) + v);
    this.totalMilli += v * 10n ** BigInt(3 - currencyExponent(currency));
  }

  /** `{ USD: "12.34", JPY: "500" }`, currencies sorted. */
  currencies(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const c of [...this.byCurrency.keys()].sort()) out[c] = formatMoney(this.byCurrency.get(c)!, c);
    return out;
  }

  /** Sum over all currencies, as a decimal with three places (a checksum, not money). */
  total(): string {
    return formatScaled(this.totalMilli, 3);
  }
}
