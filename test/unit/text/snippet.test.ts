import { describe, expect, it } from 'vitest';
import { bestSnippet } from '../../../shared/src/text/snippet.js';

describe('bestSnippet', () => {
  it('starts at the sentence with the most query terms and fills up to the limit', () => {
    expect(
      bestSnippet(
        'Intro text here. Staff get 27 days of leave. Other things.',
        'how many leave days',
        45,
      ),
    ).toBe('...Staff get 27 days of leave. Other things.');
  });

  it('returns the start of the passage when no term matches', () => {
    expect(bestSnippet('Alpha beta. Gamma delta.', 'zebra', 100)).toBe('Alpha beta. Gamma delta.');
  });

  it('cuts a single over-long sentence with an ellipsis', () => {
    expect(bestSnippet('word '.repeat(100), 'word', 20)).toBe('word word word wo...');
  });

  it('treats table rows and lines as units', () => {
    expect(bestSnippet('| Role | Limit |\n| Manager | EUR 2,500 |', 'manager limit', 200)).toBe(
      '| Role | Limit | | Manager | EUR 2,500 |',
    );
  });
});
