/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The web playground in a real browser: Debian's Chromium driven by playwright-core against `ai4rag serve`
 * (startServer on a free port, a temporary data folder, the app built from web/ for this run). Skipped when no
 * Chromium is installed (set CHROMIUM_PATH). On a failure, a screenshot of the page is written to the folder
 * printed at the start.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type RunningServer, startServer } from '../../bin/cli/serve.js';
import { buildWeb } from '../../scripts/build-web.js';
import { findChromium } from '../support/browser.js';
import { startFakeTei } from '../support/fake-tei-server.js';

const CHROMIUM = findChromium();
const TOKEN = 'browser-test-token';
const DOCS = fileURLToPath(new URL('../../examples/docs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const POLICY = `# Parental leave policy

Every employee may take up to 26 weeks of parental leave after the birth or adoption of a child.
The first 12 weeks are paid at the full salary; the rest is paid at 80 percent.

## How to apply

Tell your manager at least 8 weeks before the leave starts and file the form in the staff portal.
`;

const REMOTE = `# Remote work

Staff may work remotely up to three days a week when their role allows it.
Crew members on vessels cannot work remotely.
`;

const BENCHMARK = [
  {
    question: 'When was the cooperative founded?',
    correct_answers: ['14 March 1987'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
  {
    question: 'Who currently chairs the Board?',
    correct_answers: ['Tomas Eklund'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
  {
    question: 'How many people work for Halvorsen Riverworks in total?',
    correct_answers: ['426 people'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
];

describe.skipIf(CHROMIUM === undefined)(
  'the web playground in headless Chromium (skipped when no Chromium is found; set CHROMIUM_PATH)',
  () => {
    let dir = '';
    let shots = '';
    let server: RunningServer;
    let webDir = '';
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const consoleErrors: string[] = [];

    /** Screenshot of the page when the current test fails. */
    function screenshotOnFailure(name: string): void {
      onTestFailed(async () => {
        const file = join(shots, `${name}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
        process.stderr.write(`browser test "${name}" failed: screenshot ${file}\n`);
      });
    }

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'ai4rag-browser-'));
      shots = join(ROOT, '.bench-out', 'browser');
      await mkdir(shots, { recursive: true });
      process.stderr.write(`browser tests: screenshots of failures go to ${shots}\n`);
      webDir = await buildWeb(join(dir, 'web'));
      server = await startServer({
        dataDir: join(dir, 'data'),
        port: 0,
        token: TOKEN,
        inMemory: true,
        webDir,
      });
      const { chromium } = await import('playwright-core');
      browser = await chromium.launch({
        executablePath: CHROMIUM as string,
        headless: true,
        args: ['--no-sandbox', '--disable-background-networking'],
      });
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });
      page.on('pageerror', (e) => consoleErrors.push(e.message));
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await server?.close();
      if (dir !== '') await rm(dir, { recursive: true, force: true });
    });

    it('asks for the token when the address has none, refuses a wrong one, and keeps the right one out of the address', async () => {
      screenshotOnFailure('token');
      // Prepare: its own tab (a rejected token is a 401 the console reports, as it should)
      const tab = await context.newPage();

      // Act
      await tab.goto(`${server.url}/`);
      await tab.getByLabel('API token').fill('wrong');
      await tab.getByRole('button', { name: 'Continue' }).click();
      await tab.getByText('The server rejected that token.').waitFor();
      await tab.getByLabel('API token').fill(TOKEN);
      await tab.getByRole('button', { name: 'Continue' }).click();
      await tab.getByRole('navigation', { name: 'sections' }).waitFor();
      await tab.close();
      await page.goto(`${server.url}/#token=${TOKEN}`);
      await page.getByRole('navigation', { name: 'sections' }).waitFor();

      // Assess
      expect(page.url()).toBe(`${server.url}/#/ask`);
      expect(await page.evaluate(() => sessionStorage.getItem('ai4rag.token'))).toBe(TOKEN);
      expect(await page.getByRole('link', { name: 'Ask' }).getAttribute('aria-current')).toBe(
        'page',
      );
    });

    it('uploads documents with the file picker and by drag and drop, and shows them indexed', async () => {
      screenshotOnFailure('upload');
      // Act
      await page.getByRole('link', { name: 'Knowledge base' }).click();
      await page.getByLabel('Folder in the knowledge base (optional)').fill('policies');
      await page.locator('#files').setInputFiles({
        name: 'parental-leave.md',
        mimeType: 'text/markdown',
        buffer: Buffer.from(POLICY),
      });
      await page.getByText('policies/parental-leave.md: indexed').waitFor();
      const drop = await page.evaluateHandle((text) => {
        const dt = new DataTransfer();
        dt.items.add(new File([text], 'remote-work.md', { type: 'text/markdown' }));
        return dt;
      }, REMOTE);
      await page.locator('label.drop').dispatchEvent('drop', { dataTransfer: drop });
      await page.getByText('policies/remote-work.md: indexed').waitFor();
      await expect.poll(() => page.getByTestId('stat-documents').textContent()).toBe('2');

      // Assess
      const rows = page.locator('section[aria-labelledby=kb-docs] tbody tr');
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(0).locator('td').nth(0).textContent()).toBe(
        'policies/parental-leave.md',
      );
      expect(await rows.nth(0).locator('.badge').textContent()).toBe('indexed');
      expect(Number(await page.getByTestId('stat-chunks').textContent())).toBeGreaterThan(0);
      // The collection's tables on disk, in binary units (PGlite: a few MiB for two documents).
      expect(await page.getByTestId('stat-size').textContent()).toMatch(/^\d+\.\d (KiB|MiB)$/);
      const served = page.locator('section[aria-labelledby=kb-collections] tbody tr').first();
      expect(await served.locator('td').first().textContent()).toBe('ai4rag_default served');
    });

    it('deletes a document after a confirmation', async () => {
      screenshotOnFailure('delete');
      // Act
      await page.getByRole('button', { name: 'Delete policies/remote-work.md' }).click();
      await page.getByRole('button', { name: 'Confirm delete' }).click();
      await expect.poll(() => page.getByTestId('stat-documents').textContent()).toBe('1');

      // Assess
      const keys = await page
        .locator('section[aria-labelledby=kb-docs] tbody tr td:first-child')
        .allTextContents();
      expect(keys).toEqual(['policies/parental-leave.md']);
    });

    it('streams an answer with a citation, follows it to its source, and continues the conversation through /chat', async () => {
      screenshotOnFailure('ask');
      // Act
      await page.getByRole('link', { name: 'Ask' }).click();
      await page
        .getByLabel('Question')
        .fill('How many weeks of parental leave may an employee take?');
      await page.getByRole('button', { name: 'Ask', exact: true }).click();
      const first = page.getByRole('article', { name: 'question 1' });
      await first.locator('.metrics').waitFor();
      const cite = first.getByRole('button', { name: /^source 1: / });
      await cite.focus();
      await page.keyboard.press('Enter');

      // Assess
      expect(await first.locator('.answer-text').textContent()).toContain('26 weeks');
      expect(await cite.getAttribute('aria-label')).toBe('source 1: policies/parental-leave.md');
      const source = first.getByRole('region', { name: 'source 1' });
      expect(await source.getAttribute('class')).toBe('source active');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('src-1-1');
      expect(await source.locator('mark').first().textContent()).toContain('26 weeks');
      expect(await source.locator('details').getAttribute('open')).toBe('');
      expect(await source.locator('dl.why').textContent()).toContain('Rank1 of');
      const metrics = await first.locator('.metrics').textContent();
      expect(metrics).toMatch(/retrieve [\d.]+ ms/);
      expect(metrics).toMatch(/tokens \d+ prompt \+ \d+ completion/);
      expect(metrics).toContain('via /stream');

      // Act: a follow-up question goes to /chat with the conversation
      await page.getByLabel('Follow-up question').fill('How are the first 12 weeks paid?');
      await page.getByRole('button', { name: 'Ask', exact: true }).click();
      const second = page.getByRole('article', { name: 'question 2' });
      await second.locator('.metrics').waitFor();

      // Assess
      expect(await second.locator('.metrics').textContent()).toContain('via /chat');
      expect(await second.locator('.answer-text').textContent()).toContain('full salary');
    });

    it('starts a small experiment, shows its progress and leaderboard, and serves its best pattern', async () => {
      screenshotOnFailure('experiment');
      // Act
      await page.getByRole('link', { name: 'Experiments' }).click();
      await page.getByText('No experiments yet').waitFor();
      await page.getByLabel(/^Documents folder on the server/).fill(DOCS);
      await page.getByLabel('Benchmark JSON').fill(JSON.stringify(BENCHMARK));
      await page.getByLabel(/^Search space/).fill(
        JSON.stringify({
          chunking_method: ['recursive'],
          chunk_size: [512, 1024],
          chunk_overlap: [128],
          retrieval_method: ['simple'],
          number_of_chunks: [3],
          search_mode: ['hybrid'],
          ranker_strategy: ['rrf'],
        }),
      );
      await page.getByLabel('Trials (max evals)').fill('2');
      await page.getByLabel('Experiment id (optional)').fill('browser-exp');
      await page.getByRole('button', { name: 'Start experiment' }).click();
      await page.waitForURL(/#\/experiments\/browser-exp$/);
      await expect
        .poll(() => page.getByTestId('experiment-status').textContent(), { timeout: 60_000 })
        .toBe('finished');
      const rows = page.locator('table.leaderboard tbody tr');
      await rows.first().waitFor();

      // Assess
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(0).locator('td').nth(0).textContent()).toBe('1');
      expect(await page.locator('svg.chart circle').count()).toBe(2);
      expect(await page.locator('svg.parallel polyline').count()).toBe(2);
      expect(await page.locator('.effect figcaption').allTextContents()).toContain('chunk_size');
      expect(await page.locator('table.compare tbody tr').count()).toBe(3);

      // Act: serve the best pattern, then ask
      const best = (await rows.nth(0).locator('td').nth(1).textContent()) ?? '';
      await rows
        .nth(0)
        .getByRole('button', { name: `Serve ${best}` })
        .click();
      await page.waitForURL(/#\/ask$/);
      await page.getByLabel(/Question$/).fill('When was the cooperative founded?');
      await page.getByRole('button', { name: 'Ask', exact: true }).click();
      const turn = page.locator('article.turn').last();
      await turn.locator('.metrics').waitFor();

      // Assess
      expect(await page.locator('.serving').textContent()).toContain(
        `Answering with ${best} of experiment browser-exp`,
      );
      expect(await turn.locator('.answer-text').textContent()).toContain('14 March 1987');
      expect(
        await turn
          .getByRole('button', { name: /^source \d+: about\/company-overview\.md$/ })
          .count(),
      ).toBeGreaterThan(0);
    });

    it('lists the experiment and reaches every section by keyboard', async () => {
      screenshotOnFailure('keyboard');
      // Act
      await page.goto(`${server.url}/#/experiments`);
      // A fresh load: keyboard focus starts at the top of the document.
      await page.reload();
      await page.getByRole('link', { name: 'browser-exp' }).waitFor();
      await page.keyboard.press('Tab');
      const skip = await page.evaluate(() => document.activeElement?.textContent);
      await page.keyboard.press('Tab');
      const firstLink = await page.evaluate(() => document.activeElement?.textContent);
      await page.keyboard.press('Tab');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      await page.waitForURL(/#\/experiments$/);

      // Assess
      expect(skip).toBe('Skip to content');
      expect(firstLink).toBe('Ask');
      const row = page.locator('section[aria-labelledby=exp-list] tbody tr').first();
      expect(await row.locator('.badge').textContent()).toBe('finished');
      expect(await row.locator('td').nth(3).textContent()).toBe('2/2');
      // Every control is a real control with a name.
      const unnamed = await page.evaluate(
        () =>
          [...document.querySelectorAll('input, select, textarea')].filter(
            (el) => (el as HTMLInputElement).labels?.length === 0,
          ).length,
      );
      expect(unnamed).toBe(0);
      expect(await page.locator('[onclick], div[role=button]').count()).toBe(0);
    });

    it.each(['#/ask', '#/kb', '#/experiments', '#/experiments/browser-exp'])(
      'fits a 390 px phone screen on %s (no sideways page scroll)',
      async (route) => {
        screenshotOnFailure(`phone-${route.replaceAll('/', '_')}`);
        // Prepare
        await page.setViewportSize({ width: 390, height: 844 });

        // Act
        await page.goto(`${server.url}/${route}`);
        await page.locator('main h2, main .serving').first().waitFor();
        await page.waitForLoadState('networkidle');
        const width = await page.evaluate(() => document.documentElement.scrollWidth);

        // Assess
        expect(width).toBeLessThanOrEqual(390);
        await page.setViewportSize({ width: 1280, height: 900 });
      },
    );

    it('on a first run (an empty knowledge base, one finished experiment) answers with the best pattern and says so', async () => {
      screenshotOnFailure('first-run');
      // Prepare: a fresh data folder where only an experiment ran
      const first = await startServer({
        dataDir: join(dir, 'first-run'),
        port: 0,
        token: TOKEN,
        inMemory: true,
        webDir,
      });
      const call = (path: string, body?: unknown) =>
        fetch(`${first.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          ...(body !== undefined && { body: JSON.stringify(body) }),
        });
      await call('/experiments', {
        experiment_id: 'first-exp',
        documents_dir: DOCS,
        benchmark: BENCHMARK,
        max_evals: 1,
      });
      await expect
        .poll(
          async () =>
            ((await (await call('/experiments/first-exp')).json()) as { run?: { status: string } })
              .run?.status,
          { timeout: 60_000 },
        )
        .toBe('finished');
      const tab = await context.newPage();
      tab.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });

      try {
        // Act
        await tab.goto(`${first.url}/#token=${TOKEN}`);
        await tab.getByText('Answering with').waitFor();
        await tab.getByLabel('Question').fill('When was the cooperative founded?');
        await tab.getByRole('button', { name: 'Ask', exact: true }).click();
        await tab.locator('.metrics').waitFor();

        // Assess
        const serving = await tab.locator('.serving').textContent();
        expect(serving).toContain('Answering with Pattern1 of experiment first-exp');
        expect(serving).toContain(
          'The knowledge base ai4rag_default is empty, so the best pattern of the latest experiment was chosen.',
        );
        expect(await tab.locator('.answer-text').textContent()).toContain('14 March 1987');
        expect(await tab.getByRole('button', { name: /^source 1: / }).count()).toBeGreaterThan(0);
      } finally {
        await tab.close();
        await first.close();
      }
    });

    it("reranks when asked (a TEI reranker endpoint) and shows each source's rank before reranking", async () => {
      screenshotOnFailure('rerank');
      // Prepare: a server with a reranker endpoint and two documents
      const tei = await startFakeTei();
      const reranking = await startServer({
        dataDir: join(dir, 'rerank'),
        port: 0,
        token: TOKEN,
        inMemory: true,
        webDir,
        env: { AI4RAG_RERANK_BASE_URL: tei.baseURL },
      });
      const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      for (const [key, text] of [
        ['parental-leave.md', POLICY],
        ['remote-work.md', REMOTE],
      ] as const) {
        const signed = (await (
          await fetch(`${reranking.url}/uploads`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ key }),
          })
        ).json()) as { url: string };
        await fetch(signed.url, { method: 'PUT', body: text });
      }
      const tab = await context.newPage();
      tab.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });

      try {
        // Act
        await tab.goto(`${reranking.url}/#token=${TOKEN}`);
        await tab.getByText('Answering from the knowledge base ai4rag_default').waitFor();
        await tab.getByLabel('Rerank').check();
        await tab
          .getByLabel('Question')
          .fill('How many weeks of parental leave may an employee take?');
        await tab.getByRole('button', { name: 'Ask', exact: true }).click();
        await tab.locator('.metrics').waitFor();
        const source = tab.getByRole('region', { name: 'source 1' });
        await source.locator('summary').click();
        await source.getByText('Rank before reranking').waitFor();
        await expect.poll(() => source.locator('dl.why dd').nth(1).textContent()).toMatch(/^\d+$/);

        // Assess
        expect(tei.requests.some((r) => r.path === '/rerank')).toBe(true);
        const why = await source.locator('dl.why').textContent();
        expect(why).toContain('1 of 2 after reranking');
        expect(why).toContain('Reranker score');
        expect(await tab.locator('.metrics').textContent()).not.toContain('rerank 0.0 ms');
      } finally {
        await tab.close();
        await reranking.close();
        await tei.close();
      }
    });

    it('logged no console error on any page', () => {
      // Assess
      expect(consoleErrors).toEqual([]);
    });
  },
);
