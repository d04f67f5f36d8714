/** SVG charts of an experiment: score per trial, parameter effects and a parallel-coordinates view. */
import type { JSX } from 'preact';
import { parameterApplies } from '../../shared/src/experiment/applicability.js';
import type { CatalogTrial } from './types.js';

/** A setting's value as text (models `{ modelId }` by their id). */
export function valueText(v: unknown): string {
  if (v === undefined || v === null) return '–';
  if (typeof v === 'object') {
    const id = (v as { modelId?: unknown }).modelId;
    return typeof id === 'string' ? id : JSON.stringify(v);
  }
  return String(v);
}

/**
 * Whether a setting applies to a trial: the report's rule (`parameterApplies`, from the search-space rules), so the
 * page and report.html count the same trials. Elsewhere the configuration carries sentinels ('', 0).
 */
export function applies(config: Record<string, unknown>, key: string): boolean {
  return parameterApplies(key, config);
}

/** Settings that took two or more values among the scored trials (only trials where the setting applies). */
export function variedParameters(trials: CatalogTrial[]): string[] {
  const values = new Map<string, Set<string>>();
  for (const t of trials) {
    if (t.score === null) continue;
    for (const [k, v] of Object.entries(t.config)) {
      if (!applies(t.config, k)) continue;
      const set = values.get(k) ?? new Set<string>();
      set.add(valueText(v));
      values.set(k, set);
    }
  }
  return [...values].filter(([, s]) => s.size > 1).map(([k]) => k);
}

/** A score axis over the data (padded), never a fixed 0–1. */
function scoreRange(scores: number[]): [number, number] {
  if (scores.length === 0) return [0, 1];
  let lo = Math.min(...scores);
  let hi = Math.max(...scores);
  if (hi - lo < 1e-9) {
    lo -= 0.05;
    hi += 0.05;
  }
  const pad = (hi - lo) * 0.08;
  return [lo - pad, hi + pad];
}

function color(score: number, lo: number, hi: number): string {
  const t = hi > lo ? (score - lo) / (hi - lo) : 0.5;
  return `hsl(${Math.round(10 + t * 200)} 70% 42%)`;
}

export function ScorePerTrial(props: { trials: CatalogTrial[]; metric: string }): JSX.Element {
  const trials = [...props.trials].sort((a, b) => a.iteration - b.iteration);
  const scored = trials.filter((t) => t.score !== null).map((t) => t.score as number);
  const [lo, hi] = scoreRange(scored);
  const W = 640;
  const H = 220;
  const L = 52;
  const B = 28;
  const x = (i: number) => L + ((i + 0.5) * (W - L - 10)) / Math.max(1, trials.length);
  const y = (s: number) => 10 + (1 - (s - lo) / (hi - lo)) * (H - B - 10);
  const best = Math.max(...scored);
  const ticks = [lo, (lo + hi) / 2, hi];
  return (
    <svg
      viewBox={`0 0 ${W} ${H}`}
      class="chart"
      role="img"
      aria-label={`${props.metric} per trial, ${scored.length} scored trials`}
    >
      {ticks.map((t) => (
        <g key={t}>
          <line x1={L} x2={W - 5} y1={y(t)} y2={y(t)} class="grid" />
          <text x={L - 6} y={y(t) + 4} text-anchor="end" class="tick">
            {t.toFixed(3)}
          </text>
        </g>
      ))}
      {trials.map((t, i) => (
        <g key={t.trial_id}>
          {t.score === null ? (
            <text x={x(i)} y={H - B - 4} text-anchor="middle" class="failed-mark">
              ×<title>{`${t.pattern_name}: failed${t.error ? ` (${t.error})` : ''}`}</title>
            </text>
          ) : (
            <circle
              cx={x(i)}
              cy={y(t.score)}
              r={t.score === best ? 6 : 4}
              class={t.score === best ? 'dot best' : t.cached ? 'dot cached' : 'dot'}
            >
              <title>{`${t.pattern_name}: ${t.score.toFixed(4)}${t.cached ? ' (cached)' : ''}`}</title>
            </circle>
          )}
          {(trials.length <= 16 || i % Math.ceil(trials.length / 16) === 0) && (
            <text x={x(i)} y={H - 8} text-anchor="middle" class="tick">
              {t.pattern_name.replace('Pattern', 'P')}
            </text>
          )}
        </g>
      ))}
    </svg>
  );
}

