import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Embedder, embeddingSpaceOf } from '@cairn/core';
import { HashingEmbedder } from '@cairn/embed';
import { MemoryStore } from '@cairn/store';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedPipeline } from '../src/embedded-pipeline.js';
import { eventually } from './helpers.js';

// The embedded transport's loop on a real SQLite file.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A built-in embedder whose calls wait until `release` is called. */
function held(dimensions: number): Embedder & { release(): void; calls: number } {
  const inner = new HashingEmbedder({ dimensions });
  let open: () => void = () => {};
  let gate = new Promise<void>((r) => {
    open = r;
  });
  return {
    modelId: inner.modelId,
    dimensions: inner.dimensions,
    calls: 0,
    async embed(texts) {
      this.calls++;
      await gate;
      return inner.embed(texts);
    },
    release() {
      open();
      gate = Promise.resolve();
    },
  };
}

describe('EmbeddedPipeline', () => {
  it('embeds into a space it was retargeted to during a pass, with no further write to wake it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-pipeline-'));
    dirs.push(dir);
    const store = new MemoryStore({ path: join(dir, 'cairn.db') });
    const old = held(32);
    const next = new HashingEmbedder({ dimensions: 16 });
    const oldSpace = embeddingSpaceOf(old);
    const nextSpace = embeddingSpaceOf(next);
    store.spaces.ensureSpace(oldSpace, { embedder: 'hash:32' });
    store.spaces.ensureSpace(nextSpace, { embedder: 'hash:16' });
    const pipeline = new EmbeddedPipeline(store, store.embeddings, { apply: () => {} }, old, oldSpace);
    pipeline.ingest(
      Array.from({ length: 10 }, (_, i) => ({ namespace: 'ns', id: `m${i}`, text: `note ${i}` })),
    );
    await eventually(() => old.calls === 1);
    // The switch lands while the pass in the old space waits for its embedder.
    pipeline.retarget(next, nextSpace);
    old.release();
    await eventually(() => !pipeline.status.running);
    expect(store.embeddings.count(oldSpace.id, 'ns')).toBe(10);
    expect(store.embeddings.count(nextSpace.id, 'ns')).toBe(10);
    await pipeline.close();
    store.close();
  });
});
