import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_INPUT_LIMITS } from '@cairn/core';
import { MemoryStore } from '@cairn/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function cairn(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data'), ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function file(name: string, lines: unknown[]): string {
  const p = join(dir, name);
  writeFileSync(p, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'));
  return p;
}

const memories = [
  {
    namespace: 'proj',
    id: 'a1',
    kind: 'observation',
    session: 's1',
    ts: '2025-01-01T10:00:00Z',
    text: 'parseConfig drops unknown keys silently',
  },
  {
    namespace: 'proj',
    id: 'a2',
    kind: 'turn',
    session: 's1',
    ts: '2025-01-01T10:05:00Z',
    text: 'user asked to fix the redis timeout',
  },
  {
    namespace: 'proj',
    id: 'a3',
    kind: 'fact',
    session: 's1',
    ts: '2025-01-01T10:10:00Z',
    text: 'redis runs with appendonly yes',
    tags: ['infra'],
  },
  { namespace: 'other', id: 'b1', text: 'redis in another tenant' },
];

describe('cairn ingest', () => {
  it('exits with the error when a write fails mid-file with the progress bar on, keeping the batches before it', () => {
    const data = join(dir, 'data');
    expect(cairn(['ingest', file('first.jsonl', [memories[3]])]).code).toBe(0);
    // A failure the store cannot turn into a rejected line, as a full disk or a damaged file would be:
    // injected with a trigger on the real database.
    const store = new MemoryStore({ path: join(data, 'cairn.db') });
    store.db.exec(
      `CREATE TRIGGER inject_failure BEFORE INSERT ON memories WHEN NEW.text = 'boom'
         BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    );
    store.close();
    const p = file('in.jsonl', [
      memories[0],
      memories[1],
      memories[2],
      { namespace: 'proj', id: 'boom', text: 'boom' },
      { namespace: 'proj', id: 'after', text: 'after the failure' },
    ]);
    const r = spawnSync(process.execPath, [MAIN, 'ingest', p, '--progress', '--batch-size', '2'], {
      encoding: 'utf8',
      env: { ...process.env, CAIRN_DATA_DIR: data },
      // Before the fix the bar's timer kept the process alive for good after printing the error.
      timeout: 60_000,
    });
    expect(r.signal).toBeNull();
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/injected failure/);
    const got = JSON.parse(cairn(['get', 'a1', 'a2', 'a3', 'after', '-n', 'proj', '--json']).stdout);
    // The first batch was stored; the failed batch (a3 and the line that failed) left nothing half-written.
    expect(got.memories.map((m: { id: string }) => m.id).sort()).toEqual(['a1', 'a2']);
  });

  it('shows the wait for vectors and saved indexes after the last line, ending with all of them in', () => {
    const many = Array.from({ length: 40 }, (_, i) => ({
      namespace: 'proj',
      id: `m${i}`,
      text: `memory number ${i}`,
    }));
    const r = cairn(['ingest', file('many.jsonl', [...memories, ...many]), '--progress']);
    expect(r.code).toBe(0);
    // The index bar's last frame: every memory that needs a vector has one, and none waits for a merge.
    const frames = r.stderr.split(/[\r\n]+/).filter((l) => l.startsWith('index'));
    expect(frames.at(-1)).toMatch(/100% \| 44\/44 embedded \| 0 vectors to merge/);
    expect(r.stdout).toMatch(/all embedded and indexed/);
  });

  it('reports bad lines by number and reason, stores every good line, and exits 3', () => {
    const p = file('in.jsonl', [
      memories[0],
      '{not json',
      { id: 'x', text: 'no namespace' },
      '',
      { namespace: 'proj', id: 'y' },
      memories[1],
    ]);
    const r = cairn(['ingest', p, '--json']);
    expect(r.code).toBe(3);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ read: 5, stored: 2, rejected: 3 });
    expect(summary.errors.map((e: { line: number }) => e.line)).toEqual([2, 3, 5]);
    expect(summary.errors[0].message).toMatch(/malformed JSON/);
    expect(summary.errors[1]).toMatchObject({
      field: 'namespace',
      message: expect.stringMatching(/namespace is required/),
    });
    expect(summary.errors[2]).toMatchObject({ field: 'text' });
    // A batch size that is not one is named, not read as the default.
    const badBatch = cairn(['ingest', p, '--batch-size', 'lots']);
    expect(badBatch.code).toBe(2);
    expect(badBatch.stderr).toContain('--batch-size must be an integer in [1, 50000]');
    // Listed by line, though a line refused when its batch is written is known after one refused as read.
    const mixed = cairn([
      'ingest',
      file('mixed.jsonl', [{ id: 'x', text: 'no namespace' }, '{not json']),
      '--json',
    ]);
    expect(JSON.parse(mixed.stdout).errors.map((e: { line: number }) => e.line)).toEqual([1, 2]);
  });

  it('scores and saves the common words, and a fresh search process loads them and answers the same', () => {
    // 400 memories that all say "deploy": past the 300 matches from which a word is worth saving
    // (COSTLY_TERM_MATCHES; it was 2,000, when this word would have been scored again by every process).
    const lines = Array.from({ length: 400 }, (_, i) => ({
      namespace: 'proj',
      id: `d${i}`,
      text: `deploy step ${i % 7 === 0 ? 'rollback' : 'canary'} number ${i}`,
    }));
    expect(cairn(['ingest', file('many.jsonl', lines), '--json']).code).toBe(0);
    const db = () => new MemoryStore({ path: join(dir, 'data', 'cairn.db'), readonly: true });
    const before = db();
    const saved = before.db.prepare('SELECT cache_key, seq FROM term_postings').all() as Array<{
      cache_key: string;
      seq: number;
    }>;
    before.close();
    expect(saved.some((r) => r.cache_key.endsWith('"deploy"'))).toBe(true);
    const search = (args: string[] = []) =>
      JSON.parse(cairn(['search', 'deploy canary', '-n', 'proj', '--json', ...args]).stdout).hits.map(
        (h: { id: string }) => h.id,
      );
    const withSaved = search();
    // Loading, not scoring again: the saved row is the one ingest wrote.
    const after = db();
    expect(after.db.prepare('SELECT cache_key, seq FROM term_postings').all()).toEqual(
      expect.arrayContaining(saved),
    );
    after.close();
    expect(withSaved.length).toBeGreaterThan(0);
    const store = new MemoryStore({ path: join(dir, 'data', 'cairn.db') });
    store.db.exec('DELETE FROM term_postings');
    store.close();
    expect(search()).toEqual(withSaved);
  });

  it('is idempotent when the same file is ingested twice', () => {
    const p = file('in.jsonl', memories);
    expect(JSON.parse(cairn(['ingest', p, '--json']).stdout)).toMatchObject({ stored: 4, unchanged: 0 });
    const again = cairn(['ingest', p, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ stored: 0, updated: 0, unchanged: 4, rejected: 0 });
  });

  it('prints a human summary without --json and honours --data-dir', () => {
    const p = file('in.jsonl', memories);
    const r = cairn(['ingest', p, '--data-dir', join(dir, 'elsewhere')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/read 4, stored 4, updated 0, unchanged 0, rejected 0/);
    const stats = JSON.parse(cairn(['stats', '--json', '--data-dir', join(dir, 'elsewhere')]).stdout);
    expect(stats.namespaces.proj).toMatchObject({ stored: 3, embedded: 3, pending: 0, failed: 0 });
  });

  it('takes facts by slot and key, as the HTTP API and MCP do: the same key again replaces the value', () => {
    const p = file('facts.jsonl', [
      { namespace: 'proj', slot: 'build', key: 'test-command', text: 'npm test' },
      { namespace: 'proj', slot: 'user:home', key: 'city', text: 'Lisbon' },
      { namespace: 'proj', slot: 'user', key: 'home:city', text: 'Porto' },
      { namespace: 'proj', slot: 'build', key: 'test-command', text: 'pnpm test:all' },
      { namespace: 'proj', slot: 'build', text: 'half a fact' },
      { namespace: 'proj', slot: 'build', key: 'lint', id: 'mine', text: 'an id beside slot/key' },
    ]);
    const r = cairn(['ingest', p, '--json']);
    expect(r.code).toBe(3);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ read: 6, stored: 3, updated: 1, rejected: 2 });
    expect(summary.errors).toMatchObject([
      { line: 5, field: 'key' },
      { line: 6, field: 'id' },
    ]);
    const got = JSON.parse(
      cairn([
        'get',
        'fact:build:test-command',
        'fact::9:user:home:city',
        'fact:user:home:city',
        '-n',
        'proj',
        '--json',
      ]).stdout,
    );
    expect(got.memories.map((m: { text: string; kind: string }) => [m.text, m.kind])).toEqual([
      ['pnpm test:all', 'fact'],
      ['Lisbon', 'fact'],
      ['Porto', 'fact'],
    ]);
  });

  it('--no-embed only stores: searchable by its words at once, and the next ingest that embeds finishes the vectors', () => {
    const rows = Array.from({ length: 1500 }, (_, i) => ({
      namespace: 'p',
      id: `n${i}`,
      text: `stored only ${i} zq${i}x`,
    }));
    const r = cairn(['ingest', file('stored.jsonl', rows), '--no-embed', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ stored: 1500, embedded: false });
    const vectors = () => {
      const store = new MemoryStore({ path: join(dir, 'data', 'cairn.db') });
      try {
        return store.db.prepare('SELECT count(*) FROM embeddings').pluck().get() as number;
      } finally {
        store.close();
      }
    };
    expect(vectors()).toBe(0);
    const hit = JSON.parse(
      cairn(['search', 'zq77x', '-n', 'p', '--json', '--weights', 'lexical=1,vector=0']).stdout,
    );
    expect(hit.hits[0].id).toBe('n77');
    // An ingest of nothing waits for the backlog's vectors, as every ingest that embeds does.
    expect(JSON.parse(cairn(['ingest', file('none.jsonl', []), '--json']).stdout)).toMatchObject({
      embedded: true,
    });
    expect(vectors()).toBe(1500);
  });

  it('fails with a clear error when the file does not exist, or is a folder', () => {
    const r = cairn(['ingest', join(dir, 'missing.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot read .*missing\.jsonl: ENOENT/);
    for (const command of ['ingest', 'import']) {
      const folder = cairn([command, dir]);
      expect(folder.code, command).toBe(2);
      expect(folder.stderr).toMatch(/\[INVALID_INPUT\]: .* is a folder: give a JSONL file/);
    }
  });

  it('prints a line of binary junk with its control characters escaped, never raw to the terminal', () => {
    const p = join(dir, 'junk.jsonl');
    // ESC sequences (recolour, retitle, clear), BEL, DEL and a C1 CSI (U+009B), then a good line.
    writeFileSync(
      p,
      `\u001b[31mRED\u0007\u007f\u009b2J\n{"a":\u001b]0;pwned\u0007}\n${JSON.stringify(memories[0])}\n` +
        // Valid JSON whose refusal names what it met: an unknown field named with an escape sequence.
        `${JSON.stringify({ namespace: 'proj', text: 'x', '\u001b]0;pwned\u0007': 1 })}\n`,
    );
    const r = cairn(['ingest', p]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^line 1: malformed JSON \(.*\\u001b\[31mRED\\u0007\\u007f\\u009b2J/m);
    expect(r.stderr).toMatch(/^line 2: malformed JSON \(.*\\u001b\]0;pwned\\u0007/m);
    expect(r.stderr).toMatch(/^line 4: .*\\u001b\]0;pwned\\u0007/m);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach the terminal
    expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(r.stdout).toMatch(/stored 1/);
  });

  it('reads a file that starts with a byte-order mark', () => {
    const file = join(dir, 'bom.jsonl');
    writeFileSync(
      file,
      `\ufeff${JSON.stringify({ namespace: 'bom', id: 'b1', text: 'written by a Windows editor' })}\n`,
    );
    const r = cairn(['ingest', file, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ stored: 1, rejected: 0 });
  });
});

describe('a data folder whose open fails', () => {
  it('serve and mcp name the damage and exit, leaving no thread behind', () => {
    const many = Array.from({ length: 2_000 }, (_, i) => ({
      namespace: 'proj',
      id: `n${i}`,
      text: `note ${i}`,
    }));
    expect(cairn(['ingest', file('many.jsonl', many)]).code).toBe(0);
    const path = join(dir, 'data', 'cairn.db');
    const store = new MemoryStore({ path, readonly: true });
    const pages = store.db
      .prepare("SELECT pageno FROM dbstat WHERE name = 'memories_meta_seq'")
      .pluck()
      .all() as number[];
    store.close();
    const fd = openSync(path, 'r+');
    for (const p of pages) writeSync(fd, Buffer.alloc(4096, 0xab), 0, 4096, (p - 1) * 4096);
    closeSync(fd);
    // The engine's open reads that index; threads it had started kept both processes alive after the error.
    for (const args of [
      ['serve', '--no-auth', '--port', '0'],
      ['mcp', '--data-dir', join(dir, 'data')],
    ]) {
      const r = spawnSync(process.execPath, [MAIN, ...args], {
        encoding: 'utf8',
        env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
        input: '',
        timeout: 30_000,
      });
      expect(r.error, `${args[0]} did not exit`).toBeUndefined();
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/\[STORAGE_ERROR\]: .*cairn\.db is damaged/);
    }
  });
});

describe('cairn search', () => {
  it('exits on a usage error found after its tokenizer thread was started early', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    // `search QUERY --json` starts the thread before its command loads; the missing namespace is found
    // after that, and the thread, never taken, must not keep the process alive.
    const r = spawnSync(process.execPath, [MAIN, 'search', 'redis timeout', '--json'], {
      encoding: 'utf8',
      env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
      timeout: 20_000,
    });
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(2);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'INVALID_INPUT', field: 'namespace' });
  });

  it('prints only JSON on stdout with --json, in the HTTP shape: each hit explained under explain', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const r = cairn(['search', 'redis timeout', '--namespace', 'proj', '--json', '--decay', 'off']);
    expect(r.code).toBe(0);
    const res = JSON.parse(r.stdout);
    expect(res.hits[0].id).toBe('a2');
    expect(res).toMatchObject({
      namespace: 'proj',
      query: 'redis timeout',
      degraded: [],
      tokens: { budget: null },
    });
    for (const h of res.hits) {
      expect(h.namespace).toBe('proj');
      for (const f of ['bm25Rank', 'vecRank', 'cosine', 'recency', 'rrf', 'score'])
        expect(h.explain).toHaveProperty(f);
    }
    const bare = JSON.parse(
      cairn(['search', 'redis timeout', '-n', 'proj', '--json', '--explain', 'none']).stdout,
    );
    expect(bare.hits[0].id).toBe('a2');
    expect(bare.hits[0].explain).toBeUndefined();
  });

  it('prints a readable table by default', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const r = cairn(['search', 'parseConfig', '-n', 'proj', '--k', '2']);
    expect(r.stdout).toMatch(/bm25#/);
    expect(r.stdout).toMatch(/a1/);
  });

  it('answers a batch of queries with one JSON line each, in input order, errors included', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const q = file('q.jsonl', [
      { id: 'q1', namespace: 'proj', query: 'redis', k: 2, decay: 'off' },
      { id: 'q2', namespace: 'proj', query: 'redis', filters: { kinds: ['fact'] } },
      { id: 'q3', namespace: 'proj', query: 'x', k: 'ten' },
      { id: 'q4', namespace: 'nobody', query: 'redis' },
      '{broken',
    ]);
    const r = cairn(['search', '--queries', q, '--json']);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // Each answer names its line; a line without an id (a malformed one) has no stand-in id.
    expect(lines.map((l) => l.id)).toEqual(['q1', 'q2', 'q3', 'q4', undefined]);
    expect(lines.map((l) => l.line)).toEqual([1, 2, 3, 4, 5]);
    expect(lines[0].hits).toHaveLength(2);
    expect(lines[1].hits.map((h: { id: string }) => h.id)).toEqual(['a3']);
    expect(lines[2].error).toMatchObject({ code: 'INVALID_INPUT', field: 'k' });
    expect(lines[3].empty.reason).toBe('empty_namespace');
    expect(lines[4].error.code).toBe('INVALID_INPUT');
    expect(r.code).toBe(3);
  });

  it('over a namespace whose graph file is gone, one question is answered exactly at once; a batch rebuilds the graph', () => {
    const n = 6_000; // above the exact-search threshold (5,000): this namespace needs a graph
    const big = file(
      'big.jsonl',
      Array.from({ length: n }, (_, i) => ({
        namespace: 'proj',
        id: `k${i}`,
        text: `note ${i} on topic zq${i}x`,
      })),
    );
    expect(cairn(['ingest', big]).code).toBe(0);
    const graphs = () =>
      readdirSync(join(dir, 'data', 'vectors'), { recursive: true, encoding: 'utf8' }).filter((f) =>
        f.endsWith('.usearch'),
      );
    expect(graphs()).toHaveLength(1);
    for (const f of graphs()) rmSync(join(dir, 'data', 'vectors', f));

    const vectorOnly = ['-n', 'proj', '--json', '--weights', 'lexical=0,vector=1'];
    const one = cairn(['search', 'zq4321x', ...vectorOnly]);
    expect(one.code, one.stderr).toBe(0);
    const res = JSON.parse(one.stdout);
    expect(res.degraded).toEqual([]);
    expect(res.hits[0]).toMatchObject({ id: 'k4321', explain: { vecRank: 1 } });
    expect(graphs()).toEqual([]);

    const batch = cairn([
      'search',
      '--queries',
      file('q.jsonl', [{ id: 'q', namespace: 'proj', query: 'zq77x' }]),
      '--json',
    ]);
    expect(batch.code, batch.stderr).toBe(0);
    expect(JSON.parse(batch.stdout).hits[0].id).toBe('k77');
    expect(graphs()).toHaveLength(1);
  });

  it('answers an id-less query line by its line only, never with its line number as an id', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const q = file('q.jsonl', [
      { id: 2, namespace: 'proj', query: 'redis' },
      { namespace: 'proj', query: 'redis' },
    ]);
    const lines = cairn(['search', '--queries', q, '--json'])
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.id, l.line])).toEqual([
      [2, 1],
      [undefined, 2],
    ]);
    expect(lines[1]).not.toHaveProperty('id');
  });

  it('refuses a query argument or a per-query flag beside --queries, rather than ignoring it', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const q = file('q.jsonl', [{ id: 'q1', namespace: 'proj', query: 'redis' }]);
    for (const [extra, named] of [
      [['hello'], 'the query "hello"'],
      [['--namespace', 'proj'], '--namespace'],
      [
        ['hello', '-n', 'proj', '--tag', 'infra', '--as-of', '1d'],
        'the query "hello", --namespace, --tag and --as-of',
      ],
    ] as const) {
      const r = cairn(['search', '--queries', q, ...extra, '--json']);
      expect(r.code, extra.join(' ')).toBe(2);
      const { error } = JSON.parse(r.stdout);
      expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'queries' });
      expect(error.message).toContain(`drop ${named},`);
    }
    // --json and --data-dir are the batch's own flags.
    expect(cairn(['search', '--queries', q, '--json', '--data-dir', join(dir, 'data')]).code).toBe(0);
  });

  it('refuses a search without a namespace, naming the flag', () => {
    const r = cairn(['search', 'redis', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'INVALID_INPUT', field: 'namespace' });
  });

  it('answers a usage error or a malformed setting in the one error shape, exit 2, no stack trace', () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['frobnicate'], {}, /unknown command 'frobnicate'/],
      [['search', 'x', '-n', 'p', '--bogus'], {}, /unknown option '--bogus'/],
      [['ingest'], {}, /missing required argument 'file'/],
      [['reindex'], {}, /required option '--embedder <spec>' not specified/],
      [['stats'], { REDIS_URL: 'notaurl' }, /environment variable REDIS_URL: /],
      [['stats'], { CAIRN_PREVIOUS_SPACE_GRACE: '-1' }, /environment variable CAIRN_PREVIOUS_SPACE_GRACE: /],
      [['serve', '--no-auth', '--rate-limit', 'abc'], {}, /--rate-limit must be an integer .*, got "abc"/],
      [['serve', '--no-auth', '--rate-limit', '0'], {}, /--rate-limit must be an integer .*, got "0"/],
    ];
    for (const [args, env, message] of cases) {
      const r = cairn(args, env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^cairn: error \\[INVALID_INPUT\\]: ${message.source}`));
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    const keysFile = cairn(['serve'], { CAIRN_API_KEYS_FILE: join(dir, 'no-such-keys') });
    expect(keysFile.code).toBe(2);
    expect(keysFile.stderr).toMatch(
      /\[NOT_FOUND\]: CAIRN_API_KEYS_FILE: cannot read .*no-such-keys \(ENOENT\)/,
    );
    const json = cairn(['ingest', '--json']);
    expect(JSON.parse(json.stdout).error).toMatchObject({ code: 'INVALID_INPUT' });
    expect(cairn(['--version']).code).toBe(0);
    expect(cairn(['search', '--help']).code).toBe(0);
  });
});

