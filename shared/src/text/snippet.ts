import { analyze } from './analyzer.js';

/**
 * Picks the part of a passage that best shows why it matched: the sentence (or table row / line) holding the
 * most distinct query terms, extended with the following ones up to `maxChars`. Whitespace is collapsed.
 * Ties go to the earliest sentence; with no matching term, the passage start is returned.
 * @example bestSnippet('Intro. Staff get 27 days of leave. Other.', 'how many leave days', 40)
 * // '...Staff get 27 days of leave. Other.'
 */
export function bestSnippet(text: string, query: string, maxChars = 240): string {
  const units = text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((u) => u.replace(/\s+/g, ' ').trim())
    .filter((u) => u.length > 0);
  const terms = new Set(analyze(query));
  let best = 0;
  let bestScore = 0;
  units.forEach((unit, i) => {
    const found = new Set(analyze(unit).filter((t) => terms.has(t))).size;
    if (found > bestScore) {
      bestScore = found;
      best = i;
    }
  });
  let out = '';
  for (let i = best; i < units.length; i += 1) {
    const next = out === '' ? (units[i] as string) : `${out} ${units[i]}`;
    if (next.length > maxChars) {
      if (out === '') out = `${next.slice(0, maxChars - 3)}...`;
      break;
    }
    out = next;
  }
  return best > 0 ? `...${out}` : out;
}
