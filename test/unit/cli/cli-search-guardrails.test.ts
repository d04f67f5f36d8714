import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';
import { screenPassages } from '../../../shared/src/generation/guardrails.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const INJECTION = join(ROOT, 'test/fixtures/injection');
const EXAMPLES = join(ROOT, 'examples/docs');
/** The canaries every injection attempt of the corpus carries (see test/fixtures/injection). */
const INJECTED = /evil\.example|pwned/i;
const QUERY = 'How do I reset my staff password?';

interface Hit {
  id: string;
  document_key: string;
  sequence_number: number;
  text: string;
  metadata: { document_id: string; sequence_number: number; [key: string]: unknown };
  flagged_rules?: string[];
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag search screens its results for prompt injection (--injection)', () => {
  let dir: string;
  let data: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-guard-'));
    data = join(dir, 'data');
    // Small chunks, so the ordinary paragraphs next to an attempt land in chunks of their own.
    const chunking = ['--chunk-size', '128', '--chunk-overlap', '0'];
    for (const folder of [INJECTION, EXAMPLES]) {
      expect(
        await main(['ingest', folder, ...chunking, '--data-dir', data, '--json'], capture().io),
      ).toBe(0);
    }
  }, 120_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function search(extra: string[]): Promise<{ results: Hit[]; warnings?: string[] }> {
    const c = capture();
    expect(
      await main(['search', QUERY, '--k', '5', ...extra, '--data-dir', data, '--json'], c.io),
    ).toBe(0);
    return JSON.parse(c.out.at(-1) ?? '{}') as { results: Hit[]; warnings?: string[] };
  }

  it('excludes flagged results by default and fills k, warning on stderr and in --json', async () => {
    // Act
    const open = await search(['--injection', 'off']);
    const guarded = await search([]);
    const text = capture();
    const code = await main(['search', QUERY, '--k', '5', '--data-dir', data], text.io);

    // Assess: unscreened, the top 5 hold attempts; screened, 5 clean results still come back.
    expect(screenPassages(open.results).some((v) => v !== undefined)).toBe(true);
    expect(open.warnings).toBeUndefined();
    expect(guarded.results).toHaveLength(5);
    expect(guarded.results.filter((r) => INJECTED.test(r.text))).toEqual([]);
    expect(screenPassages(guarded.results).every((v) => v === undefined)).toBe(true);
    expect(guarded.warnings?.[0]).toMatch(/^guardrails: \d+ retrieved passage\(s\) excluded/);
    expect(code).toBe(0);
    expect(text.out.filter((l) => /^\d+\. /.test(l))).toHaveLength(5);
    expect(text.err).toEqual([`warning: ${guarded.warnings?.[0]}`]);
  });

  it('marks flagged results with their rules under --injection quote', async () => {
    // Act
    const open = await search(['--injection', 'off']);
    const quoted = await search(['--injection', 'quote']);
    const text = capture();
    await main(['search', QUERY, '--k', '5', '--injection', 'quote', '--data-dir', data], text.io);

    // Assess
    expect(quoted.results.map((r) => r.id)).toEqual(open.results.map((r) => r.id));
    const verdicts = screenPassages(open.results);
    expect(quoted.results.map((r) => r.flagged_rules)).toEqual(verdicts.map((v) => v?.rules));
    const marked = text.out.filter((l) => l.includes('[possible prompt injection: '));
    expect(marked).toHaveLength(verdicts.filter((v) => v !== undefined).length);
  });

  it('exits 2 naming the value for an unknown --injection', async () => {
    // Act
    const c = capture();
    const code = await main(
      ['search', QUERY, '--injection', 'block', '--data-dir', data, '--json'],
      c.io,
    );

    // Assess
    expect(code).toBe(2);
    expect(c.err.join('\n')).toContain(
      '--injection must be one of exclude, quote, off; got "block"',
    );
  });
});
