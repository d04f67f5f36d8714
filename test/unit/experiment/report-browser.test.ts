import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'node-html-parser';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { renderReport } from '../../../shared/src/experiment/report.js';
import type { ReportData } from '../../../shared/src/experiment/types.js';
import { findChromium } from '../../support/browser.js';

const run = promisify(execFile);

const browser = findChromium();

describe.skipIf(browser === undefined)(
  'renderReport in headless Chromium (skipped when no Chromium/Chrome is found; set CHROMIUM_PATH)',
  () => {
    let dir = '';

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'ai4rag-report-'));
    });

    afterAll(async () => {
      if (dir !== '') await rm(dir, { recursive: true, force: true });
    });

    it('parses the report into a DOM holding every leaderboard row, best pattern first', async () => {
      // Prepare
      const data = JSON.parse(
        readFileSync(
          new URL('../../fixtures/experiment/report-data.json', import.meta.url),
          'utf8',
        ),
      ) as ReportData;
      const file = join(dir, 'report.html');
      await writeFile(file, renderReport(data), 'utf8');

      // Act
      const { stdout } = await run(
        browser as string,
        [
          '--headless',
          '--disable-gpu',
          '--no-sandbox',
          `--user-data-dir=${join(dir, 'profile')}`,
          '--dump-dom',
          pathToFileURL(file).href,
        ],
        { timeout: 45_000, maxBuffer: 32 * 1024 * 1024 },
      );

      // Assess
      const root = parse(stdout);
      const rows = root.querySelectorAll('#leaderboard tbody tr');
      expect(rows).toHaveLength(data.leaderboard.length);
      expect(rows.map((r) => r.getAttribute('data-pattern'))).toEqual(
        data.leaderboard.map((e) => e.pattern_name),
      );
      expect(root.querySelectorAll('svg')).toHaveLength(10);
      // The script ran: it showed the filter boxes and turned the headers into sort buttons.
      expect(
        root.querySelector('.table-tools[data-for="leaderboard"]')?.hasAttribute('hidden'),
      ).toBe(false);
      expect(root.querySelectorAll('#leaderboard thead button.sort')).toHaveLength(14);
    });
  },
);

/** What the page logged: console errors and warnings (CSP violations are reported so) and uncaught errors. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return problems;
}

/** The little of the DOM the page functions below use (the test project compiles without the DOM library). */
interface DomNode {
  hidden: boolean;
  getBBox(): { x: number; width: number };
  viewBox: { baseVal: { width: number } };
  closest(selector: string): DomNode | null;
  open: boolean;
  id: string;
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  querySelector(selector: string): DomNode | null;
  querySelectorAll(selector: string): Iterable<DomNode>;
}

type PageDocument = DomNode & { scrollingElement: DomNode };

/** First words of the row headers (pattern names, question ids) the filter leaves visible, in order. */
function visibleRows(page: Page, table: string): Promise<string[]> {
  return page.evaluate((id) => {
    const doc = (globalThis as unknown as { document: PageDocument }).document;
    return [...doc.querySelectorAll(`#${id} tbody tr`)]
      .filter((r) => !r.hidden)
      .map((r) => r.querySelector('th')?.textContent?.split(' ')[0] ?? '');
  }, table);
}

/** Whether the page or any table wrapper scrolls sideways (after opening every collapsed section). */
function sidewaysScroll(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: PageDocument }).document;
    for (const d of doc.querySelectorAll('details')) d.open = true;
    const se = doc.scrollingElement;
    const out: string[] = [];
    if (se.scrollWidth > se.clientWidth) out.push(`document ${se.scrollWidth} > ${se.clientWidth}`);
    for (const w of doc.querySelectorAll('.wrap')) {
      if (w.scrollWidth > w.clientWidth) {
        out.push(`${w.querySelector('table')?.id ?? '?'} ${w.scrollWidth} > ${w.clientWidth}`);
      }
    }
    return out;
  });
}

