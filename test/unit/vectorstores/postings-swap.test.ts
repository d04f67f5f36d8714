import { describe, expect, it } from 'vitest';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
import { swapPostingTables } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import type { StoreContext } from '../../../shared/src/vectorstores/pgvector/store-context.js';
import type { SqlClient } from '../../../shared/src/vectorstores/sql-client.js';

/**
 * The swap's decisions on a server whose answers are scripted: the locks it may not get (SQLSTATE 55P03, as
 * PostgreSQL's lock_timeout raises it) and who holds them (`pg_locks` joined to `pg_stat_activity`). The swap itself
 * runs against PGlite and a PostgreSQL server in the keyword-index suite and `pg-server.test.ts`; an autovacuum
 * worker cannot be made to hold a table on demand there.
 */
function scripted(
  exclusiveFailures: number,
  holders: { vacuum: number; other: number; ms: number },
) {
  const sent: string[] = [];
  let failures = exclusiveFailures;
  const client: SqlClient = {
    dialect: 'postgres',
    async query<R>(text: string) {
      sent.push(text.replace(/\s+/g, ' ').trim().slice(0, 60));
      if (text.includes('pg_relation_size')) return { rows: [{ folded: 1e8, fresh: 9e8 }] as R[] };
      if (text.includes('pg_locks')) return { rows: [holders] as R[] };
      if (text.includes('ACCESS EXCLUSIVE') && failures > 0) {
        failures -= 1;
        throw Object.assign(new Error('canceling statement due to lock timeout'), {
          code: '55P03',
        });
      }
      return { rows: [] as R[] };
    },
    async transaction(fn) {
      sent.push('BEGIN');
      const out = await fn(client);
      sent.push('COMMIT');
      return out;
    },
    async close() {},
  } as SqlClient;
  const logged: string[] = [];
  const ctx = {
    client,
    t: collectionTables('ai4rag_swap'),
    collectionName: 'ai4rag_swap',
    keywordIndex: { freshFromRow: 100_000, foldMin: 2_000_000, swapMinBytes: 64 * 1024 * 1024 },
    logger: (m: string) => logged.push(m),
    pglite: false,
  } as unknown as StoreContext;
  const waits = () => sent.filter((s) => s.startsWith('SET LOCAL lock_timeout'));
  const renames = () => sent.filter((s) => s.startsWith('ALTER')).length;
  return { ctx, waits, renames, logged };
}

describe('the postings tables swap (swapPostingTables)', () => {
  it('waits 100 ms for the tables and, with nobody in the way, renames both tables and both indexes', async () => {
    const s = scripted(0, { vacuum: 0, other: 0, ms: 1000 });
    expect(await swapPostingTables(s.ctx, 5000)).toBe(true);
    expect(s.waits()).toEqual(['SET LOCAL lock_timeout = 5000', 'SET LOCAL lock_timeout = 100']);
    expect(s.renames()).toBe(6);
    expect(s.logged.at(-1)).toMatch(
      /\(858 MiB\) outgrew the folded ones \(95\.4 MiB\): the tables traded names/,
    );
  });

  it('when only autovacuum held them, tries once more past deadlock_timeout, so PostgreSQL cancels the autovacuum', async () => {
    const s = scripted(1, { vacuum: 1, other: 0, ms: 1000 });
    expect(await swapPostingTables(s.ctx, 5000)).toBe(true);
    expect(s.waits()).toEqual([
      'SET LOCAL lock_timeout = 5000',
      'SET LOCAL lock_timeout = 100',
      'SET LOCAL lock_timeout = 5000',
      'SET LOCAL lock_timeout = 2000',
    ]);
    expect(s.renames()).toBe(6);
    expect(s.logged.some((m) => m.includes('autovacuum holds them'))).toBe(true);
  });

  it('gives up after 100 ms when a search or a writer holds them, and after the second wait when autovacuum stays', async () => {
    const busy = scripted(1, { vacuum: 1, other: 1, ms: 1000 });
    expect(await swapPostingTables(busy.ctx, 5000)).toBe(false);
    expect(busy.waits()).toHaveLength(2);
    expect(busy.renames()).toBe(0);
    expect(busy.logged.at(-1)).toMatch(
      /held them \(searches, writers, a vacuum\); folding without the swap/,
    );
    const stubborn = scripted(2, { vacuum: 1, other: 0, ms: 1000 });
    expect(await swapPostingTables(stubborn.ctx, 5000)).toBe(false);
    expect(stubborn.waits()).toHaveLength(4);
    expect(stubborn.renames()).toBe(0);
  });

  it('leaves tables alone that are not due: the folded one larger, or the fresh one under the minimum', async () => {
    const s = scripted(0, { vacuum: 0, other: 0, ms: 1000 });
    s.ctx.keywordIndex.swapMinBytes = 1e9;
    expect(await swapPostingTables(s.ctx, 5000)).toBe(false);
    expect(s.waits()).toEqual([]);
  });
});
