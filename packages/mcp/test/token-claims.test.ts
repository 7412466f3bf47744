import { readFileSync } from 'node:fs';
import { normalizeMemory } from '@cairn/core';
import { countTokens, indexLine, toIndexEntry } from '@cairn/service';
import { describe, expect, it } from 'vitest';
import { WORKFLOW } from '../src/workflow.js';

// The token figures the README and the tool descriptions give are measured here, not claimed: every index
// line of the sample corpus (what `cairn serve --demo` loads) must fall inside the range they state.

const root = new URL('../../../', import.meta.url);
const sample = readFileSync(new URL('examples/agent-memories.jsonl', root), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Record<string, unknown>);

function lineTokens(): number[] {
  return sample.map((input) =>
    countTokens(indexLine(toIndexEntry(normalizeMemory(input, Date.UTC(2026, 0, 1))))),
  );
}

function statedRange(text: string, pattern: RegExp): [number, number] {
  const m = pattern.exec(text);
  if (!m) throw new Error(`no token range found by ${pattern}`);
  return [Number(m[1]), Number(m[2])];
}

describe('token figures in the docs and tool descriptions', () => {
  const measured = lineTokens();
  const [min, max] = [Math.min(...measured), Math.max(...measured)];

  it('the README states the measured size of an index line', () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    const [lo, hi] = statedRange(readme, /one line per hit, (\d+)–(\d+) tokens each/);
    expect(measured.length).toBeGreaterThan(20);
    expect(min).toBeGreaterThanOrEqual(lo);
    expect(max).toBeLessThanOrEqual(hi);
  });

  it('every tool description states it too', () => {
    const [lo, hi] = statedRange(WORKFLOW, /about (\d+)–(\d+) tokens a line/);
    expect(min).toBeGreaterThanOrEqual(lo);
    expect(max).toBeLessThanOrEqual(hi);
  });
});
