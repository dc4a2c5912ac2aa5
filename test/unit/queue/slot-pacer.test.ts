import { describe, expect, it, vi } from 'vitest';
import { SlotPacer } from '../../../src/queue/worker-slots.js';

describe('SlotPacer', () => {
  it('wakes the paused slots when stopped, and does not pause a slot that comes to it after', async () => {
    // A polling interval longer than the test: each pause below ends only through stop.
    const pacer = new SlotPacer(600_000);
    const line = pacer.line();
    let woken = false;
    const paused = line.pause().then(() => (woken = true));
    expect(line.stopping).toBe(false);
    pacer.stop();
    await paused;
    expect(woken).toBe(true);
    // A slot that was fetching a job when stop came pauses next: it must not wait an interval.
    await line.pause();
    expect(line.stopping).toBe(true);
  });

  it('stop wakes the waiting slots of every line, not only their pollers', async () => {
    const pacer = new SlotPacer(600_000);
    const lines = [pacer.line(), pacer.line()];
    const paused = lines.flatMap((line) => [line.pause(), line.pause(), line.pause()]);
    pacer.stop();
    await Promise.all(paused);
  });
});

describe('IdleLine', () => {
  it('lets one idle slot poll each interval while the others wait, and hands the poll on', async () => {
    vi.useFakeTimers();
    try {
      const line = new SlotPacer(1000).line();
      const woke: string[] = [];
      const slot = (name: string) => line.pause().then(() => woke.push(name));
      void slot('a');
      void slot('b');
      void slot('c');
      // Only the first slot to pause polls: after one interval it alone fetches again.
      await vi.advanceTimersByTimeAsync(999);
      expect(woke).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(woke).toEqual(['a']);
      // Its fetches keep finding nothing: it polls once an interval, and b and c still wait.
      void (async () => {
        for (let i = 0; i < 5; i++) await slot('a');
      })();
      await vi.advanceTimersByTimeAsync(5000);
      expect(woke).toEqual(['a', 'a', 'a', 'a', 'a', 'a']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('wakes the slot that waited longest at once when a fetch finds a job', async () => {
    vi.useFakeTimers();
    try {
      const line = new SlotPacer(1000).line();
      const woke: string[] = [];
      const slot = (name: string) => line.pause().then(() => woke.push(name));
      void slot('a'); // the poller
      void slot('b');
      void slot('c');
      await vi.advanceTimersByTimeAsync(1000);
      expect(woke).toEqual(['a']);
      // a's fetch found a job: b fetches at once, without an interval; c waits for b's fetch.
      line.found();
      await vi.advanceTimersByTimeAsync(0);
      expect(woke).toEqual(['a', 'b']);
      // b found one too: c fetches at once.
      line.found();
      await vi.advanceTimersByTimeAsync(0);
      expect(woke).toEqual(['a', 'b', 'c']);
      // c found none: with a running its job and nobody polling, c polls.
      void slot('c');
      await vi.advanceTimersByTimeAsync(999);
      expect(woke).toEqual(['a', 'b', 'c']);
      await vi.advanceTimersByTimeAsync(1);
      expect(woke).toEqual(['a', 'b', 'c', 'c']);
    } finally {
      vi.useRealTimers();
    }
  });
});
