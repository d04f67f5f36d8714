/**
 * Chunk: one SQS message per document version → chunk batches in the artifacts store and one embed message per
 * batch.
 */
import { parseWith } from '../../shared/src/api/schemas.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  ChunkRequestSchema,
  chunkRequest,
  onDocumentFailed,
} from '../../shared/src/ingest/knowledge-base.js';
import { sqsHandler } from '../_shared/http.js';
import { countFailedDocument, countFailedRecords } from '../_shared/powertools.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/**
 * Builds the chunk handler; `deps` replaces parts of the runtime (tests).
 * @example export const handler = createChunkHandler();
 */
export function createChunkHandler(deps?: Partial<Runtime>) {
  const runtime = lazyRuntime(deps);
  onDocumentFailed(countFailedDocument);
  return sqsHandler(
    'chunk',
    countFailedRecords(async (record) => {
      let body: unknown;
      try {
        body = JSON.parse(record.body);
      } catch (error) {
        throw new ValidationError(`message ${record.messageId} is not JSON`, { cause: error });
      }
      await chunkRequest(runtime(), parseWith(ChunkRequestSchema, body, 'chunk request'));
    }),
  );
}

/** Lambda entry point. */
export const handler = createChunkHandler();
