/** The Ask page: streamed answers with inline citations bound to their sources, multi-turn chat, settings. */
import type { JSX } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { api, type ServedPattern, stream } from './api';
import type {
  AnswerDone,
  Citation,
  GenerateResponse,
  ReferenceDocument,
  SearchHit,
  ServerConfig,
} from './types';

interface Turn {
  id: number;
  question: string;
  answer: string;
  sources: ReferenceDocument[];
  done?: AnswerDone;
  warnings?: string[];
  error?: string;
  /** Rank of each source before reranking (by its first chunk id), when the answer was reranked. */
  preRerank?: Map<string, number>;
  via: 'stream' | 'chat';
}

interface Settings {
  k: string;
  searchMode: '' | 'vector' | 'hybrid';
  rankerStrategy: '' | 'rrf' | 'weighted' | 'normalized';
  rerank: boolean;
  filter: string;
}

const INITIAL: Settings = { k: '', searchMode: '', rankerStrategy: '', rerank: false, filter: '' };

/** The request fields the settings set (empty ones are left to the pattern or the defaults). */
export function retrievalFields(s: Settings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (s.k.trim() !== '') out.k = Number(s.k);
  if (s.searchMode !== '') out.search_mode = s.searchMode;
  if (s.rankerStrategy !== '' && s.searchMode !== 'vector') out.ranker_strategy = s.rankerStrategy;
  if (s.rerank) out.rerank = {};
  if (s.filter.trim() !== '') out.filter = JSON.parse(s.filter);
  return out;
}

function ms(n: number): string {
  return `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`;
}

/** The answer text with each marker [n] as a button to its source (markers to no source stay text). */
function AnswerText(props: { turn: Turn; onCite: (n: number) => void }): JSX.Element {
  const { turn } = props;
  const parts: (string | JSX.Element)[] = [];
  const re = /\[(\d+)\]/g;
  let last = 0;
  for (let m = re.exec(turn.answer); m !== null; m = re.exec(turn.answer)) {
    const n = Number(m[1]);
    const source = turn.sources[n - 1];
    if (source === undefined) continue;
    parts.push(turn.answer.slice(last, m.index));
    parts.push(
      <button
        type="button"
        class="cite"
        key={`${m.index}`}
        aria-label={`source ${n}: ${source.document_key}`}
        onClick={() => props.onCite(n)}
      >
        [{n}]
      </button>,
    );
    last = m.index + m[0].length;
  }
  parts.push(turn.answer.slice(last));
  return <p class="answer-text">{parts}</p>;
}

/** A source's text with the spans its citations quote highlighted. */
function SourceText(props: { text: string; spans: Citation[] }): JSX.Element {
  const spans = [...props.spans]
    .filter((c) => c.end > c.start && c.end <= props.text.length)
    .sort((a, b) => a.start - b.start);
  const parts: (string | JSX.Element)[] = [];
  let at = 0;
  for (const s of spans) {
    if (s.start < at) continue;
    parts.push(props.text.slice(at, s.start));
    parts.push(<mark key={s.start}>{props.text.slice(s.start, s.end)}</mark>);
    at = s.end;
  }
  parts.push(props.text.slice(at));
  return <blockquote class="source-text">{parts}</blockquote>;
}

