/** Placeholder entry, replaced by the real handler in this change. */
export async function handler(): Promise<never> {
  throw new Error('functions/generate is not wired yet');
}
