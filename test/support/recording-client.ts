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
