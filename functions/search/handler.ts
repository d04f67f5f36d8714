/**
 * POST /search — hits with their document key, text and score.
 */
import { parseWith, SearchRequest } from '../../shared/src/api/schemas.js';
import { httpHandler, jsonResponse, requestBudgetMs, withDeadline } from '../_shared/http.js';
import { runSearch } from '../_shared/query.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/**
 * Builds the search handler; `deps` replaces parts of the runtime (tests, `ai4rag serve`).
 * @example export const handler = createSearchHandler();
 */
export function createSearchHandler(deps?: Partial<Runtime>) {
  const runtime = lazyRuntime(deps);
  return httpHandler('search', async (event, context) => {
    const { query, ...retrieval } = parseWith(SearchRequest, event.body, 'request body');
    // Answer a clear 504 before API Gateway cuts the connection (retrieval and reranking share the budget).
    const result = await withDeadline(requestBudgetMs(event, context), 'search', () =>
      runSearch(runtime(), query, retrieval),
    );
    return jsonResponse(200, result);
  });
}

/** Lambda entry point. */
export const handler = createSearchHandler();
