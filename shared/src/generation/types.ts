/** One message of a chat conversation, in the OpenAI chat-completions shape. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Per-call options of {@link FoundationModel.chat} and {@link FoundationModel.chatStream}. */
export interface ChatOptions {
  /** Upper bound of generated tokens; overrides the model's default for this call. */
  maxCompletionTokens?: number;
  /** Sampling temperature; overrides the model's default for this call. */
  temperature?: number;
  /** Cancels the call (and any pending retry). */
  signal?: AbortSignal;
  /**
   * {@link FoundationModel.chatStream} only: receives the answer's tokens once the stream has ended, when the
   * model reports them (a complete answer of {@link FoundationModel.chat} carries them in `usage`).
   */
  onUsage?: (usage: ChatUsage) => void;
}

/** Token counts reported by the provider (or approximated at 4 chars per token by local models). */
export interface ChatUsage {
  promptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
}

/** A complete answer of {@link FoundationModel.chat}. */
export interface ChatResult {
  content: string;
  usage?: ChatUsage;
}

/**
 * The port every answer generator implements (a remote OpenAI-compatible model, or the local extractive one), so
 * the RAG pipeline and the optimizer never depend on a provider. Models are identified by `modelId` (ai4rag hashes
 * and compares foundation models by their id).
 */
export interface FoundationModel {
  readonly modelId: string;
  /** Answers the conversation in one piece. */
  chat(messages: ChatMessage[], options?: ChatOptions): Promise<ChatResult>;
  /** Answers the conversation as text deltas; their concatenation equals the answer. */
  chatStream(messages: ChatMessage[], options?: ChatOptions): AsyncIterable<string>;
}
