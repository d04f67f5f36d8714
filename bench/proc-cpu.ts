/**
 * CPU time from Linux's /proc, for benchmarks that ask how many cores a run kept busy: the CPU of the children this
 * process has waited for (a CLI run it spawned), and of a PostgreSQL server (its postmaster and the backends it
 * has reaped). Elsewhere (no /proc) every reading is undefined and the benchmark says so.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The parent and the CPU time fields of one /proc/<pid>/stat line, in clock ticks. */
export interface ProcCpuTicks {
  ppid: number;
  utime: number;
  stime: number;
  /** Of the children waited for. */
  cutime: number;
  cstime: number;
}

/**
 * Reads the parent (field 4) and the CPU fields (14–17) of a /proc/<pid>/stat line, counted after the command name,
 * which may hold spaces and parentheses (so the split starts after its last `)`).
 * @throws {Error} for a line that is not one.
 * @example parseProcStat('42 (node) S 1 42 42 0 -1 4194560 1 2 3 4 150 30 7 2 20 0 11 0 99 0 0') // { ppid: 1, utime: 150, stime: 30, cutime: 7, cstime: 2 }
 */
export function parseProcStat(line: string): ProcCpuTicks {
  const end = line.lastIndexOf(')');
  const fields =
    end < 0
      ? []
      : line
          .slice(end + 2)
          .trim()
          .split(/\s+/);
  // fields[0] is field 3 (state): field n is fields[n - 3]
  const at = (n: number) => Number(fields[n - 3]);
  const ticks = { ppid: at(4), utime: at(14), stime: at(15), cutime: at(16), cstime: at(17) };
  if (!Object.values(ticks).every((v) => Number.isInteger(v) && v >= 0)) {
    throw new Error(`not a /proc/<pid>/stat line: "${line.slice(0, 80)}"`);
  }
  return ticks;
}

let ticksPerSecond: number | undefined;

/** The kernel's clock ticks per second (`getconf CLK_TCK`; 100 when it cannot be read). */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    } catch {
      ticksPerSecond = 100;
    }
    if (!Number.isFinite(ticksPerSecond) || ticksPerSecond <= 0) ticksPerSecond = 100;
  }
  return ticksPerSecond;
}

function readStat(pid: string | number): ProcCpuTicks | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) of the children this process has waited for, so far. */
export function childrenCpuSeconds(): number | undefined {
  const t = readStat('self');
  return t === undefined ? undefined : (t.cutime + t.cstime) / clockTicks();
}

/**
 * CPU seconds so far of the PostgreSQL server whose data directory is `dataDir` (on this machine): its postmaster's
 * own, that of the processes it has reaped (backends of closed connections, autovacuum workers), and that of its live
 * children (the backends of open connections, the background writers). Undefined without the directory or /proc.
 */
export function serverCpuSeconds(dataDir: string | undefined): number | undefined {
  if (dataDir === undefined || dataDir === '') return undefined;
  let pid: string | undefined;
  try {
    pid = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]?.trim();
  } catch {
    return undefined;
  }
  const t = pid ? readStat(pid) : undefined;
  if (t === undefined) return undefined;
  let ticks = t.utime + t.stime + t.cutime + t.cstime;
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const child = readStat(name);
    if (child !== undefined && child.ppid === Number(pid)) ticks += child.utime + child.stime;
  }
  return ticks / clockTicks();
}
