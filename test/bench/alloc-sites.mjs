/**
 * Where a process's array buffers come from at its highest RSS: a preload that counts the bytes of
 * every Buffer of 16 KiB or more (and every socket read) by the place that made it, until V8
 * collects it (a FinalizationRegistry), and prints the largest places as they stood when the RSS
 * was highest. Live and dead-but-not-yet-collected buffers count alike: that is what RSS holds.
 *
 *   ALLOC_SITES_OUT=/tmp/sites.txt node --import ./test/bench/alloc-sites.mjs <cybs-etl cli> …
 *
 * It slows the process a little (a stack trace per large buffer) and is not part of the product.
 */
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import process from 'node:process';
import { Readable } from 'node:stream';
import { setInterval } from 'node:timers';

const MIN_BYTES = 16 * 1024;
const live = new Map();
const seen = new WeakSet();
const collected = new FinalizationRegistry(({ site, bytes }) =>
  live.set(site, (live.get(site) ?? 0) - bytes),
);

/** The four frames above the allocation, by function name. */
function site() {
  return (new Error().stack ?? '')
    .split('\n')
    .slice(3, 7)
    .map((line) => /at (?:async )?(\S+)/.exec(line.trim())?.[1] ?? '?')
    .join(' < ');
}

/** Each counted ArrayBuffer's entry, until it is detached (its memory freed then: releaseBuffer). */
const entries = new WeakMap();

function count(buffer, where) {
  const store = buffer?.buffer;
  if (store === undefined || seen.has(store) || store.byteLength < MIN_BYTES) return buffer;
  seen.add(store);
  const key = where ?? site();
  const entry = { site: key, bytes: store.byteLength };
  live.set(key, (live.get(key) ?? 0) + entry.bytes);
  entries.set(store, entry);
  collected.register(store, entry);
  return buffer;
}

const transfer = ArrayBuffer.prototype.transfer;
ArrayBuffer.prototype.transfer = function (...args) {
  const entry = entries.get(this);
  if (entry !== undefined) {
    live.set(entry.site, (live.get(entry.site) ?? 0) - entry.bytes);
    entry.bytes = 0;
  }
  return transfer.apply(this, args);
};

for (const name of ['alloc', 'allocUnsafe', 'allocUnsafeSlow', 'concat', 'from']) {
  const made = Buffer[name];
  Buffer[name] = function (...args) {
    return count(made.apply(this, args));
  };
}
const push = Readable.prototype.push;
Readable.prototype.push = function (chunk, encoding) {
  if (this instanceof net.Socket) count(chunk, 'a socket read');
  return push.call(this, chunk, encoding);
};

let highest = { rss: 0 };
const sample = () => {
  const m = process.memoryUsage();
  if (m.rss > highest.rss) highest = { ...m, sites: new Map(live) };
};
setInterval(sample, 25).unref();

process.on('exit', () => {
  sample();
  const mb = (bytes) => (bytes / 1048576).toFixed(1);
  const lines = [
    `highest RSS ${mb(highest.rss)} MB: V8 heap ${mb(highest.heapTotal ?? 0)} MB, array buffers ${mb(highest.arrayBuffers ?? 0)} MB`,
  ];
  const largest = [...(highest.sites ?? [])]
    .filter(([, bytes]) => bytes >= 512 * 1024)
    .sort((a, b) => b[1] - a[1]);
  for (const [where, bytes] of largest.slice(0, 25)) lines.push(`${mb(bytes).padStart(7)} MB  ${where}`);
  writeFileSync(process.env.ALLOC_SITES_OUT ?? '/dev/stderr', `${lines.join('\n')}\n`);
});
