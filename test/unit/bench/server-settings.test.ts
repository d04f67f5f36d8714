import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_SETTINGS, serverSettingsLine } from '../../../bench/measure.js';
import { openPglite, type PgliteSqlClient } from '../../../shared/src/vectorstores/sql-client.js';

let client: PgliteSqlClient;
beforeAll(async () => {
  client = await openPglite({});
});
afterAll(async () => {
  await client.close();
});

/** The same settings read one by one, as the line must report them. */
async function setting(name: string): Promise<string> {
  const res = await client.query<{ v: string }>('SELECT current_setting($1) AS v', [name]);
  return (res.rows[0] as { v: string }).v;
}

describe('serverSettingsLine (the server a bench figure was measured on)', () => {
  it('names the version, the pgvector extension and each cache setting, in order, with their values', async () => {
    const version = (await setting('server_version')).split(' ')[0];
    const values = await Promise.all(SERVER_SETTINGS.map(setting));
    const ext = await client.query<{ v: string }>(
      "SELECT extversion AS v FROM pg_extension WHERE extname = 'vector'",
    );
    const pgvector = ext.rows[0]?.v ?? 'absent';
    expect(await serverSettingsLine(client)).toBe(
      `PostgreSQL ${version}, pgvector ${pgvector}, shared_buffers ${values[0]}, effective_cache_size ${values[1]}, maintenance_work_mem ${values[2]}, max_wal_size ${values[3]}`,
    );
  });

  it('follows a setting changed for the session', async () => {
    await client.query("SET maintenance_work_mem = '77MB'");
    expect(await serverSettingsLine(client)).toContain(', maintenance_work_mem 77MB, ');
  });
});
