import { describe, expect, it } from 'vitest';
import { PassNudge } from '../../../src/queue/queue-pass.js';

describe('PassNudge', () => {
  it('wakes the waiter once, and keeps a nudge that came while no one waited for the next wait', () => {
    const nudge = new PassNudge();
    let woken = 0;
    const wake = () => woken++;
    nudge.onNext(wake);
    nudge.nudge();
    nudge.nudge();
    expect(woken).toBe(1);
    // The second nudge came with no waiter: the next wait ends at once, and only that one.
    expect(nudge.take()).toBe(true);
    expect(nudge.take()).toBe(false);
  });

  it('does not wake a waiter that stopped waiting', () => {
    const nudge = new PassNudge();
    let woken = 0;
    const wake = () => woken++;
    nudge.onNext(wake);
    nudge.forget(wake);
    nudge.nudge();
    expect(woken).toBe(0);
    expect(nudge.take()).toBe(true);
  });
});
