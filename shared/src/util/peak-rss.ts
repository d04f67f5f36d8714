/**
 * The process's peak resident set size. On Linux it is read from `/proc/self/status` (`VmHWM`, the peak of this
 * process's own address space). `process.resourceUsage().maxRSS` is the fallback elsewhere: on Linux it keeps,
 * across `exec`, the peak of the process that forked it, so a small CLI started from a large test runner would
 * report the runner's memory.
 */
import { readFileSync } from 'node:fs';

/** Peak resident set size of this process, in bytes. */
export function peakRssBytes(): number {
  try {
    const found = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (found) return Number(found[1]) * 1024;
  } catch {
    // No procfs: the portable figure below.
  }
  return process.resourceUsage().maxRSS * 1024;
}