export function ParameterEffects(props: { trials: CatalogTrial[] }): JSX.Element {
  const params = variedParameters(props.trials);
  const scored = props.trials.filter((t) => t.score !== null);
  if (params.length === 0) {
    return (
      <p class="muted">
        {scored.length < 2
          ? 'Parameter effects need two or more scored trials.'
          : 'Every scored trial used the same settings.'}
      </p>
    );
  }
  const [lo, hi] = scoreRange(scored.map((t) => t.score as number));
  return (
    <div class="effects">
      {params.map((p) => {
        const groups = new Map<string, number[]>();
        for (const t of scored) {
          if (!applies(t.config, p)) continue;
          const key = valueText(t.config[p]);
          groups.set(key, [...(groups.get(key) ?? []), t.score as number]);
        }
        const rows = [...groups].map(([value, s]) => ({
          value,
          n: s.length,
          mean: s.reduce((a, b) => a + b, 0) / s.length,
        }));
        return (
          <figure key={p} class="effect">
            <figcaption>{p}</figcaption>
            <table>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.value}>
                    <th scope="row">{r.value}</th>
                    <td class="bar-cell">
                      <span
                        class="bar"
                        style={{ width: `${Math.max(2, ((r.mean - lo) / (hi - lo)) * 100)}%` }}
                      />
                    </td>
                    <td class="num">
                      {r.mean.toFixed(4)} <span class="muted">n={r.n}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </figure>
        );
      })}
    </div>
  );
}

export function ParallelCoordinates(props: {
  trials: CatalogTrial[];
  metric: string;
}): JSX.Element {
  const params = variedParameters(props.trials);
  const scored = props.trials.filter((t) => t.score !== null);
  if (params.length === 0 || scored.length < 2) {
    return <p class="muted">The parameter-vs-score view needs two or more settings that varied.</p>;
  }
  const axes = [...params, props.metric];
  const W = Math.max(520, axes.length * 140);
  const H = 280;
  const top = 36;
  const bottom = H - 24;
  const ax = (i: number) => 75 + (i * (W - 150)) / (axes.length - 1);
  const [lo, hi] = scoreRange(scored.map((t) => t.score as number));
  // Each setting's values along its axis: numbers by value, others in order of appearance.
  const scales = params.map((p) => {
    const raw = scored.filter((t) => applies(t.config, p)).map((t) => t.config[p]);
    const numeric = raw.every((v) => typeof v === 'number');
    const texts = [...new Set(raw.map(valueText))];
    if (numeric) {
      const nums = raw as number[];
      const mn = Math.min(...nums);
      const mx = Math.max(...nums);
      return {
        ticks: [...new Set(nums)].sort((a, b) => a - b).map(String),
        pos: (v: unknown) =>
          typeof v === 'number' ? bottom - ((v - mn) / (mx - mn || 1)) * (bottom - top) : undefined,
        tickPos: (t: string) => bottom - ((Number(t) - mn) / (mx - mn || 1)) * (bottom - top),
      };
    }
    const step = (bottom - top) / Math.max(1, texts.length - 1);
    return {
      ticks: texts,
      pos: (v: unknown) =>
        v === undefined || v === null ? undefined : bottom - texts.indexOf(valueText(v)) * step,
      tickPos: (t: string) => bottom - texts.indexOf(t) * step,
    };
  });
  const yScore = (s: number) => bottom - ((s - lo) / (hi - lo)) * (bottom - top);
  return (
    <svg
      viewBox={`0 0 ${W} ${H}`}
      class="chart parallel"
      role="img"
      aria-label={`parallel coordinates: ${axes.join(', ')}`}
    >
      {scored.map((t) => {
        const pts: string[] = [];
        params.forEach((p, i) => {
          const yv = applies(t.config, p) ? scales[i]?.pos(t.config[p]) : undefined;
          if (yv !== undefined) pts.push(`${ax(i)},${yv}`);
        });
        pts.push(`${ax(axes.length - 1)},${yScore(t.score as number)}`);
        return (
          <polyline
            key={t.trial_id}
            points={pts.join(' ')}
            class="pc-line"
            stroke={color(t.score as number, lo, hi)}
          >
            <title>{`${t.pattern_name}: ${(t.score as number).toFixed(4)}`}</title>
          </polyline>
        );
      })}
      {axes.map((a, i) => (
        <g key={a}>
          <line x1={ax(i)} x2={ax(i)} y1={top} y2={bottom} class="axis" />
          <text x={ax(i)} y={18} text-anchor="middle" class="axis-label">
            {a}
          </text>
          {i < params.length
            ? scales[i]?.ticks.map((t) => (
                <text key={t} x={ax(i) + 5} y={(scales[i]?.tickPos(t) ?? 0) + 4} class="tick">
                  {t.length > 18 ? `${t.slice(0, 17)}…` : t}
                </text>
              ))
            : [lo, (lo + hi) / 2, hi].map((s) => (
                <text key={s} x={ax(i) - 5} y={yScore(s) + 4} text-anchor="end" class="tick">
                  {s.toFixed(3)}
                </text>
              ))}
        </g>
      ))}
    </svg>
  );
}
