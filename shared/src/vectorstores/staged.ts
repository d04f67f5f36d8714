/**
 * Pure helpers of staged writes (see `BeginWriteOptions` in types.ts), shared by every vector-store adapter.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { VectorStoreConfigError } from './errors.js';

/** Default lease of a staged write: a writer that neither writes nor renews for this long is presumed dead. */
export const DEFAULT_LEASE_SECONDS = 900;
/** Longest lease accepted (a week: the Lambda flow's batches may wait in a queue for a redrive). */
export const MAX_LEASE_SECONDS = 7 * 24 * 3600;

const VERSION_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Checks a version token.
 * @throws {VectorStoreConfigError} for a token outside `[A-Za-z0-9._:-]{1,128}`.
 */
export function checkVersion(version: string): string {
  if (typeof version !== 'string' || !VERSION_RE.test(version)) {
    throw new VectorStoreConfigError(
      `write version must match ${VERSION_RE.source}, got ${JSON.stringify(version)}`,
    );
  }
  return version;
}

/** A fresh version token: time-ordered (base-36 milliseconds) plus 48 random bits. */
export function newVersion(now = Date.now()): string {
  return `v${now.toString(36)}-${randomBytes(6).toString('hex')}`;
}

/** The owner string of this process (`host:pid`). */
export function localOwner(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * Whether `owner` names a process of this host that is no longer running (so its write can be swept at once).
 * Owners of other hosts, or not of the `host:pid` form, are never presumed dead.
 */
export function isDeadLocalOwner(owner: string): boolean {
  const at = owner.lastIndexOf(':');
  if (at <= 0 || owner.slice(0, at) !== hostname()) return false;
  const pid = Number(owner.slice(at + 1));
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return false;
  return !isProcessAlive(pid);
}

/**
 * Whether a process of this host runs: signal 0 reaches it and, where `/proc` tells, it is not a zombie (a killed
 * child its parent has not reaped yet answers signal 0 but will never write again).
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error: unknown) {
    // EPERM: alive, owned by another user.
    return (error as { code?: string }).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) STATE …; comm may hold spaces and parentheses, so read after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/**
 * Compares two S3 `sequencer` values of one object key: negative when `a` is older, positive when newer, 0 when
 * equal. AWS: left-pad the shorter with zeros, then compare lexicographically (case-insensitive hexadecimal).
 * @example compareSequencers('0A', '00B') // < 0
 */
export function compareSequencers(a: string, b: string): number {
  const x = a.toUpperCase();
  const y = b.toUpperCase();
  const n = Math.max(x.length, y.length);
  const px = x.padStart(n, '0');
  const py = y.padStart(n, '0');
  return px < py ? -1 : px > py ? 1 : 0;
}

/** Checks a lease length in seconds. */
export function checkLease(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_LEASE_SECONDS) {
    throw new VectorStoreConfigError(
      `leaseSeconds must be in (0, ${MAX_LEASE_SECONDS}], got ${String(seconds)}`,
    );
  }
  return seconds;
}
