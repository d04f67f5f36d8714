/** A one-line progress display on stderr: redrawn in place on a terminal, a line every 10 % otherwise. */
export class ProgressLine {
  private lastDecile = -1;
  private drawn = false;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly enabled = true,
  ) {}

  update(done: number, total: number, detail: string): void {
    if (!this.enabled) return;
    const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
    const line = `${bar(pct)} ${String(pct).padStart(3)}% ${done}/${total} ${detail}`;
    if (this.stream.isTTY) {
      this.stream.write(`\r${line.slice(0, (this.stream.columns ?? 100) - 1)}\u001b[K`);
      this.drawn = true;
    } else {
      const decile = Math.floor(pct / 10);
      if (decile !== this.lastDecile) {
        this.lastDecile = decile;
        this.stream.write(`${line}\n`);
      }
    }
  }

  done(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}

function bar(pct: number): string {
  const width = 20;
  const filled = Math.round((pct / 100) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}
