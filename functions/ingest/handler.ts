/**
 * Ingest: SQS messages whose bodies are S3 event notifications of the documents bucket. ObjectCreated parses the
 * object and queues its changed documents for chunking; ObjectRemoved deletes the document's chunks and record.
 * Events of one key are ordered by their S3 `sequencer`: an older event never undoes a newer one.
 */
import * as z from 'zod';
import { parseWith } from '../../shared/src/api/schemas.js';
import { isMetadataSidecar } from '../../shared/src/documents/user-metadata.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  ingestObject,
  onDocumentFailed,
  removeDocument,
} from '../../shared/src/ingest/knowledge-base.js';
import { decodeS3Key, sqsHandler } from '../_shared/http.js';
import { countFailedDocument, countFailedRecords } from '../_shared/powertools.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

const S3Notification = z.object({
  Records: z
    .array(
      z.object({
        eventName: z.string(),
        s3: z.object({
          object: z.object({ key: z.string().min(1), sequencer: z.string().optional() }),
        }),
      }),
    )
    .min(1),
});

/** The notification S3 sends once when a notification configuration is created; it carries no object. */
function isTestEvent(body: unknown): boolean {
  return (body as { Event?: unknown } | null)?.Event === 's3:TestEvent';
}

/**
 * Builds the ingest handler; `deps` replaces parts of the runtime (tests), the rest comes from the environment
 * on first invocation.
 * @example export const handler = createIngestHandler();
 */
export function createIngestHandler(deps?: Partial<Runtime>) {
  const runtime = lazyRuntime(deps);
  onDocumentFailed(countFailedDocument);
  return sqsHandler(
    'ingest',
    countFailedRecords(async (record) => {
      let body: unknown;
      try {
        body = JSON.parse(record.body);
      } catch (error) {
        throw new ValidationError(`message ${record.messageId} is not JSON`, { cause: error });
      }
      if (isTestEvent(body)) return;
      const notification = parseWith(S3Notification, body, 'S3 event notification');
      const rt = runtime();
      for (const r of notification.Records) {
        const key = decodeS3Key(r.s3.object.key);
        // S3 does not deliver a key's events in order; its sequencer orders them (the store compares it).
        const event =
          r.s3.object.sequencer === undefined ? {} : { sequencer: r.s3.object.sequencer };
        if (r.eventName.startsWith('ObjectCreated:')) await ingestObject(rt, key, event);
        // A removed sidecar is not a document: its object is re-read without that metadata.
        else if (r.eventName.startsWith('ObjectRemoved:') && isMetadataSidecar(key)) {
          await ingestObject(rt, key);
        } else if (r.eventName.startsWith('ObjectRemoved:')) await removeDocument(rt, key, event);
      }
    }),
  );
}

/** Lambda entry point. */
export const handler = createIngestHandler();
