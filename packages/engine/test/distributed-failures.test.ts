import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CairnError } from '@cairn/core';
import { startFakeOllama } from '@cairn/embed/testing';
import { CaptureProducer } from '@cairn/pipeline/distributed';
import { describe, expect, it } from 'vitest';
import type { CairnEngine } from '../src/index.js';
import { eventually, memories, useDeployment } from './distributed-helpers.js';

const deployments = useDeployment();
const CHILD = fileURLToPath(new URL('./stage-worker-child.mjs', import.meta.url));

/** Starts a worker process; resolves once it reports ready, with a live view of its processed counts. */
function startChild(d: { dataDir: string; redis: { url: string }; prefix: string; shards: number }) {
  const child: ChildProcess = spawn(
    process.execPath,
    [CHILD, d.dataDir, d.redis.url, d.prefix, String(d.shards)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const state = { processed: { capture: 0, embed: 0, index: 0 }, lines: [] as string[] };
  let buf = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        if (l === 'ready') resolve();
        else if (l.startsWith('processed ')) state.processed = JSON.parse(l.slice(10));
        else state.lines.push(l);
      }
    });
    child.on('exit', (code) => reject(new Error(`worker exited early (${code})`)));
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return { child, state, ready, exited };
}

/** Every memory is stored once, has one vector, is in the index once, and is found exactly once. */
async function expectExactlyOnce(reader: CairnEngine, namespace: string, n: number): Promise<void> {
  await eventually(() => {
    const s = reader.stats().namespaces[namespace];
    return s?.stored === n && s.embedded === n && s.pending === 0;
  });
  const db = reader.store.db;
  const rows = db
    .prepare('SELECT count(*) AS n, count(DISTINCT id) AS d FROM memories WHERE namespace = ?')
    .get(namespace) as { n: number; d: number };
  expect(rows).toEqual({ n, d: n });
  const vecs = db.prepare('SELECT count(*) AS n FROM embeddings WHERE namespace = ?').get(namespace) as {
    n: number;
  };
  expect(vecs.n).toBe(n);
  await eventually(async () => {
    reader.refresh();
    await reader.vectors!.warm(namespace);
    return reader.stats().namespaces[namespace]?.indexed === n;
  });
  // An even sample of all of them, by the vector leg alone: an index that lost vectors fails here.
  const step = Math.max(1, Math.floor(n / 40));
  for (let i = 0; i < n; i += step) {
    const res = await reader.search({
      namespace,
      query: `token${i}q`,
      k: 10,
      weights: { lexical: 0, vector: 1 },
    });
    expect(res.degraded).toEqual([]);
    expect(res.hits.filter((h) => h.id === `m${i}`)).toHaveLength(1);
    expect(new Set(res.hits.map((h) => h.id)).size).toBe(res.hits.length);
  }
}

