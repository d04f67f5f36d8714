import { describe, expect, it } from 'vitest';
import { parseHtml, rawNestingExceeds } from '../../../shared/src/documents/html.js';

describe('rawNestingExceeds (pre-parse nesting bound)', () => {
  it.each([
    ['100,000 unclosed divs', `<body>${'<div>'.repeat(100_000)}x</body>`, true],
    ['100,000 closed nested divs', `${'<div>'.repeat(100_000)}x${'</div>'.repeat(100_000)}`, true],
    ['513 nested spans', `${'<span>'.repeat(513)}x${'</span>'.repeat(513)}`, true],
    ['512 nested spans', `${'<span>'.repeat(512)}x${'</span>'.repeat(512)}`, false],
    ['20,000 list items without end tags', `<ul>${'<li>item'.repeat(20_000)}</ul>`, false],
    ['20,000 paragraphs without end tags', `${'<p>text'.repeat(20_000)}`, false],
    ['void and self-closing elements', `${'<br><img src=x><x-icon/>'.repeat(5_000)}`, false],
    [
      'tags inside script and comments',
      `<script>${'<div>'.repeat(2_000)}</script><!-- ${'<div>'.repeat(2_000)} -->`,
      false,
    ],
  ])('%s → %s', (_name, html, expected) => {
    // Act / Assess
    expect(rawNestingExceeds(html, 512)).toBe(expected);
  });

  it('refuses 100,000 unclosed divs quickly instead of parsing them', () => {
    // Act
    const call = () =>
      parseHtml(`<html><body>${'<div>'.repeat(100_000)}x</body></html>`, { label: 'page.html' });
    // Assess
    expect(call).toThrow('page.html: HTML nested deeper than 512 elements; refused');
  });
});
