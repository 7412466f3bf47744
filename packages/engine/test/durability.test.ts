import { spawn } from 'node:child_process';
import { existsSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useEngines } from './helpers.js';

const engines = useEngines();
const WRITER = fileURLToPath(new URL('./crash-writer.mjs', import.meta.url));

/** Runs the writer until it has acknowledged `acks` batches, then SIGKILLs it. Returns the acknowledged batches. */
function runAndKill(dataDir: string, acks: number, exactThreshold: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER, dataDir, String(exactThreshold)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const acked: number[] = [];
    let buf = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) if (l.startsWith('ack ')) acked.push(Number(l.slice(4)));
      if (acked.length >= acks && !child.killed) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) =>
      signal === 'SIGKILL'
        ? resolve(acked)
        : reject(new Error(`writer exited without being killed (${signal})`)),
    );
  });
}

describe('durability', () => {
  it.each([
    ['exact vectors', 1_000_000],
    ['HNSW vectors saved every 20 ms', 50],
  ])('keeps every acknowledged memory after kill -9 of the writer (%s)', async (_label, exactThreshold) => {
    const dir = engines.tempDir();
    const acked = await runAndKill(dir, 15, exactThreshold);
    expect(acked.length).toBeGreaterThanOrEqual(15);
    const engine = await engines.open({ exactThreshold }, dir);
    const ids = acked.flatMap((b) => Array.from({ length: 200 }, (_, i) => `b${b}-${i}`));
    const got = engine.get('crash', ids);
    expect(got.missing).toEqual([]);
    // Durable means searchable: lexically at once, by vector once the resumed pipeline catches up.
    const last = acked.at(-1)!;
    const lexical = await engine.search({
      namespace: 'crash',
      query: `token${last}x7`,
      weights: { vector: 0 },
    });
    expect(lexical.hits[0]?.id).toBe(`b${last}-7`);
    await engine.drain();
    const stats = engine.stats().namespaces.crash!;
    expect(stats.pending).toBe(0);
    expect(stats.embedded).toBe(stats.stored);
    const vector = await engine.search({
      namespace: 'crash',
      query: `token${last}x7`,
      weights: { lexical: 0 },
    });
    expect(vector.degraded).toEqual([]);
    expect(vector.hits[0]?.id).toBe(`b${last}-7`);
    // Derived state converged too: the index holds every vector, and an even sample of all the
    // acknowledged memories is each found first by its unique token through the vector leg alone.
    await engine.vectors!.warm('crash');
    expect(engine.stats().namespaces.crash!.indexed).toBe(stats.stored);
    const step = Math.max(1, Math.floor(ids.length / 60));
    const missed: string[] = [];
    for (let i = 0; i < ids.length; i += step) {
      const [b, n] = ids[i]!.slice(1).split('-');
      const res = await engine.search({
        namespace: 'crash',
        query: `token${b}x${n}`,
        weights: { lexical: 0 },
      });
      if (res.hits[0]?.id !== ids[i]) missed.push(ids[i]!);
    }
    expect(missed).toEqual([]);
    // Nothing is stored twice: every id appears once.
    expect(new Set(got.memories.map((m) => m.id)).size).toBe(ids.length);
    // The named fields too: every acknowledged one is stored, and after the drain each has its route vector.
    const final = engine.stats().namespaces.crash!;
    expect(final.fields).toBeGreaterThanOrEqual(acked.length * 50);
    expect(final.fieldsEmbedded).toBe(final.fields);
    const byField = await engine.search({ namespace: 'crash', query: `field${last}y8` });
    expect(byField.hits[0]).toMatchObject({ id: `b${last}-8`, routes: ['facts'] });
  });

  it('recovers from a WAL cut short (a torn write): whole transactions survive, the rest is gone, nothing is half-written', async () => {
    const dir = engines.tempDir();
    const acked = await runAndKill(dir, 12, 1_000_000);
    const wal = join(dir, 'cairn.db-wal');
    expect(existsSync(wal)).toBe(true);
    // Cut the WAL in the middle of a frame, as a crash in the middle of a write could leave it.
    truncateSync(wal, Math.floor(statSync(wal).size * 0.6) - 100);
    const engine = await engines.open({ refreshIntervalMs: 1_000 }, dir);
    await new Promise<void>((resolve) => {
      const poll = () =>
        ['ok', 'damaged'].includes(engine.health.status.state) ? resolve() : setTimeout(poll, 50);
      poll();
    });
    expect(engine.health.status.state).toBe('ok');
    // Every batch is a transaction: each one is there whole or not at all, and the ones that are there
    // form a prefix (a WAL is replayed in order, up to the first torn frame).
    const present = acked.map(
      (b) =>
        engine.get(
          'crash',
          Array.from({ length: 200 }, (_, i) => `b${b}-${i}`),
        ).memories.length,
    );
    expect(present.every((n) => n === 0 || n === 200)).toBe(true);
    const kept = present.filter((n) => n === 200).length;
    expect(present.slice(0, kept).every((n) => n === 200)).toBe(true);
    expect(kept).toBeGreaterThan(0);
    // What is there is searchable and consistent: every kept memory embedded and indexed once.
    await engine.drain();
    const stats = engine.stats().namespaces.crash!;
    expect(stats.stored).toBeGreaterThanOrEqual(kept * 200);
    expect(stats.embedded).toBe(stats.stored);
    await engine.vectors!.warm('crash');
    expect(engine.stats().namespaces.crash!.indexed).toBe(stats.stored);
    const res = await engine.search({
      namespace: 'crash',
      query: `token${kept - 1}x3`,
      weights: { lexical: 0 },
    });
    expect(res.hits[0]?.id).toBe(`b${kept - 1}-3`);
  });
});
