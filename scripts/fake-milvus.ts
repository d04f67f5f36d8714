/**
 * Runs the fake Milvus gRPC server in the foreground (for trying the Milvus store locally without a server).
 * Usage: node --import tsx scripts/fake-milvus.ts [--port 19530]
 * Prints `MILVUS_URI=http://127.0.0.1:PORT`; stops on SIGINT / SIGTERM. Data lives in memory only.
 */
import { startFakeMilvus } from '../test/support/fake-milvus/server.js';

function parsePort(argv: readonly string[]): number {
  const i = argv.indexOf('--port');
  if (i === -1) return 19530;
  const port = Number(argv[i + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be an integer in 0..65535, got ${String(argv[i + 1])}`);
  }
  return port;
}

const fake = await startFakeMilvus(parsePort(process.argv.slice(2)));
console.log(`MILVUS_URI=${fake.uri}`);
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void fake.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
