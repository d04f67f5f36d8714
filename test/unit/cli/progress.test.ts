/**
 * Progress displays with a given clock: ETA from the pace so far, a line every N items off a terminal, a redrawn
 * line on one, and the experiment's per-question progress inside trials.
 */
import { describe, expect, it } from 'vitest';
import {
  ExperimentProgress,
  etaMs,
  formatDuration,
  ProgressLine,
  timeText,
} from '../../../bin/cli/progress.js';

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { writes, s: { isTTY, columns: 200, write: (t: string) => writes.push(t) } };
}

function clock(start = 1000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('progress', () => {
  it('formats durations and estimates the time left at the pace so far', () => {
    expect([
      formatDuration(400),
      formatDuration(45_000),
      formatDuration(185_000),
      formatDuration(3_720_000),
    ]).toEqual(['0s', '45s', '3m05s', '1h02m']);
    expect(etaMs(0, 10, 5000)).toBeUndefined();
    expect(etaMs(4, 10, 8000)).toBe(12_000);
    expect(etaMs(10, 10, 8000)).toBeUndefined();
    expect(timeText(4, 10, 8000)).toBe('elapsed 8s, ETA 12s');
    expect(timeText(10, 10, 8000)).toBe('elapsed 8s');
  });

  it('writes a line every N items off a terminal, with the ETA, and the last one once', () => {
    // Arrange
    const { writes, s } = stream(false);
    const c = clock();
    const line = new ProgressLine(s, true, { every: 2, now: c.now });

    // Act
    for (let done = 1; done <= 5; done++) {
      c.advance(1000);
      line.update(done, 5, 'documents');
    }
    line.update(5, 5, 'documents');
    line.done();

    // Assess
    expect(writes).toEqual([
      '[####................]  20% 1/5 documents, elapsed 1s, ETA 4s\n',
      '[########............]  40% 2/5 documents, elapsed 2s, ETA 3s\n',
      '[################....]  80% 4/5 documents, elapsed 4s, ETA 1s\n',
      '[####################] 100% 5/5 documents, elapsed 5s\n',
    ]);
  });

  it('redraws one line on a terminal and ends it with a newline', () => {
    const { writes, s } = stream(true);
    const c = clock();
    const line = new ProgressLine(s, true, { now: c.now });
    c.advance(2000);
    line.update(1, 2, 'questions');
    line.done();
    expect(writes).toEqual([
      '\r[##########..........]  50% 1/2 questions, elapsed 2s, ETA 2s\u001b[K',
      '\n',
    ]);
  });

  it('writes a log line above the redrawn line on a terminal, and as a line of its own elsewhere', () => {
    // Arrange
    const tty = stream(true);
    const c = clock();
    const line = new ProgressLine(tty.s, true, { now: c.now });
    const plain = stream(false);
    const offTerminal = new ProgressLine(plain.s, true, { every: 10, now: c.now });
    // Act
    line.log('before anything is drawn');
    c.advance(2000);
    line.update(1, 2, 'documents');
    line.log('collection c: HNSW segment (0, 20000]: indexing 20000 rows');
    line.done();
    offTerminal.update(1, 20, 'documents');
    offTerminal.log('collection c: HNSW segment (0, 20000]: indexing 20000 rows');
    // Assess: the drawn line cleared, the message on its own line, the progress line drawn again below it
    const drawn = '\r[##########..........]  50% 1/2 documents, elapsed 2s, ETA 2s\u001b[K';
    expect(tty.writes).toEqual([
      'before anything is drawn\n',
      drawn,
      `\r\u001b[Kcollection c: HNSW segment (0, 20000]: indexing 20000 rows\n${drawn}`,
      '\n',
    ]);
    expect(plain.writes).toEqual([
      '[#...................]   5% 1/20 documents, elapsed 2s, ETA 38s\n',
      'collection c: HNSW segment (0, 20000]: indexing 20000 rows\n',
    ]);
  });

  it('writes nothing when disabled', () => {
    const { writes, s } = stream(false);
    const line = new ProgressLine(s, false);
    line.update(1, 2, 'x');
    line.done();
    expect(writes).toEqual([]);
  });

  it('reports trials done with an ETA and, off a terminal, a line every N questions of each trial', () => {
    // Arrange
    const { writes, s } = stream(false);
    const c = clock(0);
    const p = new ExperimentProgress(s, { trials: 4, questionsEvery: 5, now: c.now });

    // Act: two trials answering 10 questions each, interleaved; then both finish
    for (let i = 1; i <= 10; i++) {
      c.advance(100);
      p.question('Pattern1', i, 10);
      p.question('Pattern2', i, 10);
    }
    p.trialDone('Pattern1', 'P1 done');
    p.trialDone('Pattern2', 'P2 done');
    p.end();

    // Assess
    expect(writes).toEqual([
      '   0.5s    Pattern1: 5/10 questions answered\n',
      '   0.5s    Pattern2: 5/10 questions answered\n',
      '   1.0s    Pattern1: 10/10 questions answered\n',
      '   1.0s    Pattern2: 10/10 questions answered\n',
      'P1 done  [1/4 trials, elapsed 1s, ETA 3s]\n',
      'P2 done  [2/4 trials, elapsed 1s, ETA 1s]\n',
    ]);
  });

  it('keeps the running trials on one redrawn line below the log on a terminal', () => {
    // Arrange
    const { writes, s } = stream(true);
    const c = clock(0);
    const p = new ExperimentProgress(s, { trials: 2, now: c.now });

    // Act
    p.question('Pattern1', 1, 3);
    p.question('Pattern2', 2, 3);
    p.log('a status line');
    p.trialDone('Pattern1', 'P1 done');
    p.end();

    // Assess
    expect(writes).toEqual([
      '  … Pattern1 1/3 questions',
      '\r\u001b[K',
      '  … Pattern1 1/3 questions · Pattern2 2/3 questions',
      '\r\u001b[K',
      'a status line\n',
      '  … Pattern1 1/3 questions · Pattern2 2/3 questions',
      '\r\u001b[K',
      'P1 done  [1/2 trials, elapsed 0s, ETA 0s]\n',
      '  … Pattern2 2/3 questions',
      '\r\u001b[K',
    ]);
  });
});
