import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import { afterAll, beforeAll, describe } from 'vitest';
import { milvusConfigFromEnv } from '../../../shared/src/vectorstores/milvus/config.js';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import { runVectorStoreContract } from './contract.js';
import { runStagedWriteContract } from './staged-contract.js';

// Runs only against a real Milvus / Zilliz server: MILVUS_URI (and MILVUS_TOKEN, MILVUS_SERVER_CERT) set.
const env = { ...process.env };
const uri = env.MILVUS_URI;

describe.skipIf(!uri)('Milvus on a real server (MILVUS_URI)', () => {
  const config = uri ? milvusConfigFromEnv(env) : undefined;
  let client: MilvusClient | undefined;
  const created = new Set<string>();
  beforeAll(async () => {
    if (config === undefined) return;
    client = new MilvusClient({
      address: config.uri,
      ...(config.token ? { token: config.token } : {}),
      ssl: config.uri.startsWith('https://'),
      ...(config.serverCert ? { tls: { rootCert: Buffer.from(config.serverCert) } } : {}),
      logLevel: 'error',
    });
    await client.connectPromise;
  });
  afterAll(async () => {
    await client?.closeConnection();
  });

  const openStore = async (opts: Parameters<typeof MilvusVectorStore.create>[0]) => {
    if (client === undefined) throw new Error('no client');
    const store = await MilvusVectorStore.create({ ...opts, client });
    created.add(store.collectionName);
    return store;
  };
  // Leave nothing behind on the shared server.
  const dropCreated = async () => {
    for (const name of created) {
      for (const c of [name, `${name}_docs`]) {
        if ((await client?.hasCollection({ collection_name: c }))?.value) {
          await client?.dropCollection({ collection_name: c });
        }
      }
    }
  };

  runVectorStoreContract('Milvus (real server)', openStore, dropCreated, {
    unsupportedDistances: ['l1'],
  });
  runStagedWriteContract('Milvus (real server)', openStore, dropCreated);
});
