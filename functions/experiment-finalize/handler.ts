/** Placeholder entry, replaced by the real handler in this change. */
export async function handler(): Promise<never> {
  throw new Error('functions/experiment-finalize is not wired yet');
}
