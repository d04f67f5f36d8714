/** The embedding port. Implementations are created ready to use (dimension known). */
export interface Embedder {
  /** Model id, verbatim (recorded with the collection; a different id means a different index). */
  readonly modelId: string;
  /** Vector length. */
  readonly dimension: number;
  /** Maximum input length in tokens (approximate, 4 chars per token). */
  readonly contextLength: number;
  embedDocuments(texts: string[]): Promise<number[][]>;
  embedQuery(text: string): Promise<number[]>;
}
