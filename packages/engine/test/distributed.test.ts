import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deadLetters, queueCounts } from '@cairn/pipeline/distributed';
import { describe, expect, it } from 'vitest';
import { eventually, memories, useDeployment } from './distributed-helpers.js';

const deployments = useDeployment();

describe('distributed pipeline through a real Redis', () => {
  it('ingests through capture → embed → index queues and serves hybrid searches from a reader', async () => {
    const d = await deployments.create();
    const host = await d.workers();
    const { producer, topology } = await d.producer('stored');
    const items = [...memories(150, 'team/alpha'), ...memories(50, 'team/beta')];
    const r = await producer.enqueue([...items, { namespace: 'team/alpha', text: '' }]);
    expect(r.counts.stored).toBe(200);
    expect(r.counts.rejected).toBe(1);
    expect(r.items[200]!.error?.field).toBe('text');

    const reader = await d.reader();
    await eventually(() => {
      const s = reader.stats().namespaces;
      return s['team/alpha']?.embedded === 150 && s['team/beta']?.embedded === 50;
    });
    reader.refresh();
    const res = await reader.search({ namespace: 'team/alpha', query: 'token42q billing', k: 3 });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]!.id).toBe('m42');
    expect(res.hits[0]!.vecRank).toBe(1);
    expect(res.hits[0]!.bm25Rank).toBe(1);
    // Tenant isolation holds through the queues: beta's memories never show up in alpha.
    const other = await reader.search({ namespace: 'team/beta', query: 'token120q', k: 10 });
    expect(other.hits.map((h) => h.id)).not.toContain('m120');

    const counts = await queueCounts(topology);
    expect(Object.keys(counts).sort()).toEqual(['capture', 'embed', 'index-0', 'index-1']);
    expect(Object.values(counts).every((c) => c.failed === 0 && c.waiting === 0)).toBe(true);
    expect(host.status.processed.capture).toBeGreaterThanOrEqual(2);
  });

  it("embeds named fields' routes through the workers, and a reader finds a memory by a field", async () => {
    const d = await deployments.create();
    await d.workers();
    const { producer } = await d.producer('stored');
    const items = memories(20, 'team/alpha').map((m, i) =>
      i % 2 === 0 ? { ...m, fields: { facts: `field${i}z quarterly forecast ${i}` } } : m,
    );
    expect((await producer.enqueue(items)).counts.stored).toBe(20);
    const reader = await d.reader();
    const routeVectors = () =>
      reader.store.db.prepare('SELECT count(*) FROM route_embeddings').pluck().get() as number;
    await eventually(() => routeVectors() === 10 && reader.stats().namespaces['team/alpha']?.embedded === 20);
    expect(reader.stats().namespaces['team/alpha']).toMatchObject({ fields: 10, fieldsEmbedded: 10 });
    reader.refresh();
    // The lexical leg off: only the field's vector route can find it.
    const res = await reader.search({
      namespace: 'team/alpha',
      query: 'field4z quarterly',
      weights: { lexical: 0 },
    });
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]!.id).toBe('m4');
    expect(res.hits[0]!.routes).toEqual(['facts']);
    const lexical = await reader.search({ namespace: 'team/alpha', query: 'field6z' });
    expect(lexical.hits[0]!.id).toBe('m6');
    expect(lexical.hits[0]!.routes).toContain('facts');
  });

  it('re-sending a batch stores nothing twice and embeds nothing twice', async () => {
    const d = await deployments.create();
    const host = await d.workers();
    const { producer } = await d.producer('stored');
    const first = await producer.enqueue(memories(100));
    const reader = await d.reader();
    await eventually(() => reader.stats().namespaces['team/alpha']?.embedded === 100);
    // The same batch has the same job id; once the first run finished it runs again, idempotently.
    const again = await producer.enqueue(memories(100));
    expect(again.jobs).toEqual(first.jobs);
    expect(again.counts.unchanged).toBe(100);
    // Re-sent in other batches (new job ids), the upsert by id still stores nothing new.
    const regrouped = await producer.enqueue(memories(100).reverse());
    expect(regrouped.counts.unchanged).toBe(100);
    expect(reader.stats().namespaces['team/alpha']?.stored).toBe(100);
    // A new value under the same ids is a new write, never swallowed by the finished job's id.
    const changed = {
      ...memories(1)[0]!,
      text: 'observation 0 changed: token0q moved to the invoices service',
    };
    expect((await producer.enqueue([changed])).counts.updated).toBe(1);
    expect((await producer.enqueue([changed])).counts.unchanged).toBe(1);
    expect(reader.get('team/alpha', ['m0']).memories[0]!.text).toBe(changed.text);
    // The same texts under new ids: stored, but their vectors come from the content-hash cache.
    await eventually(
      () => reader.stats().namespaces['team/alpha']?.pending === 0 && host.status.processed.embed >= 2,
    );
    const calls = host.status.embedderCalls;
    await producer.enqueue(memories(100).map((m) => ({ ...m, id: `copy-${m.id}` })));
    await eventually(() => reader.stats().namespaces['team/alpha']?.embedded === 200);
    await eventually(() => reader.stats().namespaces['team/alpha']?.pending === 0);
    expect(host.status.cache.hits).toBeGreaterThanOrEqual(100);
    expect(host.status.embedderCalls).toBe(calls);
  });

  it('a capture job run again after its commit (its worker died before the ack) writes nothing and reports what it stored', async () => {
    const d = await deployments.create();
    await d.workers({ stages: ['capture'] });
    const { producer, topology } = await d.producer('stored');
    const first = await producer.enqueue(memories(100));
    expect(first.counts.stored).toBe(100);
    // A later write of m0, in a job of its own.
    const changed = {
      ...memories(1)[0]!,
      text: 'observation 0 changed: token0q moved to the invoices service',
    };
    expect((await producer.enqueue([changed])).counts.updated).toBe(1);
    // The first job runs again as BullMQ retries one whose worker died between its commit and its ack.
    const job = (await topology.queue('capture').getJob(first.jobs[0]!))!;
    await job.retry('completed');
    let again: typeof job | undefined;
    await eventually(async () => {
      again = await topology.queue('capture').getJob(first.jobs[0]!);
      return (
        (await again?.getState()) === 'completed' &&
        again!.attemptsMade >= 1 &&
        again!.processedOn! > job.processedOn!
      );
    });
    expect(again!.returnvalue.counts).toMatchObject({ stored: 100, unchanged: 0 });
    // It did not put the older text back over the write made since.
    const reader = await d.reader();
    expect(reader.get('team/alpha', ['m0']).memories[0]!.text).toBe(changed.text);
    expect(reader.stats().namespaces['team/alpha']?.stored).toBe(100);
  });

  it('dead-letters a job whose payload can never succeed, with its reason, and keeps going', async () => {
    const d = await deployments.create();
    await d.workers();
    const { producer, topology } = await d.producer('stored');
    await topology.queue('capture').add('capture', { memories: 'not an array', receivedAt: 1 });
    const ok = await producer.enqueue(memories(20));
    expect(ok.counts.stored).toBe(20);
    let dead: Awaited<ReturnType<typeof deadLetters>> = [];
    await eventually(async () => {
      dead = await deadLetters(topology);
      return dead.length === 1;
    });
    expect(dead[0]!.queue).toBe('capture');
    expect(dead[0]!.reason).toMatch(/^INVALID_PAYLOAD: capture job: memories: /);
    // Unrecoverable: failed on its first attempt, not retried.
    expect(dead[0]!.attempts).toBe(1);
    const reader = await d.reader();
    await eventually(() => reader.stats().namespaces['team/alpha']?.embedded === 20);
    // An index job of a space dropped while it was in flight has nothing left to do: it completes, and is
    // no dead letter (a `dead-letters --retry` would only fail it again).
    const moot = await topology
      .queue('index', 0)
      .add('index', { space: 'dropped-model/8', shard: 0, items: [], failures: [{ key: 1, error: 'x' }] });
    await eventually(async () => (await moot.getState()) === 'completed');
    expect(await deadLetters(topology)).toHaveLength(1);
  });

  it("a delete leaves the index worker's graph file, and every process's count", async () => {
    const d = await deployments.create();
    await d.workers({ exactThreshold: 20, persistIntervalMs: 200 });
    const { producer } = await d.producer('stored');
    await producer.enqueue(memories(300, 'team/alpha'));
    const graphs = () =>
      readdirSync(join(d.dataDir, 'vectors'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.json'))
        .map((f) => JSON.parse(readFileSync(join(d.dataDir, 'vectors', f), 'utf8')) as { count: number });
    await eventually(() => graphs()[0]?.count === 300);
    const reader = await d.reader();
    // Ten deletes (3% of the graph) from another process: the worker hears of them on its next save.
    for (let i = 0; i < 10; i++) expect(reader.delete('team/alpha', `m${i}`)).toBe(true);
    await eventually(() => graphs()[0]?.count === 290);
    await eventually(() => reader.stats().namespaces['team/alpha']?.indexed === 290);
    expect(reader.stats().namespaces['team/alpha']).toMatchObject({ stored: 290, embedded: 290 });
  });

  it('shares the index shards fairly between workers, and hands them back when one leaves', async () => {
    const d = await deployments.create();
    const a = await d.workers();
    await eventually(() => a.status.shards.length === d.shards);
    const b = await d.workers();
    // b announces itself; a hands one shard over (after its writer is idle) and b takes it.
    await eventually(() => a.status.shards.length === 1 && b.status.shards.length === 1);
    expect(new Set([...a.status.shards, ...b.status.shards]).size).toBe(d.shards);
    const { producer } = await d.producer('stored');
    await producer.enqueue([
      ...memories(40, 'team/alpha'),
      ...memories(40, 'team/beta'),
      ...memories(40, 'team/gamma'),
    ]);
    const reader = await d.reader();
    await eventually(() => Object.values(reader.stats().namespaces).every((s) => s.embedded === 40));
    await b.close(2_000);
    await eventually(() => a.status.shards.length === d.shards);
  });
});
