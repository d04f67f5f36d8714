/** The Experiments pages: list, start one, and one experiment's progress, leaderboard, charts and comparison. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type ServedPattern } from './api';
import { ParallelCoordinates, ParameterEffects, ScorePerTrial } from './charts';
import type {
  EvaluationRecord,
  ExperimentDetail,
  ExperimentSummary,
  LeaderboardEntry,
  PatternSettings,
} from './types';

function statusOf(s: ExperimentSummary): string {
  if (s.run?.status === 'running') return 'running';
  if (s.run?.status === 'failed') return 'failed';
  return s.status;
}

function trialsText(s: ExperimentSummary): string {
  const t = s.trials;
  const n = t.done + t.failed + t.running;
  return `${n}/${s.max_evals ?? '?'}${t.failed > 0 ? ` (${t.failed} failed)` : ''}`;
}

export function describeSettings(s: PatternSettings): string {
  const r = s.retrieval;
  const fusion =
    r.search_mode === 'hybrid'
      ? ` ${r.ranker_strategy ?? ''}${r.ranker_k !== undefined ? ` k=${r.ranker_k}` : ''}${r.ranker_alpha !== undefined ? ` α=${r.ranker_alpha}` : ''}`
      : '';
  const window = r.method === 'window' ? ` · window ${r.window_size ?? 1}` : '';
  const rerank = r.reranker ? ` · rerank ${r.reranker.candidates}` : '';
  const qt = r.query_transform ? ` · ${r.query_transform}` : '';
  return `${s.chunking.method} ${s.chunking.chunk_size}/${s.chunking.chunk_overlap} · ${r.search_mode}${fusion} · ${r.number_of_chunks} chunks${window}${rerank}${qt}`;
}

function StartForm(props: { onStarted: (id: string) => void }): JSX.Element {
  const [docs, setDocs] = useState('');
  const [benchmark, setBenchmark] = useState('');
  const [space, setSpace] = useState('');
  const [maxEvals, setMaxEvals] = useState('4');
  const [id, setId] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    setError(undefined);
    let bench: unknown;
    let searchSpace: unknown;
    try {
      bench = JSON.parse(benchmark);
    } catch (err) {
      setError(`Benchmark is not valid JSON: ${(err as Error).message}`);
      return;
    }
    try {
      searchSpace = space.trim() === '' ? undefined : JSON.parse(space);
    } catch (err) {
      setError(`Search space is not valid JSON: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      const res = await api<{ experiment_id: string }>('POST', '/experiments', {
        ...(docs.trim() !== '' && { documents_dir: docs.trim() }),
        benchmark: bench,
        ...(searchSpace !== undefined && { search_space: searchSpace }),
        ...(maxEvals.trim() !== '' && { max_evals: Number(maxEvals) }),
        ...(id.trim() !== '' && { experiment_id: id.trim() }),
      });
      props.onStarted(res.experiment_id);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="start" onSubmit={submit} aria-labelledby="start-title">
      <h2 id="start-title">Start an experiment</h2>
      <label for="exp-docs">
        Documents folder on the server (empty: the knowledge base's documents)
      </label>
      <input
        id="exp-docs"
        type="text"
        value={docs}
        placeholder="/path/to/examples/docs"
        onInput={(e) => setDocs(e.currentTarget.value)}
      />
      <label for="exp-bench-file">
        Benchmark file (JSON array of question, correct_answers, correct_answer_document_keys)
      </label>
      <input
        id="exp-bench-file"
        type="file"
        accept=".json,application/json"
        onChange={async (e) => {
          const file = e.currentTarget.files?.[0];
          if (file) setBenchmark(await file.text());
        }}
      />
      <label for="exp-bench">Benchmark JSON</label>
      <textarea
        id="exp-bench"
        rows={5}
        value={benchmark}
        required
        onInput={(e) => setBenchmark(e.currentTarget.value)}
      />
      <label for="exp-space">
        Search space (JSON, optional), e.g. {'{"chunk_size": [512, 1024]}'}
      </label>
      <textarea
        id="exp-space"
        rows={3}
        value={space}
        onInput={(e) => setSpace(e.currentTarget.value)}
      />
      <div class="row">
        <div>
          <label for="exp-max">Trials (max evals)</label>
          <input
            id="exp-max"
            type="number"
            min={1}
            max={1000}
            value={maxEvals}
            onInput={(e) => setMaxEvals(e.currentTarget.value)}
          />
        </div>
        <div>
          <label for="exp-id">Experiment id (optional)</label>
          <input id="exp-id" type="text" value={id} onInput={(e) => setId(e.currentTarget.value)} />
        </div>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? 'Starting…' : 'Start experiment'}
      </button>
    </form>
  );
}

export function ExperimentsPage(): JSX.Element {
  const [list, setList] = useState<ExperimentSummary[] | undefined>();
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    let stop = false;
    const load = async () => {
      try {
        const r = await api<{ experiments: ExperimentSummary[] }>('GET', '/experiments');
        if (!stop) setList(r.experiments);
      } catch (e) {
        if (!stop) setError((e as Error).message);
      }
    };
    void load();
    const timer = setInterval(() => void load(), 3000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);

  return (
    <div class="page experiments">
      <section aria-labelledby="exp-list">
        <h2 id="exp-list">Experiments</h2>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {list?.length === 0 && (
          <p class="muted">No experiments yet: start one below, or run npm start.</p>
        )}
        {list && list.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Experiment</th>
                  <th scope="col">Created</th>
                  <th scope="col">Status</th>
                  <th scope="col">Trials</th>
                  <th scope="col">Best</th>
                </tr>
              </thead>
              <tbody>
                {list.map((s) => (
                  <tr key={s.experiment_id}>
                    <td>
                      <a href={`#/experiments/${encodeURIComponent(s.experiment_id)}`}>
                        {s.experiment_id}
                      </a>
                    </td>
                    <td>{s.created_at?.replace('T', ' ').slice(0, 16) ?? '–'}</td>
                    <td>
                      <span class={`badge ${statusOf(s)}`}>{statusOf(s)}</span>
                    </td>
                    <td>{trialsText(s)}</td>
                    <td>
                      {s.best
                        ? `${s.best.pattern_name} ${s.best.score.toFixed(4)} ${s.optimization_metric ?? ''}`
                        : '–'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <StartForm
        onStarted={(id) => {
          window.location.hash = `#/experiments/${encodeURIComponent(id)}`;
        }}
      />
    </div>
  );
}

function metricOf(r: EvaluationRecord, metric: string): number | null {
  return r.metrics.find((m) => m.name === metric)?.score ?? null;
}

function Compare(props: {
  id: string;
  leaderboard: LeaderboardEntry[];
  metric: string;
}): JSX.Element {
  const names = props.leaderboard.map((e) => e.pattern_name);
  const [a, setA] = useState(names[0] ?? '');
  const [b, setB] = useState(names[1] ?? names[0] ?? '');
  const [records, setRecords] = useState<[EvaluationRecord[], EvaluationRecord[]] | undefined>();
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    if (a === '' || b === '') return;
    const path = (n: string) =>
      `/experiments/${encodeURIComponent(props.id)}/patterns/${encodeURIComponent(n)}/evaluation`;
    Promise.all([
      api<{ records: EvaluationRecord[] }>('GET', path(a)),
      api<{ records: EvaluationRecord[] }>('GET', path(b)),
    ])
      .then(([ra, rb]) => {
        setRecords([ra.records, rb.records]);
        setError(undefined);
      })
      .catch((e: unknown) => setError((e as Error).message));
  }, [a, b, props.id]);

  const byId = new Map((records?.[1] ?? []).map((r) => [r.question_id, r]));
  return (
    <section aria-labelledby="cmp-title">
      <h3 id="cmp-title">Two patterns side by side</h3>
      <div class="row">
        <div>
          <label for="cmp-a">Pattern A</label>
          <select id="cmp-a" value={a} onChange={(e) => setA(e.currentTarget.value)}>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="cmp-b">Pattern B</label>
          <select id="cmp-b" value={b} onChange={(e) => setB(e.currentTarget.value)}>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </div>
      </div>
      {error && <p class="error">{error}</p>}
      {records && (
        <div class="table-wrap tall">
          <table class="compare">
            <thead>
              <tr>
                <th scope="col">Question</th>
                <th scope="col">{a}</th>
                <th scope="col">{b}</th>
              </tr>
            </thead>
            <tbody>
              {records[0].map((ra) => {
                const rb = byId.get(ra.question_id);
                const sa = metricOf(ra, props.metric);
                const sb = rb ? metricOf(rb, props.metric) : null;
                const better = sa !== null && sb !== null && sa !== sb ? (sa > sb ? 'a' : 'b') : '';
                return (
                  <tr key={ra.question_id}>
                    <td>
                      {ra.question}
                      <div class="muted small">
                        expected: {ra.correct_answers.join(' | ') || '(unanswerable)'}
                      </div>
                    </td>
                    <td class={better === 'a' ? 'better' : ''}>
                      <div class="num">{sa === null ? '–' : sa.toFixed(3)}</div>
                      {ra.error ? <span class="error">{ra.error}</span> : ra.answer}
                    </td>
                    <td class={better === 'b' ? 'better' : ''}>
                      <div class="num">{sb === null ? '–' : sb.toFixed(3)}</div>
                      {rb?.error ? <span class="error">{rb.error}</span> : (rb?.answer ?? '–')}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function ExperimentPage(props: {
  id: string;
  onServe: (p: ServedPattern) => void;
}): JSX.Element {
  const [detail, setDetail] = useState<ExperimentDetail | undefined>();
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const d = await api<ExperimentDetail>(
          'GET',
          `/experiments/${encodeURIComponent(props.id)}`,
        );
        if (stop) return;
        setDetail(d);
        setError(undefined);
        // Our own run every second; an unfinished one of another process (a CLI run) more slowly.
        if (d.run?.status === 'running') timer = setTimeout(() => void load(), 1000);
        else if (d.status !== 'finished' && d.run === undefined) {
          timer = setTimeout(() => void load(), 3000);
        }
      } catch (e) {
        if (!stop) setError((e as Error).message);
      }
    };
    void load();
    return () => {
      stop = true;
      if (timer) clearTimeout(timer);
    };
  }, [props.id]);

  if (error) {
    return (
      <div class="page">
        <p class="error" role="alert">
          {error}
        </p>
        <a href="#/experiments">All experiments</a>
      </div>
    );
  }
  if (!detail) return <p class="page muted">Loading {props.id}…</p>;
  const metric = detail.optimization_metric ?? 'score';
  const recorded = detail.trials.done + detail.trials.failed;
  const total = detail.max_evals ?? Math.max(recorded, 1);
  const running = detail.run?.status === 'running';
  return (
    <div class="page experiment">
      <p>
        <a href="#/experiments">All experiments</a>
      </p>
      <h2>
        {detail.experiment_id}{' '}
        <span class={`badge ${statusOf(detail)}`} data-testid="experiment-status">
          {statusOf(detail)}
        </span>
      </h2>
      <p class="muted">
        {detail.documents ?? '?'} documents · {detail.questions ?? '?'} questions · optimizer{' '}
        {detail.optimizer ?? '?'} · metric {metric}
        {detail.trials.cached > 0 && ` · ${detail.trials.cached} cached trial(s)`}
      </p>
      {(running || detail.status !== 'finished') && (
        <section aria-label="progress">
          <label for="exp-progress">
            Trials {recorded}/{total}
            {detail.run?.state && ` · ${detail.run.state}`}
          </label>
          <progress id="exp-progress" max={total} value={recorded} />
        </section>
      )}
      {detail.run?.status === 'failed' && (
        <p class="error" role="alert">
          The experiment failed: {detail.run.error}
        </p>
      )}
      {detail.leaderboard && detail.leaderboard.length > 0 && (
        <section aria-labelledby="lb-title">
          <h3 id="lb-title">Leaderboard</h3>
          <div class="table-wrap">
            <table class="leaderboard">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Pattern</th>
                  <th scope="col">{metric}</th>
                  <th scope="col">Settings</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {detail.leaderboard.map((e) => (
                  <tr key={e.pattern_name}>
                    <td>{e.rank}</td>
                    <td>
                      {e.pattern_name}
                      {e.cached && <span class="muted small"> cached</span>}
                    </td>
                    <td class="num">{e.score.toFixed(4)}</td>
                    <td>{describeSettings(e.pattern.settings)}</td>
                    <td>
                      <button
                        type="button"
                        class="secondary"
                        aria-label={`Serve ${e.pattern_name}`}
                        onClick={() =>
                          props.onServe({
                            experiment_id: detail.experiment_id,
                            pattern_name: e.pattern_name,
                            collection: e.pattern.settings.vector_store_binding.collection_name,
                          })
                        }
                      >
                        Serve this pattern
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      {detail.trials_list.length > 0 && (
        <div class="charts">
          <section aria-labelledby="spt-title">
            <h3 id="spt-title">Score per trial</h3>
            <ScorePerTrial trials={detail.trials_list} metric={metric} />
          </section>
          <section aria-labelledby="pe-title">
            <h3 id="pe-title">Parameter effects</h3>
            <ParameterEffects trials={detail.trials_list} />
          </section>
          <section aria-labelledby="pc-title" class="wide">
            <h3 id="pc-title">Parameters vs score</h3>
            <ParallelCoordinates trials={detail.trials_list} metric={metric} />
          </section>
        </div>
      )}
      {detail.leaderboard && detail.leaderboard.length > 0 && (
        <Compare id={detail.experiment_id} leaderboard={detail.leaderboard} metric={metric} />
      )}
      <section aria-labelledby="ev-title">
        <h3 id="ev-title">Events</h3>
        <ol class="events">
          {detail.events.slice(-30).map((e, i) => (
            <li key={`${e.time}-${i}`} class={e.level}>
              <span class="muted mono">{e.time.slice(11, 19)}</span> {e.message}
            </li>
          ))}
        </ol>
      </section>
    </div>
  );
}
