import { describe, expect, it } from 'vitest';
import { createTerminalLine, formatBar } from '../../../src/observability/progress.js';

function capture(columns = 40) {
  const chunks: string[] = [];
  return { chunks, stream: { isTTY: true, columns, write: (t: string) => chunks.push(t) } };
}

describe('terminal line', () => {
  it('writes records above the shown line and draws the line again under them', () => {
    const { chunks, stream } = capture();
    const line = createTerminalLine(stream);
    line.writeAbove('before\n');
    line.show('bar 1/2');
    line.writeAbove('a record');
    line.clear();
    line.writeAbove('after\n');
    expect(chunks).toEqual([
      'before\n',
      '\r\x1b[2Kbar 1/2',
      '\r\x1b[2K',
      'a record\n',
      'bar 1/2',
      '\r\x1b[2K',
      'after\n',
    ]);
  });

  it('cuts the status line to the terminal width so that it never wraps', () => {
    const { chunks, stream } = capture(30);
    createTerminalLine(stream).show('x'.repeat(100));
    expect(chunks[0]).toBe(`\r\x1b[2K${'x'.repeat(29)}`);
  });

  it('formats the bar', () => {
    expect(formatBar({ done: 5, total: 10, rowsLoaded: 100 }, 10)).toBe(
      `windows ${'█'.repeat(15)}${'░'.repeat(15)} 5/10 | 100 rows | 10 rows/s | ETA 10s`,
    );
  });
});
