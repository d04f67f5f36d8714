import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'node-html-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport } from '../../../shared/src/experiment/report.js';
import type { ReportData } from '../../../shared/src/experiment/types.js';

const run = promisify(execFile);

/** `CHROMIUM_PATH` first, then the usual binary names on PATH; undefined when none is installed. */
function findBrowser(): string | undefined {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv !== undefined && fromEnv !== '' && existsSync(fromEnv)) return fromEnv;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      const found = execFileSync('which', [name], { encoding: 'utf8', stdio: 'pipe' }).trim();
      if (found !== '') return found;
    } catch {
      // `which` exits non-zero when the name is not on PATH.
    }
  }
  return undefined;
}

const browser = findBrowser();

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
      expect(root.querySelectorAll('svg')).toHaveLength(12);
    });
  },
);
