/**
 * Writes docs/openapi.json from the API's zod schemas (`node --import tsx scripts/openapi.ts`).
 * A unit test fails when the committed file differs from what this generates.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildOpenApiDocument } from '../shared/src/api/openapi.js';

/** The file content, shared with the up-to-date test. */
export function renderOpenApi(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}

/** Where the document is committed. */
export const OPENAPI_PATH = resolve(import.meta.dirname, '../docs/openapi.json');

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  writeFileSync(OPENAPI_PATH, renderOpenApi());
  process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
}
