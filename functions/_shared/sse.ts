/**
 * Server-sent events for the streaming answer: separated from the transport (Lambda response stream, node:http)
 * so it is testable with a plain string sink.
 */
import type { StreamDoneEvent } from '../../shared/src/api/schemas.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import type { RagStreamEvent } from '../../shared/src/generation/rag-template.js';
import type { PriceTable } from '../../shared/src/pricing.js';
import { citationFields, toReference, toTiming, usageFields } from './query.js';

/** One SSE frame: `event: <name>` and the JSON data on one `data:` line. */
export function formatSseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Writes a RAG stream as SSE frames `sources` (with `warnings` when reranking degraded), `token`*, `done` (timing,
 * `model`, `usage` / `cost_usd` as /generate when the model reported its tokens, and `citations` when asked); a
 * failure mid-stream becomes
 * an `error` frame (the status line is already sent), without internals unless it is a client error.
 * @example await writeSse(rag.generateStream(q), (chunk) => res.write(chunk), { model, prices });
 */
export async function writeSse(
  events: AsyncIterable<RagStreamEvent>,
  write: (chunk: string) => void | Promise<void>,
  extra: { model?: string; prices?: PriceTable } = {},
): Promise<void> {
  try {
    for await (const e of events) {
      if (e.type === 'sources') {
        await write(
          formatSseEvent('sources', {
            reference_documents: e.referenceDocuments.map(toReference),
            ...(e.warnings !== undefined && { warnings: e.warnings }),
          }),
        );
      } else if (e.type === 'token') {
        await write(formatSseEvent('token', { text: e.text }));
      } else {
        const done: StreamDoneEvent = {
          timing: toTiming(e.timing),
          ...(extra.model !== undefined && { model: extra.model }),
          ...usageFields(e.usage, extra.model, extra.prices),
          ...citationFields(e),
          ...(e.warnings !== undefined && { warnings: e.warnings }),
        };
        await write(formatSseEvent('done', done));
      }
    }
  } catch (error) {
    const notFound = error instanceof NotFoundError;
    const exposed = notFound || error instanceof ValidationError;
    await write(
      formatSseEvent('error', {
        code: notFound ? 'not_found' : exposed ? 'validation_error' : 'internal_error',
        message: exposed ? error.message : 'Internal server error',
      }),
    );
  }
}
