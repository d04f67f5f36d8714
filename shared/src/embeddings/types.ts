/** The embedding port. Implementations are created ready to use (dimension known). */
export interface Embedder {
  /**
   * Identity of the vectors (recorded with the collection; a different id means a different index): the model id
   * verbatim, followed by the instruction prefixes when an embedder applies any (see `prefixedModelId`).
   */
  readonly modelId: string;
  /** Vector length. */
  readonly dimension: number;
  /** Maximum input length in tokens (approximate, 4 chars per token). */
  readonly contextLength: number;
  embedDocuments(texts: string[]): Promise<number[][]>;
  embedQuery(text: string): Promise<number[]>;
}
