import { fstatSync, mkdtempSync, openSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { createHnswIndex, DEFAULT_HNSW_PARAMS, viewIndexFile } from '@cairn/vector';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { releaseIndex, releaseIndexSoon } from '../src/usearch-index.js';
import { DIMS, randomUnitVectors } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-view-'));
  // Descriptor 0 must be open for the checks below to mean anything (a test process may have none).
  try {
    fstatSync(0);
  } catch {
    openSync('/dev/null', 'r');
  }
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The identity of what descriptor 0 is, so a test can tell it was neither closed nor replaced. */
function stdinIdentity(): string {
  const st = fstatSync(0);
  return `${st.dev}:${st.ino}:${st.rdev}`;
}

describe('viewIndexFile', () => {
  it('maps a saved graph, which keeps serving after its file is deleted', () => {
    const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
    const vectors = randomUnitVectors(50, DIMS, 3);
    vectors.forEach((v, i) => {
      index.add(BigInt(i + 1), v);
    });
    const path = join(dir, 'g.usearch');
    index.save(path);
    const viewed = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
    viewIndexFile(viewed, path);
    unlinkSync(path);
    expect(viewed.size()).toBe(50);
    expect(Number(viewed.search(vectors[7]!, 1, 0).keys[0])).toBe(8);
  });

  it('refuses a missing or empty file with its name, and leaves descriptor 0 as it was', () => {
    const before = stdinIdentity();
    const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
    const missing = join(dir, 'gone.usearch');
    expect(() => viewIndexFile(index, missing)).toThrow(/ENOENT.*gone\.usearch/);
    const empty = join(dir, 'empty.usearch');
    writeFileSync(empty, '');
    expect(() => viewIndexFile(index, empty)).toThrow(/empty\.usearch is empty/);
    // usearch 2.26's own view of either closes descriptor 0 (what stood in it then answers EBADF).
    expect(stdinIdentity()).toBe(before);
  });
});

describe('releaseIndex', () => {
  it('frees a mapped graph, on the serving thread through an empty file written and deleted off it', async () => {
    const releaseFiles = () =>
      readdirSync(tmpdir()).filter((f) => f.startsWith(`cairn-release-${process.pid}-${threadId}-`));
    const path = join(dir, 'g.usearch');
    const index = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
    randomUnitVectors(50, DIMS, 4).forEach((v, i) => {
      index.add(BigInt(i + 1), v);
    });
    index.save(path);
    for (const release of [releaseIndex, releaseIndexSoon]) {
      const viewed = createHnswIndex(DIMS, DEFAULT_HNSW_PARAMS);
      viewIndexFile(viewed, path);
      expect(viewed.size()).toBe(50);
      await release(viewed);
      // Released: the wrapper now holds the empty graph, not the mapping, and no file is left behind.
      expect(viewed.size()).toBe(0);
      expect(releaseFiles()).toEqual([]);
    }
  });
});
