import { describe, expect, it } from 'vitest';
import { childrenCpuSeconds, parseProcStat, serverCpuSeconds } from '../../../bench/proc-cpu.js';

describe('bench CPU readings from /proc', () => {
  it('reads the CPU fields of a stat line, whatever the command name holds', () => {
    const tail = 'S 1 42 42 0 -1 4194560 1 2 3 4 150 30 7 2 20 0 11 0 99 0 0';
    expect(parseProcStat(`42 (node) ${tail}`)).toEqual({
      ppid: 1,
      utime: 150,
      stime: 30,
      cutime: 7,
      cstime: 2,
    });
    // A command name with spaces and a parenthesis (Linux shows it as the process set it)
    expect(parseProcStat(`43 (postgres: a) b) ${tail}`)).toEqual({
      ppid: 1,
      utime: 150,
      stime: 30,
      cutime: 7,
      cstime: 2,
    });
  });

  it('refuses what is not a stat line, quoting it', () => {
    expect(() => parseProcStat('not a stat line')).toThrow(
      'not a /proc/<pid>/stat line: "not a stat line"',
    );
    expect(() => parseProcStat('42 (node) S 1 2')).toThrow('not a /proc/<pid>/stat line');
  });

  it('gives no server reading without a data directory, and a number or nothing for the children', () => {
    expect(serverCpuSeconds(undefined)).toBeUndefined();
    expect(serverCpuSeconds('/nonexistent-ai4rag-dir')).toBeUndefined();
    const c = childrenCpuSeconds();
    if (process.platform === 'linux') expect(c).toBeGreaterThanOrEqual(0);
    else expect(c).toBeUndefined();
  });
});