/** Chart texts that run past the right edge of their SVG (they would be cut off). */
function clippedChartText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: PageDocument }).document;
    const out: string[] = [];
    for (const t of doc.querySelectorAll('svg text')) {
      const svg = t.closest('svg') as DomNode;
      const box = t.getBBox();
      if (box.x + box.width > svg.viewBox.baseVal.width + 0.5) out.push(t.textContent ?? '');
    }
    return out;
  });
}

describe.skipIf(browser === undefined)(
  'report.html in Chromium via playwright-core at 1400 px (skipped when no Chromium/Chrome is found; set CHROMIUM_PATH)',
  () => {
    let dir = '';
    let chrome: Browser | undefined;
    let file = '';
    const data = JSON.parse(
      readFileSync(
        new URL('../../fixtures/experiment/report-data-examples.json', import.meta.url),
        'utf8',
      ),
    ) as ReportData;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'ai4rag-report-pw-'));
      file = join(dir, 'report.html');
      await writeFile(file, renderReport(data), 'utf8');
      chrome = await chromium.launch({
        executablePath: browser as string,
        headless: true,
        args: ['--no-sandbox', '--disable-background-networking'],
      });
    });

    afterAll(async () => {
      await chrome?.close();
      if (dir !== '') await rm(dir, { recursive: true, force: true });
    });

    async function open(javaScriptEnabled = true, url = pathToFileURL(file).href) {
      const context = await (chrome as Browser).newContext({
        viewport: { width: 1400, height: 900 },
        javaScriptEnabled,
      });
      const page = await context.newPage();
      const problems = watch(page);
      onTestFailed(async () => {
        const shot = join(tmpdir(), `ai4rag-report-failure-${Date.now()}.png`);
        await page.screenshot({ path: shot, fullPage: true }).catch(() => undefined);
        console.error(`report browser test failed; screenshot: ${shot}`);
      });
      await page.goto(url);
      return { page, problems, close: () => context.close() };
    }

    it('fits 1400 px without sideways scrolling and logs no error or CSP violation', async () => {
      // Prepare: also the hand-made fixture (long model ids, a failed trial) and the fully cached re-run.
      const others: string[] = [];
      for (const name of ['report-data.json', 'report-data-examples-cached.json']) {
        const text = readFileSync(
          new URL(`../../fixtures/experiment/${name}`, import.meta.url),
          'utf8',
        );
        const other = join(dir, `${name}.html`);
        await writeFile(other, renderReport(JSON.parse(text) as ReportData), 'utf8');
        others.push(other);
      }

      // Act
      const { page, problems, close } = await open();

      // Assess
      for (const other of others) {
        const second = await open(true, pathToFileURL(other).href);
        expect(await sidewaysScroll(second.page)).toEqual([]);
        expect(await clippedChartText(second.page)).toEqual([]);
        expect(second.problems).toEqual([]);
        await second.close();
      }
      expect(await clippedChartText(page)).toEqual([]);
      expect(await sidewaysScroll(page)).toEqual([]);
      expect(problems).toEqual([]);
      // The script ran under the CSP: filter boxes shown, headers are sort buttons.
      expect(await page.locator('.table-tools:visible').count()).toBe(4);
      expect(await page.locator('#leaderboard thead button.sort').count()).toBe(17);
      await close();
    });

    it('sorts a table by the clicked column header, ascending then descending, by keyboard too', async () => {
      // Prepare
      const { page, problems, close } = await open();
      const size = page.locator('#leaderboard thead th', { hasText: 'Chunk size' });

      // Act
      await size.click();
      const ascending = await visibleRows(page, 'leaderboard');
      const ascSort = await size.getAttribute('aria-sort');
      await size.click();
      const descending = await visibleRows(page, 'leaderboard');
      await page
        .locator('#question-table thead th', { hasText: 'answer corr.' })
        .locator('button')
        .focus();
      await page.keyboard.press('Enter');
      const questions = await visibleRows(page, 'question-table');

      // Assess: ties keep their current order.
      expect(ascSort).toBe('ascending');
      expect(ascending).toEqual([
        'Pattern3',
        'Pattern1',
        'Pattern11',
        'Pattern9',
        'Pattern7',
        'Pattern4',
        'Pattern2',
        'Pattern10',
        'Pattern6',
        'Pattern12',
        'Pattern8',
        'Pattern5',
      ]);
      expect(await size.getAttribute('aria-sort')).toBe('descending');
      expect(descending).toEqual([
        'Pattern10',
        'Pattern6',
        'Pattern12',
        'Pattern8',
        'Pattern5',
        'Pattern3',
        'Pattern1',
        'Pattern11',
        'Pattern9',
        'Pattern7',
        'Pattern4',
        'Pattern2',
      ]);
      // Lowest answer_correctness first; the unanswerable questions (no score) last.
      expect(questions.slice(0, 9)).toEqual([
        'q3',
        'q26',
        'q29',
        'q41',
        'q39',
        'q5',
        'q42',
        'q11',
        'q43',
      ]);
      expect(questions.slice(-5)).toEqual(['q45', 'q46', 'q47', 'q48', 'q49']);
      expect(problems).toEqual([]);
      await close();
    });

    it('hides the rows that do not match the filter box or the flag menu', async () => {
      // Prepare
      const { page, problems, close } = await open();
      const tools = (id: string) => page.locator(`.table-tools[data-for="${id}"]`);

      // Act
      await tools('leaderboard').locator('input').fill('weighted');
      const weighted = await visibleRows(page, 'leaderboard');
      const count = await tools('leaderboard').locator('output').textContent();
      await tools('leaderboard').locator('input').fill('weighted 2048');
      const both = await visibleRows(page, 'leaderboard');
      await tools('leaderboard').locator('input').fill('');
      const all = await visibleRows(page, 'leaderboard');
      // Question, answer and references are searched; the collapsed retrieved contexts are not.
      await tools('question-table').locator('input').fill('lindholm');
      const lindholm = await visibleRows(page, 'question-table');
      await tools('question-table').locator('input').fill('');
      await tools('question-table').locator('select').selectOption('wrong');
      const wrong = await visibleRows(page, 'question-table');
      await tools('question-table').locator('select').selectOption('unanswerable-answered');
      const unanswerable = await visibleRows(page, 'question-table');

      // Assess
      expect(weighted).toEqual(['Pattern3', 'Pattern10', 'Pattern11', 'Pattern12', 'Pattern4']);
      expect(count).toBe('5 of 12 rows');
      expect(both).toEqual(['Pattern10', 'Pattern12']);
      expect(all).toHaveLength(12);
      expect(lindholm).toEqual(['q3', 'q5', 'q9', 'q47']);
      expect(wrong).toEqual(['q3', 'q26', 'q29', 'q39', 'q41']);
      expect(unanswerable).toEqual(['q47']);
      expect(await tools('question-table').locator('output').textContent()).toBe('1 of 50 rows');
      expect(problems).toEqual([]);
      await close();
    });

    it('reads fully with JavaScript off: every row shown, no filter box, no sideways scroll', async () => {
      // Act
      const { page, problems, close } = await open(false);

      // Assess
      expect(await visibleRows(page, 'leaderboard')).toHaveLength(12);
      expect(await visibleRows(page, 'question-table')).toHaveLength(50);
      expect(await page.locator('.table-tools:visible').count()).toBe(0);
      expect(await page.locator('button.sort').count()).toBe(0);
      expect(await sidewaysScroll(page)).toEqual([]);
      expect(problems).toEqual([]);
      await close();
    });

    it('refuses any script but its own (the CSP allows only the report script by hash)', async () => {
      // Prepare: a copy with a script the report did not write.
      const tampered = join(dir, 'tampered.html');
      await writeFile(
        tampered,
        renderReport(data).replace('</body>', "<script>document.title = 'ran';</script></body>"),
        'utf8',
      );

      // Act
      const { page, problems, close } = await open(true, pathToFileURL(tampered).href);

      // Assess
      expect(await page.title()).toBe(`RAG optimization report · ${data.experiment_id}`);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^error: .*Content Security Policy/);
      // The report's own script still ran.
      expect(await page.locator('#leaderboard thead button.sort').count()).toBe(17);
      await close();
    });
  },
);
