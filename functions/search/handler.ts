/**
 * POST /search — hits with their document key, text and score.
 */
import { parseWith, SearchRequest } from '../../shared/src/api/schemas.js';
import { httpHandler, jsonResponse } from '../_shared/http.js';
import { runSearch } from '../_shared/query.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/**
 * Builds the search handler; `deps` replaces parts of the runtime (tests, `ai4rag serve`).
 * @example export const handler = createSearchHandler();
 */
export function createSearchHandler(deps?: Partial<Runtime>) {
  const runtime = lazyRuntime(deps);
  return httpHandler('search', async (event) => {
    const { query, ...retrieval } = parseWith(SearchRequest, event.body, 'request body');
    return jsonResponse(200, await runSearch(runtime(), query, retrieval));
  });
}

/** Lambda entry point. */
export const handler = createSearchHandler();
