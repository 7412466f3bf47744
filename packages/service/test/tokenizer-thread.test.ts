import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnEngine } from '@cairn/engine';
import {
  countTokens,
  renderRecord,
  searchResponseOut,
  TokenizerThread,
  tokenCountKnown,
  tokenizerLoaded,
} from '@cairn/service';
import { TokenizerThread as EarlyEntry } from '@cairn/service/tokenizer-thread';
import { countTokens as o200k } from 'gpt-tokenizer';
import { afterEach, describe, expect, it } from 'vitest';

// Each test file runs in a fresh module graph, so the tables start unloaded on this thread.
describe('TokenizerThread', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  /** A one-shot engine (no upkeep) on a fresh folder; the test closes it. */
  const openEngine = () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-tokenizer-'));
    dirs.push(dir);
    return CairnEngine.open({ dataDir: dir, waitForIndex: true, persistIntervalMs: 0, refreshIntervalMs: 0 });
  };

  it('hands the thread started early (by its own entry, as the CLI does) to the first start(), once', async () => {
    expect(EarlyEntry).toBe(TokenizerThread);
    EarlyEntry.startEarly();
    EarlyEntry.startEarly(); // a second early start keeps the first thread
    const early = TokenizerThread.start();
    const next = TokenizerThread.start();
    expect(next).not.toBe(early);
    await Promise.all([early.ready(), next.ready()]);
    expect(early.isLoaded && next.isLoaded).toBe(true);
    await Promise.all([early.close(), next.close()]);
  });

  it("counts a search answer's texts on its own thread: the answer is the same, and this thread never loads the tables", async () => {
    const engine = await openEngine();
    engine.ingest([
      { namespace: 'p', id: 'a', session: 's', text: 'the deploy script failed: redis timeout after 30 s' },
      {
        namespace: 'p',
        id: 'b',
        session: 's',
        title: 'Staging',
        text: 'staging deploys run every night ✨ with a 中文 note',
      },
      { namespace: 'p', id: 'c', session: 's', text: 'a'.repeat(300) },
      // A special token's spelling is text like any other: the tokenizer's default threw on it.
      { namespace: 'p', id: 'd', session: 's', text: 'the deploy log ends with <|endoftext|> and staging' },
    ]);
    await engine.drain();
    const res = await engine.search({
      namespace: 'p',
      query: 'deploy staging redis aaaa',
      k: 10,
      neighbors: 1,
    });
    expect(res.hits.map((h) => h.id)).toContain('d');
    expect(
      res.hits.some((h) => (h.neighbors?.before.length ?? 0) + (h.neighbors?.after.length ?? 0) > 0),
    ).toBe(true);

    const thread = new TokenizerThread();
    await thread.primeSearch(res);
    const primed = searchResponseOut(res, { explain: 'none', max_tokens: 10_000 });
    expect(tokenizerLoaded()).toBe(false);
    await thread.close();

    // The thread's counts are the tokenizer's own: each hit's record counted afresh (the package itself,
    // past this module's cache, which now holds the primed counts).
    for (const h of res.hits)
      expect(countTokens(renderRecord(h))).toBe(o200k(renderRecord(h), { disallowedSpecial: new Set() }));
    expect(tokenizerLoaded()).toBe(false);
    expect(searchResponseOut(res, { explain: 'none', max_tokens: 10_000 })).toEqual(primed);
    expect(primed.tokens.used).toBeGreaterThan(0);
    await engine.close();
  });

  it("a count known when a search's prime starts is still there when the answer is built, though other searches' counts filled the cache meanwhile", async () => {
    const engine = await openEngine();
    engine.ingest([
      {
        namespace: 'p',
        id: 'old',
        session: 's',
        text: 'the nightly backup of the billing database finished',
      },
      { namespace: 'p', id: 'new', session: 's', text: 'the billing database backup now runs at noon' },
    ]);
    await engine.drain();
    const res = await engine.search({ namespace: 'p', query: 'billing database backup', k: 10 });
    expect(res.hits.map((h) => h.id).sort()).toEqual(['new', 'old']);
    const old = res.hits.find((h) => h.id === 'old')!;

    const thread = new TokenizerThread();
    // An earlier search counted the first hit; then other searches' hits filled most of the cache
    // (about 4 MB of text), leaving this hit's counts the oldest.
    await thread.primeTimeline([old]);
    const filler = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => `${from + i} ${'the deploy ran at night '.repeat(1_666)}`);
    await thread.prime(filler(0, 90));
    // This search's prime finds the first hit counted and sends the second to the thread; another
    // search's counts (0.8 MB) arrive before it ends and push the oldest out of the cache.
    const primed = thread.primeSearch(res);
    const other = thread.prime(filler(1_000, 20));
    await Promise.all([primed, other]);
    const out = searchResponseOut(res, { explain: 'none', max_tokens: 10_000 });
    // The answer was built from counts alone: this thread never loaded the tables (it did, 0.4 s on a
    // serving thread, when the prime left the known count oldest).
    expect(tokenizerLoaded()).toBe(false);
    expect(out.hits).toHaveLength(2);
    await thread.close();
    await engine.close();
  });

  it('ready() settles once the thread has loaded its tables (a server listens after it), and at once once closed', async () => {
    const thread = new TokenizerThread();
    expect(thread.isLoaded).toBe(false);
    await thread.ready();
    expect(thread.isLoaded).toBe(true);
    // Loaded: a prime is answered by the thread, and this thread still has not loaded the tables.
    const text = 'a text a search would count, and its index line too';
    expect(tokenCountKnown(text)).toBe(false);
    await thread.prime([text]);
    expect(tokenCountKnown(text)).toBe(true);
    expect(tokenizerLoaded()).toBe(false);
    await thread.close();
    await thread.ready();
  });

  it('priming a closed thread returns at once, and the count is made here', async () => {
    const thread = new TokenizerThread();
    await thread.close();
    // Closed right after it started, it was let finish its load first: a thread terminated while it
    // loads modules can take the process down.
    expect(thread.isLoaded).toBe(true);
    await thread.prime(['nothing comes back from a closed thread']);
    expect(countTokens('nothing comes back from a closed thread')).toBe(7);
    // Counted as the text it is: "ends", " with", " <|", "endo", "ft", "ext", "|", ">" and the like, not one special token.
    expect(countTokens('ends with <|endoftext|>')).toBe(9);
  });
});
