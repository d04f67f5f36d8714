import type { SqlClient } from '../../shared/src/vectorstores/sql-client.js';

/** A client that reports every statement it (and its transactions and sessions) runs, with its parameters. */
export function recordingClient(
  inner: SqlClient,
  onQuery: (text: string, params: readonly unknown[] | undefined) => void,
): SqlClient {
  const wrap = (c: SqlClient): SqlClient => ({
    dialect: c.dialect,
    query: (text, params) => {
      onQuery(text, params);
      return c.query(text, params);
    },
    transaction: (fn) => c.transaction((tx) => fn(wrap(tx))),
    close: () => c.close(),
    ...(c.session !== undefined && {
      session: <T>(fn: (s: SqlClient) => Promise<T>) =>
        (c.session as NonNullable<SqlClient['session']>)((s) => fn(wrap(s))),
    }),
  });
  return wrap(inner);
}

/**
 * A client that awaits `before(text)` ahead of every statement it (and its transactions and sessions) runs, and
 * passes binary COPY through only when `copy` (default true): lets a test hold a writer at a chosen statement.
 */
export function hookedClient(
  inner: SqlClient,
  before: (text: string) => Promise<void> | void,
  options: { copy?: boolean } = {},
): SqlClient {
  const wrap = (c: SqlClient): SqlClient => ({
    dialect: c.dialect,
    query: async (text, params) => {
      await before(text);
      return c.query(text, params);
    },
    transaction: (fn) => c.transaction((tx) => fn(wrap(tx))),
    close: () => c.close(),
    ...(c.copyFrom !== undefined &&
      options.copy !== false && {
        copyFrom: async (table: string, columns: readonly string[], data: Uint8Array) => {
          await before(`COPY ${table}`);
          return (c.copyFrom as NonNullable<SqlClient['copyFrom']>)(table, columns, data);
        },
      }),
    ...(c.session !== undefined && {
      session: <T>(fn: (s: SqlClient) => Promise<T>) =>
        (c.session as NonNullable<SqlClient['session']>)((s) => fn(wrap(s))),
    }),
  });
  return wrap(inner);
}