describe('cairn get, timeline and stats', () => {
  it('returns full records, the timeline around one memory and per-namespace counts', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const partial = cairn(['get', 'a3', 'zz', '-n', 'proj', '--json']);
    const got = JSON.parse(partial.stdout);
    expect(got.memories[0]).toMatchObject({ id: 'a3', tags: ['infra'], kind: 'fact' });
    expect(got.missing).toEqual(['zz']);
    // Some found is partial (3), as a batch with rejected lines; none found is not found (2).
    expect(partial.code).toBe(3);
    expect(cairn(['get', 'zz', '-n', 'proj', '--json']).code).toBe(2);
    const tl = JSON.parse(
      cairn(['timeline', 'a2', '-n', 'proj', '--before', '1', '--after', '1', '--json']).stdout,
    );
    expect(tl.before.map((m: { id: string }) => m.id)).toEqual(['a1']);
    expect(tl.after.map((m: { id: string }) => m.id)).toEqual(['a3']);
    const stats = JSON.parse(cairn(['stats', '--json']).stdout);
    expect(Object.keys(stats.namespaces).sort()).toEqual(['other', 'proj']);
    expect(stats.namespaces.other).toMatchObject({ stored: 1, embedded: 1, pending: 0, failed: 0 });
    const missing = cairn(['timeline', 'a2', '-n', 'other']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no memory with id "a2" in namespace "other"/);
    // Each side's count is a whole number the API would take too, not read as 0.
    for (const bad of ['abc', '-1', '1.5', '51']) {
      const r = cairn(['timeline', 'a2', '-n', 'proj', '--before', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toMatch(/--before must be an integer in \[0, 50\]/);
    }
    expect(cairn(['timeline', 'a2', '-n', 'proj', '--after', 'x']).stderr).toMatch(/--after must be/);
  });
});

describe('cairn ingest killed with SIGKILL', () => {
  it('run again, stores every memory exactly once, embedded and indexed, in a sound database', async () => {
    const n = 12_000;
    const big = file(
      'big.jsonl',
      Array.from({ length: n }, (_, i) => ({
        namespace: 'proj',
        id: `k${i}`,
        text: `memory ${i} about topic zq${i}x`,
      })),
    );
    const child = spawn(process.execPath, [MAIN, 'ingest', big], {
      env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
      stdio: 'ignore',
    });
    // Killed part-way: after the first batches are stored, before the end.
    const dbPath = join(dir, 'data', 'cairn.db');
    for (let i = 0; i < 400 && !(existsSync(dbPath) && statSync(dbPath).size > 2_000_000); i++)
      await new Promise((r) => setTimeout(r, 25));
    // Still running: the kill lands part-way through.
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await once(child, 'exit');
    const again = cairn(['ingest', big, '--json']);
    expect(again.code).toBe(0);
    const stats = JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj;
    expect(stats).toMatchObject({ stored: n, embedded: n, indexed: n, pending: 0 });
    expect(cairn(['check', '--json']).code).toBe(0);
    const hit = JSON.parse(
      cairn(['search', 'zq7777x', '-n', 'proj', '--json', '--weights', 'lexical=0,vector=1']).stdout,
    );
    expect(hit.hits[0].id).toBe('k7777');
  });
});

describe('cairn add, list, context and --version', () => {
  it('adds from an argument and from stdin, lists newest first with filters, and builds the context pack', () => {
    const added = cairn([
      'add',
      'we deploy with blue-green switching',
      '-n',
      'proj',
      '--kind',
      'fact',
      '--json',
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ namespace: 'proj', status: 'stored' });
    const piped = spawnSync(
      process.execPath,
      [MAIN, 'add', '-n', 'proj', '--session', 's9', '--tag', 'ops'],
      {
        encoding: 'utf8',
        input: 'the staging database moved to eu-west-2\n',
        env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
      },
    );
    expect(piped.status, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/^stored m_\w+ in proj\n$/);
    expect(cairn(['add', '-n', 'proj']).code).toBe(2);

    const all = JSON.parse(cairn(['list', '-n', 'proj', '--json']).stdout) as {
      memories: Array<{ text: string }>;
    };
    expect(all.memories.map((m) => m.text)).toEqual([
      'the staging database moved to eu-west-2',
      'we deploy with blue-green switching',
    ]);
    const facts = JSON.parse(cairn(['list', '-n', 'proj', '--kind', 'fact', '--json']).stdout) as {
      memories: Array<{ kind: string }>;
    };
    expect(facts.memories.map((m) => m.kind)).toEqual(['fact']);
    const page2 = JSON.parse(
      cairn(['list', '-n', 'proj', '--limit', '1', '--offset', '1', '--json']).stdout,
    ) as {
      memories: Array<{ text: string }>;
    };
    expect(page2.memories.map((m) => m.text)).toEqual(['we deploy with blue-green switching']);
    // The API's limit on a listing's offset, refused alike (it was unbounded here).
    const deepest = DEFAULT_INPUT_LIMITS.maxListingOffset;
    expect(JSON.parse(cairn(['list', '-n', 'proj', '--offset', String(deepest), '--json']).stdout)).toEqual({
      namespace: 'proj',
      memories: [],
    });
    const tooDeep = cairn(['list', '-n', 'proj', '--offset', String(deepest + 1), '--json']);
    expect(tooDeep.code).toBe(2);
    expect(JSON.parse(tooDeep.stdout).error).toEqual({
      code: 'INVALID_INPUT',
      message: `--offset must be an integer in [0, ${deepest}], got "${deepest + 1}"`,
      field: 'offset',
    });
    expect(cairn(['list', '-n', 'other']).stdout).toContain('no memories in other');

    const pack = cairn(['context', '-n', 'proj', '-q', 'staging database', '--json']);
    expect(pack.code, pack.stderr).toBe(0);
    expect(JSON.parse(pack.stdout)).toMatchObject({
      namespace: 'proj',
      text: expect.stringContaining('eu-west-2'),
    });
    // No summaries and no question: said, where an empty line was printed.
    const empty = cairn(['context', '-n', 'proj']);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toContain('nothing to pack for proj: no summaries yet (add --query');

    const version = cairn(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('a read or a maintenance command on a mistyped --data-dir names it, exits 2 and creates nothing', () => {
    const typo = join(dir, 'no-such-folder');
    for (const args of [
      ['search', 'x', '-n', 'proj'],
      ['list', '-n', 'proj'],
      ['stats'],
      ['get', 'a1', '-n', 'proj'],
      ['compact'],
      ['reindex', '--embedder', 'hash:256'],
      ['consolidate', '--dry-run'],
    ]) {
      const r = cairn([...args, '--data-dir', typo]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(`no Cairn data folder at ${typo}`);
    }
    expect(existsSync(typo)).toBe(false);
    // A mistyped action is named as one (it was asked for a space id), before any folder is looked at.
    const frob = cairn(['spaces', 'frob', '--data-dir', typo]);
    expect(frob.code).toBe(2);
    expect(frob.stderr).toContain('unknown spaces action "frob"; use list, activate or drop');
  });

  it('refuses a bad number in every numeric flag by one parser, naming the flag and the value', () => {
    cairn(['ingest', file('in.jsonl', memories)]);
    const jsonl = file('one.jsonl', [memories[0]]);
    const redis = { REDIS_URL: 'redis://127.0.0.1:1' }; // never reached: the numbers are checked first
    const cases: Array<[string[], string, Record<string, string>?]> = [
      [['context', '-n', 'proj'], '--max-tokens'],
      [['list', '-n', 'proj'], '--limit'],
      [['list', '-n', 'proj'], '--offset'],
      [['add', 'a memory', '-n', 'proj'], '--importance'],
      [['timeline', 'a1', '-n', 'proj'], '--before'],
      [['timeline', 'a1', '-n', 'proj'], '--after'],
      [['ingest', jsonl], '--batch-size'],
      [['import', jsonl], '--batch-size'],
      [['reindex', '--embedder', 'hash:64'], '--batch-size'],
      [['reindex', '--embedder', 'hash:64'], '--stall-timeout'],
      [['consolidate', '--list', '-n', 'proj'], '--limit'],
      [['prune', '-n', 'proj', '--kind', 'turn', '--cap', '1'], '--min-access'],
      [['prune', '-n', 'proj', '--kind', 'turn'], '--cap'],
      [['serve', '--no-auth'], '--port'],
      [['serve', '--no-auth'], '--rate-limit'],
      [['serve', '--no-auth'], '--processes'],
      [['hooks', 'install'], '--max-tokens', { HOME: dir }],
      [['hooks', 'install'], '--timeout', { HOME: dir }],
      [['worker'], '--concurrency', redis],
      [['worker'], '--shutdown-timeout', redis],
      [['worker'], '--reconcile-interval', redis],
      [['worker'], '--embed-rate', redis],
      [['dead-letters'], '--limit', redis],
      ...['-k', '--pool', '--neighbors', '--rrf-k', '--context-weight', '--agent-boost', '--session-match']
        .concat(['--session-support', '--route-weight', '--mmr'])
        .map((flag): [string[], string] => [['search', 'redis', '-n', 'proj'], flag]),
    ];
    // `abc` was passed on as NaN ("got NaN"), an empty value read as 0 ("too small"), 12abc as 12 by
    // parseInt: each flag gets one of them (a process each, so not all three).
    const bads = ['abc', '', '12abc'];
    for (const [i, [args, flag, env]] of cases.entries()) {
      const bad = bads[i % bads.length]!;
      const r = cairn([...args, flag, bad], env);
      const name = flag === '-k' ? '--k' : flag;
      expect(r.code, `${args.join(' ')} ${flag} ${bad}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^cairn: error \\[INVALID_INPUT\\]: ${name} must be (an integer|a number).*, got "${bad}"\\n`,
        ),
      );
    }
    const json = JSON.parse(cairn(['context', '-n', 'proj', '--max-tokens', '', '--json']).stdout);
    expect(json.error).toEqual({
      code: 'INVALID_INPUT',
      message: '--max-tokens must be an integer in [1, 100000], got ""',
      field: 'maxTokens',
    });
    expect(cairn(['context', '-n', 'proj', '--max-tokens', '100']).code).toBe(0);
  });

  it('--explain full prints the candidate trace with each fate', () => {
    cairn(['ingest', file('m.jsonl', memories)]);
    const r = cairn(['search', 'redis timeout config', '-n', 'proj', '--explain', 'full', '-k', '1']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/candidate trace \(\d+ fused\)/);
    expect(r.stdout).toContain('below_k');
  });
});

describe('cairn export and import', () => {
  it('round-trips a namespace losing nothing: ids, times, tags, facts, fields, supersessions and tombstones', () => {
    const src = file('src.jsonl', [
      {
        namespace: 'proj',
        id: 'old',
        kind: 'fact',
        ts: '2025-01-01T10:00:00Z',
        text: 'deploys on Fridays',
        tags: ['ops'],
      },
      {
        namespace: 'proj',
        id: 'new',
        kind: 'fact',
        ts: '2025-02-01T10:00:00Z',
        text: 'deploys on Thursdays',
        supersedes: ['old'],
        importance: 0.9,
      },
      {
        namespace: 'proj',
        id: 'fact:build:cmd',
        kind: 'fact',
        ts: '2025-01-05T10:00:00Z',
        text: 'pnpm build',
        meta: { slot: 'build', key: 'cmd' },
        title: 'build command',
        fields: { why: 'turbo caches the packages' },
      },
      {
        namespace: 'proj',
        id: 'gone',
        session: 's1',
        agent: 'claude',
        ts: '2025-01-03T10:00:00Z',
        text: 'a secret to forget',
      },
      { namespace: 'other', id: 'x', text: 'another namespace stays out' },
    ]);
    expect(cairn(['ingest', src]).code).toBe(0);
    expect(cairn(['delete', 'gone', '-n', 'proj']).code).toBe(0);
    const exported = cairn(['export', '-n', 'proj']);
    expect(exported.code, exported.stderr).toBe(0);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.id)).toEqual(['old', 'gone', 'fact:build:cmd', 'new']);
    expect(lines.find((l) => l.id === 'gone')).toMatchObject({
      deleted: true,
      session: 's1',
      agent: 'claude',
    });
    expect(lines.find((l) => l.id === 'new')).toMatchObject({ supersedes: ['old'], importance: 0.9 });
    expect(lines.find((l) => l.id === 'fact:build:cmd')).toMatchObject({
      fields: { why: 'turbo caches the packages' },
    });

    // Into a fresh folder, from a file written with --out, in reverse order (supersession targets come later).
    const out = join(dir, 'export.jsonl');
    expect(cairn(['export', '-n', 'proj', '--out', out]).code).toBe(0);
    const reversed = file('reversed.jsonl', readFileSync(out, 'utf8').trim().split('\n').reverse());
    const fresh = join(dir, 'fresh');
    const badBatch = cairn(['import', reversed, '--data-dir', fresh, '--batch-size', '0']);
    expect(badBatch.code).toBe(2);
    expect(badBatch.stderr).toContain('--batch-size must be an integer');
    const imported = cairn(['import', reversed, '--data-dir', fresh, '--json']);
    expect(imported.code, imported.stderr).toBe(0);
    // The deleted memory is written only to be deleted: counted once, as deleted (read = the sum).
    expect(JSON.parse(imported.stdout)).toMatchObject({
      read: 4,
      stored: 3,
      rejected: 0,
      superseding: 1,
      deleted: 1,
    });
    expect(cairn(['export', '-n', 'proj', '--data-dir', fresh]).stdout).toBe(exported.stdout);
    const search = JSON.parse(
      cairn(['search', 'deploys', '-n', 'proj', '--data-dir', fresh, '--json']).stdout,
    ) as {
      hits: Array<{ id: string }>;
    };
    expect(search.hits.map((h) => h.id)).toEqual(['new']);
    // The imported field is searched as its route, and the human table says which route found it.
    const byField = cairn(['search', 'turbo caches', '-n', 'proj', '--data-dir', fresh]);
    expect(byField.stdout).toContain('fact:build:cmd');
    expect(byField.stdout).toContain('routes: #1 why');
    const stats = JSON.parse(cairn(['stats', '--data-dir', fresh, '--json']).stdout).namespaces.proj;
    expect(stats).toMatchObject({ stored: 2, superseded: 1, deleted: 1, pending: 0 });
    // The deleted memory, written then deleted before its vector was stored, has none: it was counted
    // and indexed when the vector was stored after the delete.
    expect(stats.indexed).toBe(stats.embedded);

    // The same file again changes nothing: the deleted memory is not brought back to be deleted again.
    const again = cairn(['import', reversed, '--data-dir', fresh, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      read: 4,
      stored: 0,
      updated: 0,
      unchanged: 4,
      deleted: 0,
    });
    // The same, but for the searches above, which the access counts now include.
    const said = (text: string) => text.replace(/,"access":\{[^}]*\}/g, '');
    expect(said(cairn(['export', '-n', 'proj', '--data-dir', fresh]).stdout)).toBe(said(exported.stdout));
  });
});

describe('cairn ingest interrupted (Ctrl-C)', () => {
  it('stops after the batch in hand, says what it stored and exits 130; a second run goes on; Ctrl-C while waiting for vectors leaves every line stored', async () => {
    const line = (i: number) =>
      `${JSON.stringify({ namespace: 'proj', id: `m${i}`, text: `note ${i} about the ledger service` })}\n`;
    /** `cairn <args>` started, with what it has written so far and its exit. */
    const started = (args: string[]) => {
      const child = spawn(process.execPath, [MAIN, ...args], {
        env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
      });
      const seen = { out: '', err: '' };
      child.stdout.on('data', (d: Buffer) => {
        seen.out += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        seen.err += d.toString();
      });
      return { child, seen, exited: once(child, 'exit') };
    };
    // From a pipe, as `producer | cairn ingest -`: stopped while it stores.
    const { child, seen, exited } = started(['ingest', '-', '--batch-size', '100', '--json']);
    child.stdin.on('error', () => {}); // the command closes its input when interrupted
    for (let i = 0; i < 300; i++) child.stdin.write(line(i));
    for (let i = 0; i < 300; i++) {
      const stats = cairn(['stats', '--json']);
      if (stats.code === 0 && (JSON.parse(stats.stdout).namespaces.proj?.stored ?? 0) >= 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGINT');
    for (let i = 0; i < 100 && !seen.err.includes('interrupted'); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(seen.err).toContain('cairn ingest: interrupted: storing the batch in hand, then stopping');
    // No further line comes: the pipe stays open and idle, and the command still ends.
    const [code] = await exited;
    expect(code).toBe(130);
    const summary = JSON.parse(seen.out) as {
      read: number;
      stored: number;
      interrupted: string;
      embedded: boolean;
    };
    expect(summary).toMatchObject({ interrupted: 'storing', embedded: false });
    // Every line read was stored (the batch in hand too), and nothing after it.
    expect(summary.stored).toBe(summary.read);
    expect(summary.read).toBeGreaterThanOrEqual(200);
    expect(summary.read).toBeLessThanOrEqual(300);
    expect(JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj.stored).toBe(summary.read);
    // The same input again goes on: what was stored comes back unchanged, the rest is stored.
    const all = file(
      'all.jsonl',
      Array.from({ length: 3_000 }, (_, i) => line(i).trim()),
    );
    const again = cairn(['ingest', all, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      stored: 3_000 - summary.read,
      unchanged: summary.read,
      embedded: true,
    });

    // Stopped while it waits for vectors: every line stored, and the next writer embeds them.
    const more = file(
      'more.jsonl',
      Array.from({ length: 20_000 }, (_, i) => line(10_000 + i).trim()),
    );
    const waiting = started(['ingest', more, '--json', '--progress']);
    for (let i = 0; i < 1_200 && !waiting.seen.err.includes('index  ['); i++)
      await new Promise((r) => setTimeout(r, 50));
    waiting.child.kill('SIGINT');
    const [waitCode] = await waiting.exited;
    expect(waitCode).toBe(130);
    expect(JSON.parse(waiting.seen.out)).toMatchObject({
      read: 20_000,
      stored: 20_000,
      interrupted: 'embedding',
    });
    const after = cairn(['ingest', file('none.jsonl', []), '--json']);
    expect(after.code, after.stderr).toBe(0);
    expect(JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj).toMatchObject({
      stored: 23_000,
      embedded: 23_000,
      pending: 0,
    });
  });
});

describe('cairn export --out', () => {
  it('writes the file whole or leaves it as it was: a namespace holding nothing, a path that cannot be written', () => {
    expect(cairn(['ingest', file('m.jsonl', memories)]).code).toBe(0);
    const out = join(dir, 'backup.jsonl');
    const done = cairn(['export', '-n', 'proj', '--out', out]);
    expect(done.code, done.stderr).toBe(0);
    const backup = readFileSync(out, 'utf8');
    const lines = backup.trim().split('\n').length;
    expect(lines).toBe(memories.filter((m) => m.namespace === 'proj').length);
    expect(done.stderr).toContain(`exported ${lines} memories of proj (0 deleted) to ${out}`);
    // A mistyped namespace: refused, and yesterday's backup is still there, whole (it was emptied, exit 0).
    const typo = cairn(['export', '-n', 'porj', '--out', out]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('[NOT_FOUND]: namespace porj holds no memories in this data folder');
    expect(typo.stderr).toContain(`${out} left as it was`);
    expect(readFileSync(out, 'utf8')).toBe(backup);
    // A folder that does not exist is the user's mistake, named, not an internal error.
    const nowhere = cairn(['export', '-n', 'proj', '--out', join(dir, 'no', 'such', 'x.jsonl')]);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain('[INVALID_INPUT]: cannot write');
    expect(nowhere.stderr).toContain('ENOENT');
    // A folder as the target: refused, the folder untouched.
    const asFolder = cairn(['export', '-n', 'proj', '--out', dir]);
    expect(asFolder.code).toBe(2);
    expect(statSync(dir).isDirectory()).toBe(true);
    // No temporary file is left behind by any of them.
    expect(readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
    // A private backup stays private; a file the user may not write stays refused, as it was in place.
    chmodSync(out, 0o600);
    expect(cairn(['export', '-n', 'proj', '--out', out]).code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    if (process.getuid?.() !== 0) {
      chmodSync(out, 0o400);
      expect(cairn(['export', '-n', 'proj', '--out', out]).stderr).toContain('EACCES');
      chmodSync(out, 0o600);
    }
    // Through a symbolic link: the file it points to is replaced, and the link stays a link.
    const link = join(dir, 'latest.jsonl');
    symlinkSync(out, link);
    writeFileSync(out, 'old\n');
    expect(cairn(['export', '-n', 'proj', '--out', link]).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(out, 'utf8')).toBe(backup);
    // A device or a pipe is written in place (it cannot be replaced): --out /dev/stdout in a shell pipeline.
    const toStdout = spawnSync(
      'sh',
      ['-c', `"${process.execPath}" "${MAIN}" export -n proj --out /dev/stdout | cat`],
      { encoding: 'utf8', env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') } },
    );
    expect(toStdout.status, toStdout.stderr).toBe(0);
    expect(toStdout.stdout).toBe(backup);
    expect(lstatSync('/dev/stdout').isSymbolicLink()).toBe(true);
  });
});

describe('output read only in part', () => {
  it('a reader that stops early (cairn export | head) ends the command quietly, exit 0, the folder closed', async () => {
    const rows = Array.from({ length: 600 }, (_, i) => ({
      namespace: 'proj',
      id: `m${i}`,
      text: `memory ${i}: ${'the nightly export of the billing tables '.repeat(6)}`,
    }));
    expect(cairn(['ingest', file('rows.jsonl', rows)]).code).toBe(0);
    const child = spawn(process.execPath, [MAIN, 'export', '-n', 'proj'], {
      env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // Like `head -c 100`: read the first chunk, then close the pipe with most of the output unwritten.
    await once(child.stdout, 'data');
    child.stdout.destroy();
    const [code] = await once(child, 'exit');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // Closed cleanly: the next writer opens the folder without a word about a crash.
    expect(cairn(['stats', '--json']).code).toBe(0);
  });
});

describe('cairn import of a supersession chain', () => {
  it('marks each memory superseded whatever the order of the file, and a second import changes nothing', () => {
    const chain = file('chain.jsonl', [
      { namespace: 'proj', id: 'v3', kind: 'fact', text: 'the api runs on port 8082', supersedes: ['v2'] },
      { namespace: 'proj', id: 'v2', kind: 'fact', text: 'the api runs on port 8081', supersedes: ['v1'] },
      { namespace: 'proj', id: 'v1', kind: 'fact', text: 'the api runs on port 8080' },
    ]);
    const first = cairn(['import', chain, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ stored: 3, superseding: 2, rejected: 0 });
    expect(JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj).toMatchObject({
      stored: 1,
      superseded: 2,
    });
    const hits = JSON.parse(cairn(['search', 'api port', '-n', 'proj', '--json']).stdout).hits;
    expect(hits.map((h: { id: string }) => h.id)).toEqual(['v3']);
    const again = JSON.parse(cairn(['import', chain, '--json']).stdout);
    expect(again).toMatchObject({ stored: 0, updated: 0, unchanged: 3 });
  });
});

describe('cairn check', () => {
  it('compares the counts stats reads with the tables, and --recount sets them while another connection holds the file open', () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({
      namespace: 'proj',
      id: `m${i}`,
      text: `memory ${i}`,
    }));
    expect(cairn(['ingest', file('rows.jsonl', rows)]).code).toBe(0);
    const ok = cairn(['check', '--json']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).counts).toEqual({ ok: true, drift: [] });
    // A kept count off by five, as a bug in a trigger would leave it.
    const store = new MemoryStore({ path: join(dir, 'data', 'cairn.db') });
    store.db.prepare("UPDATE namespace_rows SET live = live + 5 WHERE namespace = 'proj'").run();
    expect(JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj).toMatchObject({ stored: 55 });
    const off = cairn(['check']);
    expect(off.code).toBe(1);
    expect(off.stdout).toContain('kept counts: 1 disagree with the tables');
    expect(off.stdout).toMatch(/namespace proj: kept .*"live":55.*counted .*"live":50/);
    // Recounted while this process still holds its own connection open, as a server would.
    const fixed = cairn(['check', '--recount']);
    expect(fixed.code).toBe(0);
    expect(fixed.stdout).toContain('kept counts: ok (recounted)');
    expect(JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj).toMatchObject({ stored: 50 });
    store.close();
    // --quick reads structure only: no counts.
    expect(JSON.parse(cairn(['check', '--quick', '--json']).stdout).counts).toBeNull();
  });

  it('passes a healthy data folder, names the damage in a broken one and exits 1, and search refuses it by name', () => {
    const many = Array.from({ length: 2_000 }, (_, i) => ({
      namespace: 'proj',
      id: `m${i}`,
      text: `memory ${i} zq${i}x`,
    }));
    expect(cairn(['ingest', file('many.jsonl', many)]).code).toBe(0);
    // stats does not check the file (it reads every page); it says so, and what the last check found.
    expect(cairn(['stats']).stdout).toContain('integrity: not checked yet');
    const ok = cairn(['check', '--json']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, depth: 'full', problems: [] });
    expect(cairn(['stats']).stdout).toMatch(
      /integrity: sound when last checked \(.*, cairn check \(process \d+\)\)/,
    );
    // Garbage over some pages, as a failing disk leaves them.
    const path = join(dir, 'data', 'cairn.db');
    const sound = readFileSync(path);
    const fd = openSync(path, 'r+');
    const pages = Math.floor(statSync(path).size / 4096);
    for (let i = 0; i < 12; i++)
      writeSync(fd, Buffer.alloc(4096, 0x5a ^ i), 0, 4096, (2 + ((i * 7919) % (pages - 2))) * 4096);
    closeSync(fd);
    const bad = cairn(['check']);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/cairn\.db: DAMAGED \(full check found \d+ problems\)/);
    expect(bad.stdout).toContain('restore the folder from a backup');
    const quick = cairn(['check', '--quick', '--json']);
    expect(quick.code).toBe(1);
    expect(JSON.parse(quick.stdout)).toMatchObject({ ok: false, depth: 'quick' });
    // stats may read only sound pages, and said nothing of the damage (exit 0): it reports the last verdict
    // now, and exits 1, until a check finds the file sound again (here: its pages put back).
    const damaged = readFileSync(path);
    writeFileSync(path, sound);
    const stats = cairn(['stats', '--json']);
    expect(stats.code).toBe(1);
    expect(JSON.parse(stats.stdout).integrity).toMatchObject({ ok: false, depth: 'quick' });
    expect(cairn(['stats']).stdout).toContain('integrity: DAMAGED when last checked');
    expect(cairn(['check', '--quick']).code).toBe(0);
    expect(cairn(['stats']).code).toBe(0);
    writeFileSync(path, damaged);
    // A search either answers or names the damage, never a raw SQLite error as INTERNAL.
    const search = cairn(['search', 'zq7x', '-n', 'proj', '--json']);
    expect(search.stderr).not.toContain('[INTERNAL]');
  });
});

describe('cairn demo', () => {
  it('ingests the sample corpus and prints explained hybrid searches', () => {
    const r = cairn(['demo']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Ingested 31 memories/);
    expect(r.stdout).toMatch(/"bm25Rank"/);
    expect(r.stdout).toMatch(/"vecRank"/);
  });
});
