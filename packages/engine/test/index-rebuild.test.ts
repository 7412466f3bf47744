import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();

function indexFiles(dataDir: string): string[] {
  const root = join(dataDir, 'vectors');
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.usearch'))
    .map((f) => join(root, f));
}

describe('vector index rebuild', () => {
  it('drain() after a bulk ingest saves every index, so a fresh process serves its first query from the file', async () => {
    const dir = engines.tempDir();
    const first = await engines.open({ exactThreshold: 20 }, dir);
    first.ingest(
      Array.from({ length: 300 }, (_, i) => ({ namespace: 'bulk', id: `m${i}`, text: `note ${i} zq${i}x` })),
    );
    // Nothing searched, so nothing loaded: until drain builds it, no vector is indexed, and stats say so.
    await first.pipeline.drain();
    expect(first.stats().namespaces.bulk).toMatchObject({ embedded: 300, indexed: 0 });
    await first.drain();
    expect(first.stats().namespaces.bulk).toMatchObject({ embedded: 300, indexed: 300 });
    await first.close();
    expect(indexFiles(dir)).toHaveLength(1);
    const fresh = await engines.open({ exactThreshold: 20, waitForIndex: false }, dir);
    expect(fresh.stats().namespaces.bulk?.indexed).toBe(300);
    const res = await fresh.search({ namespace: 'bulk', query: 'zq7x', weights: { lexical: 0 } });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]?.id).toBe('m7');
  });

  it('stats count what the index serves after deletes and a pruning: indexed stays equal to embedded', async () => {
    const dir = engines.tempDir();
    const engine = await engines.open({ exactThreshold: 20 }, dir);
    engine.ingest(
      Array.from({ length: 300 }, (_, i) => ({ namespace: 'bulk', id: `m${i}`, text: `note ${i} zq${i}x` })),
    );
    await engine.drain();
    for (const id of ['m1', 'm2', 'm3']) expect(engine.delete('bulk', id)).toBe(true);
    const pruned = await engine.prune({
      namespace: 'bulk',
      kind: 'observation',
      cap: 290,
      minAgeMs: 0,
      minAccess: null,
    });
    expect(pruned.pruned.length).toBe(7);
    expect(engine.stats().namespaces.bulk).toMatchObject({ stored: 290, embedded: 290, indexed: 290 });
    // The saved file drops them too: a fresh process counts and serves the same.
    await engine.close();
    const fresh = await engines.open({ exactThreshold: 20, waitForIndex: false }, dir);
    expect(fresh.stats().namespaces.bulk).toMatchObject({ embedded: 290, indexed: 290 });
  });

  it('a memory deleted by a process that never loaded its index is not counted or served by the next one', async () => {
    const dir = engines.tempDir();
    const first = await engines.open({ exactThreshold: 20 }, dir);
    first.ingest(
      Array.from({ length: 300 }, (_, i) => ({ namespace: 'bulk', id: `m${i}`, text: `note ${i} zq${i}x` })),
    );
    await first.drain();
    await first.close();
    // `cairn delete` with no server: a one-shot process deletes and exits without loading the index.
    const oneShot = await engines.open({ exactThreshold: 20, waitForIndex: false }, dir);
    expect(oneShot.delete('bulk', 'm7')).toBe(true);
    await oneShot.close();
    const fresh = await engines.open({ exactThreshold: 20, waitForIndex: false }, dir);
    expect(fresh.stats().namespaces.bulk).toMatchObject({ stored: 299, embedded: 299, indexed: 299 });
    const res = await fresh.search({ namespace: 'bulk', query: 'zq7x', weights: { lexical: 0 } });
    expect(res.hits.map((h) => h.id)).not.toContain('m7');
    expect(fresh.stats().namespaces.bulk).toMatchObject({ embedded: 299, indexed: 299 });
  });

  it('serves lexical-only, flagged degraded, while a lost index is rebuilt off-thread, then serves hybrid', async () => {
    const dir = engines.tempDir();
    const first = await engines.open({ exactThreshold: 20 }, dir);
    first.ingest(
      Array.from({ length: 300 }, (_, i) => ({
        namespace: 'big',
        id: `m${i}`,
        text: `note ${i} about topic${i % 17}`,
      })),
    );
    await first.drain();
    await first.search({ namespace: 'big', query: 'topic3' });
    await first.close();
    const files = indexFiles(dir);
    expect(files).toHaveLength(1);
    rmSync(files[0]!);

    const logs: string[] = [];
    const engine = await engines.open(
      {
        exactThreshold: 20,
        waitForIndex: false,
        log: (_l, msg, data) => logs.push(`${msg} ${JSON.stringify(data)}`),
      },
      dir,
    );
    const during = await engine.search({ namespace: 'big', query: 'topic3' });
    expect(during.degraded).toEqual(['vector']);
    expect(during.explain.degradedReasons.vector).toMatch(/being built/);
    expect(during.hits.length).toBeGreaterThan(0);
    // Memories written while the graph is rebuilt must reach the index too.
    engine.ingest(
      Array.from({ length: 40 }, (_, i) => ({
        namespace: 'big',
        id: `late${i}`,
        text: `late note ${i} marker${i}`,
      })),
    );
    await engine.pipeline.drain();
    await engine.vectors!.warm('big');
    const after = await engine.search({ namespace: 'big', query: 'topic3' });
    expect(after.degraded).toEqual([]);
    expect(engine.stats().namespaces.big).toMatchObject({ stored: 340, embedded: 340, indexed: 340 });
    const late = await engine.search({ namespace: 'big', query: 'marker17', weights: { lexical: 0 } });
    expect(late.hits[0]?.id).toBe('late17');
    expect(logs.some((l) => l.includes('rebuilding vector index') && l.includes('index file missing'))).toBe(
      true,
    );
  });

  it('rebuilds a corrupt index file from the embeddings kept in SQLite', async () => {
    const dir = engines.tempDir();
    const first = await engines.open({ exactThreshold: 20 }, dir);
    first.ingest(
      Array.from({ length: 100 }, (_, i) => ({
        namespace: 'big',
        id: `m${i}`,
        text: `entry ${i} subject${i}`,
      })),
    );
    await first.drain();
    await first.search({ namespace: 'big', query: 'subject1' });
    await first.close();
    writeFileSync(indexFiles(dir)[0]!, 'not an index');
    const logs: string[] = [];
    const engine = await engines.open(
      { exactThreshold: 20, log: (_l, msg, data) => logs.push(`${msg} ${JSON.stringify(data)}`) },
      dir,
    );
    const res = await engine.search({ namespace: 'big', query: 'subject42', weights: { lexical: 0 } });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]?.id).toBe('m42');
    expect(logs.some((l) => l.includes('rebuilding vector index'))).toBe(true);
  });
});