describe('distributed pipeline under failure', () => {
  it('loses and duplicates nothing when a worker is SIGKILLed in the middle of a batch', async () => {
    const d = await deployments.create();
    const a = startChild(d);
    await a.ready;
    const { producer } = await d.producer('queued');
    const N = 3_000;
    const queued = await producer.enqueue(memories(N));
    expect(queued.counts.queued).toBe(N);
    const reader = await d.reader();
    await eventually(() => a.state.processed.capture >= 3 && a.state.processed.index >= 1);
    a.child.kill('SIGKILL');
    await a.exited;
    // Killed mid-way: part of the work done, the rest still queued or held by the dead worker.
    const atKill = reader.stats().namespaces['team/alpha'];
    expect(atKill?.embedded ?? 0).toBeGreaterThan(0);
    expect(atKill?.embedded ?? 0).toBeLessThan(N);
    // A second worker takes over: stalled jobs are retried, the dead worker's shard leases expire.
    const b = startChild(d);
    await b.ready;
    await expectExactlyOnce(reader, 'team/alpha', N);
    b.child.kill('SIGTERM');
    await b.exited;
    expect(b.state.lines).toContain('closed true');
  });

  it('loses and duplicates nothing when Redis restarts in the middle of an ingest', async () => {
    const d = await deployments.create({ appendonly: true });
    const host = await d.workers();
    const { producer } = await d.producer('queued');
    await producer.enqueue(memories(1_500));
    const reader = await d.reader();
    await eventually(() => host.status.processed.capture >= 2);
    await d.redis.stop('SIGTERM');
    expect(reader.stats().namespaces['team/alpha']?.embedded ?? 0).toBeLessThan(1_500);
    await d.redis.start();
    // The producer's next call may race the reconnect; a client retries, and ids make that safe.
    await eventually(async () => {
      try {
        await producer.enqueue(memories(1_500, 'team/alpha', 1_500));
        return true;
      } catch {
        return false;
      }
    }, 200);
    await expectExactlyOnce(reader, 'team/alpha', 3_000);
  });

  it('rebuilds lost queue state from SQLite when Redis dies and comes back empty', async () => {
    const d = await deployments.create({ appendonly: false });
    // Only capture runs at first, so every embed job is still in Redis when it dies.
    const capture = await d.workers({ stages: ['capture'] });
    const { producer, topology } = await d.producer('stored');
    const r = await producer.enqueue(memories(1_000));
    expect(r.counts.stored).toBe(1_000);
    expect(await topology.queue('embed').getWaitingCount()).toBeGreaterThan(0);
    await d.redis.stop('SIGKILL');
    await d.redis.start();
    // Redis came back with nothing: the completed capture job's record is gone. (Its embed jobs are gone
    // too, though the capture worker's reconcile sweep may already be re-adding them.)
    let job: unknown = null;
    await eventually(async () => {
      job = await topology
        .queue('capture')
        .getJob(r.jobs[0]!)
        .catch(() => null);
      return job !== null;
    }, 100);
    expect(job).toBeUndefined();
    await d.workers({ stages: ['embed', 'index'] });
    const reader = await d.reader();
    expect(reader.stats().namespaces['team/alpha']?.embedded).toBe(0);
    // The reconcile sweep finds stored memories without vectors and enqueues them again.
    await expectExactlyOnce(reader, 'team/alpha', 1_000);
    expect(capture.status.lastReconcile).not.toBeNull();
  });

  it('a producer waiting for "stored" enqueues again a capture job that vanished (FLUSHALL): stored once, no hang', async () => {
    const d = await deployments.create({ appendonly: false });
    const { producer, topology } = await d.producer('stored');
    // No capture worker yet: the three jobs wait in Redis, and Redis loses them.
    const waiting = producer.enqueue(memories(300));
    await eventually(async () => (await topology.queue('capture').getWaitingCount()) === 3, 50);
    await topology.connection.flushall();
    expect(await topology.queue('capture').getWaitingCount()).toBe(0);
    await d.workers();
    const r = await waiting;
    expect(r.counts.stored).toBe(300);
    await expectExactlyOnce(await d.reader(), 'team/alpha', 300);
  });

  it('a producer gives up on a job that keeps vanishing with a named, retry-safe error, not a long timeout', async () => {
    const d = await deployments.create({ appendonly: false });
    const { topology } = await d.producer('stored');
    const producer = new CaptureProducer(topology, {
      wait: 'stored',
      maxRequeues: 0,
      jobCheckIntervalMs: 100,
    });
    const waiting = producer.enqueue(memories(10)).catch((e: unknown) => e);
    await eventually(async () => (await topology.queue('capture').getWaitingCount()) === 1, 50);
    await topology.connection.flushall();
    const err = await waiting;
    await producer.close();
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('BACKEND_UNAVAILABLE');
    expect((err as CairnError).data).toMatchObject({ outcome: 'unknown', retryable: true });
    expect((err as CairnError).message).toMatch(/vanished.*retrying with the same ids is safe/);
  });

  it('waits out a dead embedder: searches degrade to lexical, then everything is indexed once it is back', async () => {
    const fake = await startFakeOllama();
    try {
      const env = { CAIRN_OLLAMA_URL: fake.url };
      const d = await deployments.create();
      const host = await d.workers({ embedderSpec: 'ollama:nomic-embed-text', env });
      const reader = await d.reader(env);
      expect(reader.space?.id).toBe('ollama/nomic-embed-text/64');
      fake.setMode('down');
      const { producer } = await d.producer('stored');
      const r = await producer.enqueue(memories(300));
      expect(r.counts.stored).toBe(300);
      await eventually(() => host.status.failed.embed >= 2);
      const during = await reader.search({ namespace: 'team/alpha', query: 'token7q billing', k: 3 });
      expect(during.degraded).toEqual(['vector']);
      expect(during.hits[0]!.id).toBe('m7');
      expect(reader.stats().namespaces['team/alpha']?.pending).toBe(300);
      fake.setMode('up');
      await expectExactlyOnce(reader, 'team/alpha', 300);
      const after = await reader.search({ namespace: 'team/alpha', query: 'token7q billing', k: 3 });
      expect(after.degraded).toEqual([]);
      expect(after.hits[0]!.vecRank).not.toBeNull();
    } finally {
      await fake.close();
    }
  });
});
