/** Placeholder entry, replaced by the real handler in this change. */
export async function handler(): Promise<never> {
  throw new Error('functions/search is not wired yet');
}
