import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import {
  indexLine,
  MemoryService,
  NamespaceAccess,
  renderRecord,
  TokenizerThread,
  tokenizerLoaded,
} from '@cairn/service';
import { countTokens as o200k } from 'gpt-tokenizer';
import { afterEach, describe, expect, it } from 'vitest';

// A fresh module graph per test file: the tables start unloaded on this thread.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
describe('MemoryService with a TokenizerThread', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('answers searches with the tokenizer’s own counts, made on the thread, none on the serving thread', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-service-tokens-'));
    dirs.push(dir);
    const engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true, persistIntervalMs: 0 });
    const tokenizer = new TokenizerThread();
    try {
      engine.ingest(
        Array.from({ length: 30 }, (_, i) => ({
          namespace: 'p',
          id: `m${i}`,
          session: `s${i % 3}`,
          text: `deploy ${i % 2 ? 'staging' : 'production'} run ${i}: redis timeout after ${i} s, rolled back ✨`,
        })),
      );
      await engine.drain();
      const api = new MemoryService({ engine, tokenizer }).scoped(NamespaceAccess.everything());
      for (const query of ['deploy staging', 'redis timeout rolled back', 'production run 7']) {
        const res = await api.search({ namespace: 'p', query, k: 5, explain: 'none' });
        expect(res.hits.length).toBeGreaterThan(0);
        // Each hit's record and index line as the tokenizer itself counts them.
        const { memories } = engine.get(
          'p',
          res.hits.map((h) => h.id),
        );
        const byId = new Map(memories.map((m) => [m.id, m]));
        for (const h of res.hits) expect(h.tokens).toBe(o200k(renderRecord(byId.get(h.id)!), AS_TEXT));
        expect(res.tokens.used).toBe(res.hits.reduce((n, h) => n + o200k(indexLine(h), AS_TEXT), 0));
      }
      // Timelines, full records and federated searches count on the thread too (each loaded the tables
      // here, 0.4 s of a server's serving thread, the first time one was asked for).
      const line = await api.timeline({ namespace: 'p', anchor: 'm11', before: 3, after: 3 });
      expect(line.before.length + line.after.length).toBe(6);
      expect(line.tokens.used).toBe(
        [line.anchor, ...line.before, ...line.after].reduce((n, e) => n + o200k(indexLine(e), AS_TEXT), 0),
      );
      const got = await api.get({ namespace: 'p', ids: ['m20', 'm21'] });
      expect(got.memories.map((m) => m.tokens)).toEqual(
        got.memories.map((m) => o200k(renderRecord(m), AS_TEXT)),
      );
      const fed = await api.searchFederated({ namespaces: ['p'], query: 'rolled back redis', k: 4 });
      expect(fed.hits.length).toBe(4);
      expect(fed.tokens.used).toBe(fed.hits.reduce((n, h) => n + o200k(indexLine(h), AS_TEXT), 0));
      expect(tokenizerLoaded()).toBe(false);
    } finally {
      await tokenizer.close();
      await engine.close();
    }
  });

  it('quotes in search and timeline entries what memories/get charges for a record with named fields', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-service-tokens-'));
    dirs.push(dir);
    const engine = await CairnEngine.open({ dataDir: dir, waitForIndex: true, persistIntervalMs: 0 });
    const tokenizer = new TokenizerThread();
    try {
      engine.ingest([
        {
          namespace: 'f',
          id: 'turn',
          session: 's',
          text: 'we chose the pelican release train',
          fields: {
            facts: 'the release train is named pelican; it leaves every second Tuesday from the main branch',
            user: 'I want the pelican train to skip the holidays, and a dry run the day before each release',
          },
        },
        { namespace: 'f', id: 'plain', session: 's', text: 'pelican is also a bird' },
      ]);
      await engine.drain();
      const api = new MemoryService({ engine, tokenizer }).scoped(NamespaceAccess.everything());
      const got = await api.get({ namespace: 'f', ids: ['turn', 'plain'] });
      const cost = new Map(got.memories.map((m) => [m.id, m.tokens]));
      expect(cost.get('turn')).toBeGreaterThan(o200k(renderRecord(got.memories[0]!), AS_TEXT));

      const res = await api.search({ namespace: 'f', query: 'pelican', k: 5 });
      expect(res.hits.map((h) => [h.id, h.tokens]).sort()).toEqual([...cost].sort());
      const line = await api.timeline({ namespace: 'f', anchor: 'turn', before: 1, after: 1 });
      expect([line.anchor, ...line.after].map((e) => [e.id, e.tokens]).sort()).toEqual([...cost].sort());
      const fed = await api.searchFederated({ namespaces: ['f'], query: 'pelican', k: 5 });
      expect(fed.hits.map((h) => [h.id, h.tokens]).sort()).toEqual([...cost].sort());
      // The fields were counted on the thread, as the rest.
      expect(tokenizerLoaded()).toBe(false);
    } finally {
      await tokenizer.close();
      await engine.close();
    }
  });
});
