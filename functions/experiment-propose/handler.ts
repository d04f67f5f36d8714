/** Placeholder entry, replaced by the real handler in this change. */
export async function handler(): Promise<never> {
  throw new Error('functions/experiment-propose is not wired yet');
}
