/** Placeholder entry, replaced by the real handler in this change. */
export async function handler(): Promise<never> {
  throw new Error('functions/embed-batch is not wired yet');
}
