/**
 * The OpenAI-compatible models, behind one module so the runtime loads the OpenAI SDK only in bundles that call
 * a model (`loadRemoteModels` in `bundle.ts`).
 */
export { createEmbedder } from '../../shared/src/embeddings/factory.js';
export { OpenAIFoundationModel } from '../../shared/src/generation/openai-model.js';