function Sources(props: { turn: Turn; active: number | undefined }): JSX.Element | null {
  const { turn } = props;
  if (turn.sources.length === 0) return null;
  const cited = new Set((turn.done?.citations ?? []).map((c) => c.marker));
  const reranked = (turn.done?.timing.rerank_ms ?? 0) > 0;
  return (
    <div class="sources">
      <h3>Sources</h3>
      {turn.sources.map((s, i) => {
        const n = i + 1;
        const spans = (turn.done?.citations ?? []).filter((c) => c.marker === n);
        const before = turn.preRerank?.get(s.chunk_ids[0] ?? '');
        return (
          <section
            key={n}
            id={`src-${turn.id}-${n}`}
            tabIndex={-1}
            class={`source${props.active === n ? ' active' : ''}`}
            aria-label={`source ${n}`}
          >
            <header>
              <span class="marker">[{n}]</span> <strong>{s.document_key}</strong>
              <span class="muted">
                {' '}
                · chunk {s.sequence_number}
                {cited.has(n) ? ' · cited' : ''}
              </span>
            </header>
            <SourceText text={s.text} spans={spans} />
            <details>
              <summary>Why this source</summary>
              <dl class="why">
                <dt>Rank</dt>
                <dd>
                  {n} of {turn.sources.length}
                  {reranked ? ' after reranking' : ''}
                </dd>
                {reranked && (
                  <>
                    <dt>Rank before reranking</dt>
                    <dd>{before === undefined ? 'not in the first candidates' : before}</dd>
                  </>
                )}
                <dt>{reranked ? 'Reranker score' : 'Retrieval score'}</dt>
                <dd>{s.score === null ? 'none (the store gives none)' : s.score.toFixed(4)}</dd>
                <dt>Cited</dt>
                <dd>
                  {cited.has(n)
                    ? `yes (${spans.length} span${spans.length === 1 ? '' : 's'})`
                    : 'no'}
                </dd>
                <dt>Chunks</dt>
                <dd class="mono">{s.chunk_ids.join(', ')}</dd>
              </dl>
            </details>
          </section>
        );
      })}
    </div>
  );
}

function Metrics(props: { turn: Turn }): JSX.Element | null {
  const d = props.turn.done;
  if (d === undefined) return null;
  const t = d.timing;
  return (
    <p class="metrics">
      <span>retrieve {ms(t.retrieve_ms)}</span>
      {t.transform_ms !== undefined && <span>transform {ms(t.transform_ms)}</span>}
      <span>rerank {ms(t.rerank_ms)}</span>
      <span>generate {ms(t.generate_ms)}</span>
      <span>total {ms(t.total_ms)}</span>
      {d.usage && (
        <span>
          tokens {d.usage.prompt_tokens} prompt + {d.usage.completion_tokens} completion
        </span>
      )}
      {d.cost_usd !== undefined && <span>${d.cost_usd}</span>}
      {d.model && <span>model {d.model}</span>}
      <span>via /{props.turn.via}</span>
    </p>
  );
}

