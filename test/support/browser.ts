import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * The Chromium the browser tests drive: `CHROMIUM_PATH` first, then Debian's `/usr/bin/chromium`, then the usual
 * binary names on PATH; undefined when none is installed (the tests then skip).
 */
export function findChromium(): string | undefined {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv !== undefined && fromEnv !== '' && existsSync(fromEnv)) return fromEnv;
  if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium';
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
