/** Maps a line of one COPY statement back to the record number it came from (run-length coded). */
export class LineMap {
  private readonly starts: number[] = [];
  private readonly records: number[] = [];
  lines = 0;

  get runs(): number {
    return this.starts.length;
  }

  add(recordNumber: number): void {
    this.lines++;
    const k = this.starts.length - 1;
    if (k >= 0 && this.records[k]! + (this.lines - this.starts[k]!) === recordNumber) return;
    this.starts.push(this.lines);
    this.records.push(recordNumber);
  }

  recordAt(line: number): number | undefined {
    let lo = 0;
    let hi = this.starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid]! <= line) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0 || line > this.lines) return undefined;
    return this.records[found]! + (line - this.starts[found]!);
  }
}