export function AskPage(props: {
  config: ServerConfig | undefined;
  pattern: ServedPattern | undefined;
  onUsePattern: (p: ServedPattern | null) => void;
}): JSX.Element {
  const [settings, setSettings] = useState<Settings>(INITIAL);
  const [question, setQuestion] = useState('');
  const [turns, setTurns] = useState<Turn[]>([]);
  const [busy, setBusy] = useState(false);
  const [formError, setFormError] = useState<string | undefined>();
  const [active, setActive] = useState<{ turn: number; n: number } | undefined>();
  const nextId = useRef(1);
  const { config, pattern } = props;

  const update = (id: number, change: (t: Turn) => Turn) =>
    setTurns((all) => all.map((t) => (t.id === id ? change(t) : t)));

  async function rankBeforeRerank(id: number, q: string, fields: Record<string, unknown>) {
    // Reranking reorders the fused candidates: the same search without it gives their earlier order.
    const k = Math.min(100, Math.max(20, Number(fields.k ?? 5) * 4));
    const res = await api<{ results: SearchHit[] }>(
      'POST',
      '/search',
      { ...fields, query: q, k, rerank: false },
      { pattern: true },
    );
    const ranks = new Map<string, number>();
    res.results.forEach((h, i) => {
      if (!ranks.has(h.id)) ranks.set(h.id, i + 1);
    });
    update(id, (t) => ({ ...t, preRerank: ranks }));
  }

  async function ask(event: Event) {
    event.preventDefault();
    const q = question.trim();
    if (q === '' || busy || config === undefined) return;
    let fields: Record<string, unknown>;
    try {
      fields = retrievalFields(settings);
    } catch (error) {
      setFormError(`Filter is not valid JSON: ${(error as Error).message}`);
      return;
    }
    setFormError(undefined);
    const id = nextId.current++;
    const history = turns.filter((t) => t.error === undefined);
    const via = history.length === 0 ? 'stream' : 'chat';
    setTurns((all) => [...all, { id, question: q, answer: '', sources: [], via }]);
    setQuestion('');
    setBusy(true);
    try {
      if (via === 'stream') {
        await stream({ question: q, citations: true, ...fields }, (e) => {
          if (e.event === 'sources') {
            const d = e.data as { reference_documents: ReferenceDocument[]; warnings?: string[] };
            update(id, (t) => ({
              ...t,
              sources: d.reference_documents,
              ...(d.warnings && { warnings: d.warnings }),
            }));
          } else if (e.event === 'token') {
            const text = (e.data as { text: string }).text;
            update(id, (t) => ({ ...t, answer: t.answer + text }));
          } else if (e.event === 'done') {
            update(id, (t) => ({ ...t, done: e.data as AnswerDone }));
            if ((e.data as AnswerDone).timing.rerank_ms > 0) void rankBeforeRerank(id, q, fields);
          } else if (e.event === 'error') {
            update(id, (t) => ({ ...t, error: (e.data as { message: string }).message }));
          }
        });
      } else {
        const messages = history.flatMap((t) => [
          { role: 'user' as const, content: t.question },
          { role: 'assistant' as const, content: t.answer },
        ]);
        messages.push({ role: 'user', content: q });
        const res = await api<GenerateResponse>(
          'POST',
          '/chat',
          { messages, citations: true, ...fields },
          { pattern: true },
        );
        update(id, (t) => ({
          ...t,
          answer: res.answer,
          sources: res.reference_documents,
          done: res,
          ...(res.warnings && { warnings: res.warnings }),
        }));
        if (res.timing.rerank_ms > 0) void rankBeforeRerank(id, q, fields);
      }
    } catch (error) {
      update(id, (t) => ({ ...t, error: (error as Error).message }));
    } finally {
      setBusy(false);
    }
  }

  function cite(turn: number, n: number) {
    setActive({ turn, n });
    const el = document.getElementById(`src-${turn}-${n}`);
    if (el !== null) {
      const details = el.querySelector('details');
      if (details) details.open = true;
      el.focus();
      el.scrollIntoView({ block: 'nearest' });
    }
  }

  const set = <K extends keyof Settings>(key: K, value: Settings[K]) =>
    setSettings((s) => ({ ...s, [key]: value }));

  return (
    <div class="page ask">
      <section class="serving" aria-live="polite">
        {pattern ? (
          <p>
            Answering with <strong>{pattern.pattern_name}</strong> of experiment{' '}
            <a href={`#/experiments/${encodeURIComponent(pattern.experiment_id)}`}>
              {pattern.experiment_id}
            </a>{' '}
            (index <code>{pattern.collection}</code>).{' '}
            {pattern.auto && config && (
              <span class="notice">
                The knowledge base <code>{config.collection}</code> is empty, so the best pattern of
                the latest experiment was chosen.{' '}
              </span>
            )}
            <button type="button" class="link" onClick={() => props.onUsePattern(null)}>
              Use the knowledge base instead
            </button>
          </p>
        ) : (
          <p>
            Answering from the knowledge base <code>{config?.collection ?? '…'}</code>
            {config && ` (${config.chunks} chunk${config.chunks === 1 ? '' : 's'})`}.
            {config?.chunks === 0 && config.suggestion && (
              <>
                {' '}
                It is empty:{' '}
                <button
                  type="button"
                  class="link"
                  onClick={() => {
                    const s = config.suggestion;
                    if (s) {
                      props.onUsePattern({
                        experiment_id: s.experiment_id,
                        pattern_name: s.pattern_name,
                        collection: s.collection,
                      });
                    }
                  }}
                >
                  answer with {config.suggestion.pattern_name} of {config.suggestion.experiment_id}
                </button>
                , or upload documents in <a href="#/kb">Knowledge base</a>.
              </>
            )}
          </p>
        )}
      </section>

      <div class="ask-layout">
        <div class="conversation">
          {turns.length === 0 && (
            <p class="muted">
              Ask a question about your documents. The answer streams in with numbered citations;
              press a marker to see its source. Follow-up questions continue the conversation.
            </p>
          )}
          {turns.map((t) => (
            <article class="turn" key={t.id} aria-label={`question ${t.id}`}>
              <p class="question">
                <span class="who">You</span> {t.question}
              </p>
              <div class="answer">
                <span class="who">Answer</span>
                {t.answer === '' && !t.error && !t.done ? (
                  <p class="muted">Retrieving…</p>
                ) : (
                  <AnswerText turn={t} onCite={(n) => cite(t.id, n)} />
                )}
                {t.error && (
                  <p class="error" role="alert">
                    {t.error}
                  </p>
                )}
                {t.warnings?.map((w) => (
                  <p class="warning" key={w}>
                    {w}
                  </p>
                ))}
                <Metrics turn={t} />
              </div>
              <Sources turn={t} active={active?.turn === t.id ? active.n : undefined} />
            </article>
          ))}
          <form class="ask-form" onSubmit={ask}>
            <label for="question">{turns.length === 0 ? 'Question' : 'Follow-up question'}</label>
            <div class="row">
              <input
                id="question"
                type="text"
                value={question}
                onInput={(e) => setQuestion(e.currentTarget.value)}
                placeholder="e.g. How many days of annual leave do I get?"
                autoComplete="off"
                required
              />
              <button type="submit" disabled={busy || config === undefined}>
                {busy ? 'Answering…' : 'Ask'}
              </button>
              {turns.length > 0 && (
                <button
                  type="button"
                  class="secondary"
                  onClick={() => {
                    setTurns([]);
                    setActive(undefined);
                  }}
                >
                  New conversation
                </button>
              )}
            </div>
            {formError && (
              <p class="error" role="alert">
                {formError}
              </p>
            )}
          </form>
        </div>

        <form class="settings" onSubmit={(e) => e.preventDefault()} aria-label="retrieval settings">
          <h2>Retrieval settings</h2>
          <p class="muted small">
            Empty fields keep the {pattern ? "pattern's" : "server's"} settings.
          </p>
          <label for="k">Chunks (k)</label>
          <input
            id="k"
            type="number"
            min={1}
            max={100}
            value={settings.k}
            placeholder="default"
            onInput={(e) => set('k', e.currentTarget.value)}
          />
          <label for="search-mode">Search mode</label>
          <select
            id="search-mode"
            value={settings.searchMode}
            onChange={(e) => set('searchMode', e.currentTarget.value as Settings['searchMode'])}
          >
            <option value="">default</option>
            <option value="hybrid">hybrid (dense + BM25)</option>
            <option value="vector">vector</option>
          </select>
          <label for="ranker">Hybrid fusion</label>
          <select
            id="ranker"
            value={settings.rankerStrategy}
            disabled={settings.searchMode === 'vector'}
            onChange={(e) =>
              set('rankerStrategy', e.currentTarget.value as Settings['rankerStrategy'])
            }
          >
            <option value="">default</option>
            <option value="rrf">rrf</option>
            <option value="weighted">weighted</option>
            <option value="normalized">normalized</option>
          </select>
          <label class="check">
            <input
              type="checkbox"
              checked={settings.rerank}
              disabled={config?.rerank_available !== true}
              onChange={(e) => set('rerank', e.currentTarget.checked)}
            />
            Rerank
            {config?.rerank_available !== true && (
              <span class="muted small"> (no reranker endpoint: serve --rerank-url)</span>
            )}
          </label>
          <label for="filter">Metadata filter (JSON)</label>
          <textarea
            id="filter"
            rows={3}
            value={settings.filter}
            placeholder='{"document_id": {"startsWith": "policies/"}}'
            onInput={(e) => set('filter', e.currentTarget.value)}
          />
        </form>
      </div>
    </div>
  );
}
