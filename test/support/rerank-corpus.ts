/**
 * A four-document corpus (one chunk each, with the local embedder and default chunking) whose fused order and
 * fake-TEI order differ, so reranking tests can assert exact orders.
 *
 * For {@link RERANK_QUERY}, hybrid retrieval ranks faq, aurora, notes, cargo. The fake TEI server
 * (`fakeTeiScore`: distinct query words in the text / (1 + words in the text)) scores aurora 4/16, faq 6/33,
 * cargo 2/13, notes 2/29, so reranking the four candidates to k = 3 gives aurora, faq, cargo: the top two
 * swap and cargo, fused last, replaces notes.
 */
export const RERANK_DOCS: Readonly<Record<string, string>> = Object.freeze({
  'ferry/aurora.txt':
    'The ferry Aurora carries 140 passengers at 18 knots between the harbour and the island.',
  'ferry/faq.txt':
    'How many passengers does the ferry take? The ferry carries many passengers, says the harbour office, and more passengers in summer when the ferry runs twice an hour from the north quay.',
  'harbour/notes.txt':
    'Harbour notes: the old ferry pier was rebuilt in 1998, the ticket office moved twice, and the ferry timetable changes every spring and autumn for the tourist season.',
  'cargo.txt': 'Cargo barges carry grain and timber on the river locks at night.',
});

/** The query of the corpus. */
export const RERANK_QUERY = 'How many passengers does the ferry Aurora carry?';

/** Hybrid (fused) order of all four documents for {@link RERANK_QUERY}. */
export const FUSED_ORDER = ['ferry/faq.txt', 'ferry/aurora.txt', 'harbour/notes.txt', 'cargo.txt'];

/** The fake TEI server's order of the four documents, with their scores. */
export const RERANKED = [
  ['ferry/aurora.txt', 4 / 16],
  ['ferry/faq.txt', 6 / 33],
  ['cargo.txt', 2 / 13],
  ['harbour/notes.txt', 2 / 29],
] as const;
