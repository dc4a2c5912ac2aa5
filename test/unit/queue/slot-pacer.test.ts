import { describe, expect, it } from 'vitest';
import { SlotPacer } from '../../../src/queue/worker-slots.js';

describe('SlotPacer', () => {
  it('wakes the paused slots when stopped, and does not pause a slot that comes to it after', async () => {
    // A polling interval longer than the test: each pause below ends only through stop.
    const pacer = new SlotPacer(600_000);
    let woken = false;
    const paused = pacer.pause().then(() => (woken = true));
    expect(pacer.stopping).toBe(false);
    pacer.stop();
    await paused;
    expect(woken).toBe(true);
    // A slot that was fetching a job when stop came pauses next: it must not wait an interval.
    await pacer.pause();
    expect(pacer.stopping).toBe(true);
  });
});
