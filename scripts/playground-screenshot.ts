/// <reference lib="dom" />
/**
 * Writes the README's pictures of the web playground: docs/playground.png (the Ask page answering with the best
 * pattern of an experiment, a citation followed to its source) and docs/playground-experiment.png (that
 * experiment's leaderboard and charts). It does what a first run does: an experiment on examples/docs with
 * examples/benchmark.json started from the page's API on an empty data folder, then the page, which answers with
 * the experiment's best pattern because the knowledge base is empty.
 * Run: node --import tsx scripts/playground-screenshot.ts [CHROMIUM]
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../bin/cli/serve.js';
import { buildWeb } from './build-web.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TOKEN = 'readme-screenshot';

const dir = await mkdtemp(join(tmpdir(), 'ai4rag-shot-'));
const server = await startServer({
  dataDir: join(dir, 'data'),
  port: 0,
  token: TOKEN,
  webDir: await buildWeb(join(dir, 'web')),
});
const call = async (path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
};
try {
  const benchmark = JSON.parse(await readFile(join(ROOT, 'examples/benchmark.json'), 'utf8'));
  await call('/experiments', {
    experiment_id: 'exp-first-run',
    documents_dir: join(ROOT, 'examples/docs'),
    benchmark,
    max_evals: 12,
  });
  for (;;) {
    const d = (await call('/experiments/exp-first-run')) as {
      run?: { status: string; error?: string };
    };
    if (d.run?.status === 'failed') throw new Error(`experiment failed: ${d.run.error}`);
    if (d.run?.status === 'finished') break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const browser = await chromium.launch({
    executablePath: process.argv[2] ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await page.goto(`${server.url}/#token=${TOKEN}`);
  await page.getByText('Answering with').waitFor();
  await page.getByLabel('Question').fill('When was the cooperative founded, and by whom?');
  await page.getByRole('button', { name: 'Ask', exact: true }).click();
  await page.locator('.metrics').first().waitFor();
  await page.locator('button.cite').first().click();
  await page.screenshot({ path: join(ROOT, 'docs/playground.png') });
  await page.goto(`${server.url}/#/experiments/exp-first-run`);
  await page.getByText('Score per trial').waitFor();
  await page
    .locator('#spt-title')
    .evaluate((el) => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 16));
  await page.screenshot({ path: join(ROOT, 'docs/playground-experiment.png') });
  await browser.close();
  process.stdout.write('wrote docs/playground.png and docs/playground-experiment.png\n');
} finally {
  await server.close();
  await rm(dir, { recursive: true, force: true });
}
