/**
 * Progress on stderr: redrawn in place on a terminal, a line now and then otherwise (logs and CI), with the
 * elapsed time and an estimate of the time left.
 */

/** What a progress display writes to: a stream, with `isTTY` / `columns` when it is a terminal. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** `45s`, `3m05s`, `1h02m`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * The time left when `done` of `total` took `elapsedMs`, at the same pace; undefined before the first item is
 * done (no pace yet) or once all are.
 */
export function etaMs(done: number, total: number, elapsedMs: number): number | undefined {
  if (done <= 0 || done >= total) return undefined;
  return (elapsedMs / done) * (total - done);
}

/** `elapsed 12s, ETA 40s` (`elapsed 52s` when nothing is left or no pace is known yet). */
export function timeText(done: number, total: number, elapsedMs: number): string {
  const eta = etaMs(done, total, elapsedMs);
  return `elapsed ${formatDuration(elapsedMs)}${eta === undefined ? '' : `, ETA ${formatDuration(eta)}`}`;
}

/** Options of {@link ProgressLine}. */
export interface ProgressOptions {
  /** Off a terminal: a line every this many items (default: every 10 % of the total). */
  every?: number;
  /** The clock (tests). @default performance.now */
  now?: () => number;
}

/** A one-line progress display: `[####......]  40% 4/10 documents, elapsed 3s, ETA 4s`. */
export class ProgressLine {
  private lastStep = -1;
  private lastDone = -1;
  private drawn = false;
  /** The line last drawn on a terminal (redrawn below a log line). */
  private lastDrawn = '';
  private readonly started: number;
  private readonly now: () => number;

  constructor(
    private readonly stream: ProgressStream = process.stderr,
    private readonly enabled = true,
    private readonly options: ProgressOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.started = this.now();
  }

  update(done: number, total: number, detail: string): void {
    if (!this.enabled) return;
    const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
    const line = `${bar(pct)} ${String(pct).padStart(3)}% ${done}/${total} ${detail}, ${timeText(done, total, this.now() - this.started)}`;
    if (this.stream.isTTY) {
      this.lastDrawn = `\r${line.slice(0, (this.stream.columns ?? 100) - 1)}\u001b[K`;
      this.stream.write(this.lastDrawn);
      this.drawn = true;
      return;
    }
    const step =
      this.options.every !== undefined
        ? Math.floor(done / this.options.every)
        : Math.floor(pct / 10);
    // A line at each step, and the last one once.
    if (step !== this.lastStep || (done === total && this.lastDone !== total)) {
      this.lastStep = step;
      this.lastDone = done;
      this.stream.write(`${line}\n`);
    }
  }

  /**
   * Writes a log line (a store's message, such as an index build's) without breaking the display: on a terminal the
   * drawn line is cleared, the message written, and the line drawn again below it; otherwise the message is a line
   * of its own.
   */
  log(message: string): void {
    if (this.drawn) {
      this.stream.write(`\r\u001b[K${message}\n${this.lastDrawn}`);
      return;
    }
    this.stream.write(`${message}\n`);
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

/** Options of {@link ExperimentProgress}. */
export interface ExperimentProgressOptions {
  /** Trials this run will evaluate at most (the budget left). */
  trials: number;
  /** Off a terminal: a line every this many questions of a trial. @default 10 */
  questionsEvery?: number;
  now?: () => number;
}

/**
 * An experiment's progress: log lines (status events, finished patterns) with the trials done, the time elapsed
 * and an ETA, and, below them on a terminal, a redrawn line of the questions answered in each running trial; off a
 * terminal, a line every N questions of a trial.
 */
export class ExperimentProgress {
  private readonly started: number;
  private readonly now: () => number;
  private readonly running = new Map<string, { done: number; total: number; lastStep: number }>();
  private trialsDone = 0;
  private drawn = false;

  constructor(
    private readonly stream: ProgressStream,
    private readonly options: ExperimentProgressOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
    this.started = this.now();
  }

  /** Elapsed time as the log prefixes it: `  12.3s`. */
  elapsed(): string {
    return `${((this.now() - this.started) / 1000).toFixed(1).padStart(6)}s`;
  }

  /** Writes a log line (above the questions line on a terminal). */
  log(line: string): void {
    this.clear();
    this.stream.write(`${line}\n`);
    this.redraw();
  }

  /** A trial finished (scored, cached or failed): the log line gets the trials done and the ETA. */
  trialDone(pattern: string | undefined, line: string): void {
    this.trialsDone += 1;
    if (pattern !== undefined) this.running.delete(pattern);
    const total = Math.max(this.options.trials, this.trialsDone);
    this.log(
      `${line}  [${this.trialsDone}/${total} trials, ${timeText(this.trialsDone, total, this.now() - this.started)}]`,
    );
  }

  /** One more question of a trial answered. */
  question(pattern: string, done: number, total: number): void {
    const entry = this.running.get(pattern) ?? { done: 0, total, lastStep: 0 };
    entry.done = done;
    entry.total = total;
    this.running.set(pattern, entry);
    if (this.stream.isTTY) {
      this.clear();
      this.redraw();
      return;
    }
    const every = this.options.questionsEvery ?? 10;
    const step = Math.floor(done / every);
    if (step > entry.lastStep || done === total) {
      entry.lastStep = step;
      this.stream.write(`${this.elapsed()}    ${pattern}: ${done}/${total} questions answered\n`);
    }
    if (done === total) this.running.delete(pattern);
  }

  /** Ends the display (the questions line is removed). */
  end(): void {
    this.clear();
    this.running.clear();
  }

  private clear(): void {
    if (this.drawn) this.stream.write('\r\u001b[K');
    this.drawn = false;
  }

  private redraw(): void {
    if (!this.stream.isTTY || this.running.size === 0) return;
    const parts = [...this.running.entries()].map(
      ([name, e]) => `${name} ${e.done}/${e.total} questions`,
    );
    const line = `  … ${parts.join(' · ')}`;
    this.stream.write(line.slice(0, (this.stream.columns ?? 100) - 1));
    this.drawn = true;
  }
}
