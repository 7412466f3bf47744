import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAIN, postJson, servedUrl, startCli } from './cli-process.js';

// `cairn consolidate` and `cairn prune` as a user runs them: on a data folder, and beside a running
// `cairn serve` that holds the folder's writer role (the commands open it as a follower).

let dir: string;
const children: Array<{ kill: (s: NodeJS.Signals) => boolean }> = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-hygiene-'));
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function cairn(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, CAIRN_DATA_DIR: join(dir, 'data') },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const T = Date.UTC(2026, 0, 1);
function storm(n: number, ns = 'proj') {
  return Array.from({ length: n }, (_, i) => ({
    namespace: ns,
    id: `s${i}`,
    kind: 'observation',
    text: 'Disk almost full on build-agent-3: /var/lib/docker at 97%',
    ts: T + i * 1000,
  }));
}

describe('cairn consolidate and cairn prune', () => {
  it("an export keeps consolidation's merges, and an import restores them as merges (undoable), once", () => {
    const path = join(dir, 'in.jsonl');
    writeFileSync(
      path,
      storm(5)
        .map((m) => JSON.stringify(m))
        .join('\n'),
    );
    expect(cairn(['ingest', path]).code).toBe(0);
    expect(JSON.parse(cairn(['consolidate', '--json']).stdout)).toMatchObject({ merged: 4 });
    expect(cairn(['consolidate', '--undo', 's1', '-n', 'proj']).code).toBe(0);
    // Searches count what they return: pruning ranks by it, and an import must keep it.
    for (let i = 0; i < 2; i++) expect(cairn(['search', 'disk almost full', '-n', 'proj']).code).toBe(0);
    const out = join(dir, 'export.jsonl');
    expect(cairn(['export', '-n', 'proj', '--out', out]).code).toBe(0);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; merged?: { into: string; cosine: number; at: string } });
    // Merged into the newest copy; the one undone is no merge; the absorber none either.
    expect(lines.filter((l) => l.merged).map((l) => [l.id, l.merged!.into])).toEqual([
      ['s0', 's4'],
      ['s2', 's4'],
      ['s3', 's4'],
    ]);
    expect(lines[0]!.merged).toEqual({ into: 's4', cosine: 1, at: expect.any(String) });
    // The undone merge travels too, and so do the access counts.
    const byId = new Map(lines.map((l) => [l.id, l as Record<string, unknown>]));
    expect(byId.get('s1')!.undone).toEqual({
      into: 's4',
      cosine: 1,
      at: expect.any(String),
      undoneAt: expect.any(String),
    });
    expect(byId.get('s4')!.access).toEqual({ count: 2, last: expect.any(String) });

    const fresh = join(dir, 'fresh');
    const imported = cairn(['import', out, '--data-dir', fresh, '--json']);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({
      read: 5,
      stored: 5,
      merged: 3,
      undone: 1,
      rejected: 0,
    });
    const inFresh = (args: string[]) => cairn([...args, '--data-dir', fresh]);
    // The import is the folder as it was: an undo is for good there too (the job merged s1 again), and the
    // counts pruning ranks by are the exported ones.
    expect(JSON.parse(inFresh(['consolidate', '--json']).stdout)).toMatchObject({ merged: 0 });
    expect(inFresh(['export', '-n', 'proj']).stdout).toBe(readFileSync(out, 'utf8'));
    expect(JSON.parse(inFresh(['stats', '--json']).stdout).namespaces.proj).toMatchObject({
      stored: 2,
      superseded: 3,
    });
    const hits = JSON.parse(inFresh(['search', 'disk almost full', '-n', 'proj', '--json']).stdout).hits;
    // The absorber answers for its three copies (the live s1, the same text, is a near-duplicate of the page).
    expect(hits[0]).toMatchObject({ id: 's4', dupCount: 3 });
    // The same file again changes nothing: the merges are in force already.
    expect(JSON.parse(inFresh(['import', out, '--json']).stdout)).toMatchObject({
      unchanged: 5,
      merged: 0,
      undone: 0,
    });
    // The same, but for the search above, which the access counts now include.
    const said = (text: string) => text.replace(/,"access":\{[^}]*\}/g, '');
    expect(said(inFresh(['export', '-n', 'proj']).stdout)).toBe(said(readFileSync(out, 'utf8')));
    // A restored merge is a merge: undone as one.
    const undo = JSON.parse(inFresh(['consolidate', '--undo', 's0', '-n', 'proj', '--json']).stdout);
    expect(undo.restored).toEqual([expect.objectContaining({ id: 's0', into: 's4' })]);
    // A malformed `merged` is refused with its line, and the line is not stored.
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(
      bad,
      `${JSON.stringify({ namespace: 'proj', id: 'b1', text: 'x', merged: { into: 's4' } })}\n`,
    );
    const refused = inFresh(['import', bad, '--json']);
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stdout).errors).toEqual([
      expect.objectContaining({
        line: 1,
        code: 'INVALID_INPUT',
        message: expect.stringContaining('merged must be'),
      }),
    ]);
  });

  it('an undo holds through an import though its target was merged since, and one import mends a half-done one', () => {
    const path = join(dir, 'in.jsonl');
    const lines = (ms: ReturnType<typeof storm>) => ms.map((m) => JSON.stringify(m)).join('\n');
    writeFileSync(path, lines(storm(5)));
    expect(cairn(['ingest', path]).code).toBe(0);
    expect(cairn(['consolidate']).code).toBe(0);
    expect(cairn(['consolidate', '--undo', 's1', '-n', 'proj']).code).toBe(0);
    // A sixth copy: s4, s1's target, is merged into it.
    writeFileSync(path, lines(storm(6).slice(5)));
    expect(cairn(['ingest', path]).code).toBe(0);
    expect(JSON.parse(cairn(['consolidate', '--json']).stdout)).toMatchObject({ merged: 1 });
    const out = join(dir, 'export.jsonl');
    expect(cairn(['export', '-n', 'proj', '--out', out]).code).toBe(0);
    const fresh = join(dir, 'fresh');
    const inFresh = (args: string[]) => cairn([...args, '--data-dir', fresh]);
    // It was refused (a merge into a memory no longer live), and the job merged s1 again.
    expect(JSON.parse(inFresh(['import', out, '--json']).stdout)).toMatchObject({ undone: 1, rejected: 0 });
    expect(JSON.parse(inFresh(['consolidate', '--json']).stdout)).toMatchObject({ merged: 0 });
    const said = (text: string) => text.replace(/,"access":\{[^}]*\}/g, '');
    expect(said(inFresh(['export', '-n', 'proj']).stdout)).toBe(said(readFileSync(out, 'utf8')));
    // A folder an import left half done (s1 merged, as a kill between a merge and its undo left it): the
    // same file again undoes it.
    const half = join(dir, 'half');
    const exported = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const merged = exported.map((l) =>
      l.id === 's1' ? { ...l, undone: undefined, merged: { into: 's5', cosine: 1, at: l.undone.at } } : l,
    );
    writeFileSync(join(dir, 'half.jsonl'), merged.map((l) => JSON.stringify(l)).join('\n'));
    expect(cairn(['import', join(dir, 'half.jsonl'), '--data-dir', half]).code).toBe(0);
    expect(JSON.parse(cairn(['import', out, '--data-dir', half, '--json']).stdout)).toMatchObject({
      undone: 1,
    });
    expect(said(cairn(['export', '-n', 'proj', '--data-dir', half]).stdout)).toBe(
      said(readFileSync(out, 'utf8')),
    );
  });

  it('merge a dup storm (dry run first), undo one, and prune a fact slot, on a data folder', () => {
    const facts = Array.from({ length: 5 }, (_, i) => ({
      namespace: 'proj',
      slot: 'prefs',
      key: `k${i}`,
      text: `preference ${i}`,
      ts: T + i,
    }));
    const path = join(dir, 'in.jsonl');
    writeFileSync(path, [...storm(30), ...facts].map((m) => JSON.stringify(m)).join('\n'));
    expect(cairn(['ingest', path]).code).toBe(0);

    const dry = cairn(['consolidate', '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, merged: 29, exact: 29 });
    const run = JSON.parse(cairn(['consolidate', '--json']).stdout);
    expect(run).toMatchObject({ dry_run: false, merged: 29, by_namespace: { proj: 29 } });
    const hits = JSON.parse(cairn(['search', 'disk almost full', '-n', 'proj', '--json']).stdout).hits;
    expect(hits.map((h: { id: string; dupCount?: number }) => [h.id, h.dupCount])).toEqual([['s29', 29]]);

    const undo = cairn(['consolidate', '--undo', 's0', '-n', 'proj', '--json']);
    expect(JSON.parse(undo.stdout).restored).toEqual([expect.objectContaining({ id: 's0', into: 's29' })]);
    expect(undo.code).toBe(0);
    // An id no merge holds (a typo, or one restored already) is named, exit 3, as `cairn get` does.
    const again = cairn(['consolidate', '--undo', 's0', 'nothere', '-n', 'proj']);
    expect(again.code).toBe(3);
    expect(again.stdout).toContain('restored 0 memories');
    expect(again.stderr).toContain('not restored: s0, nothere (no merge of proj holds them');
    expect(JSON.parse(cairn(['consolidate', '--json']).stdout).merged).toBe(0);

    const prune = cairn(['prune', '-n', 'proj', '--slot', 'prefs', '--cap', '2', '--dry-run']);
    expect(prune.stdout).toMatch(/would delete 3 of 5 covered/);
    expect(
      JSON.parse(cairn(['prune', '-n', 'proj', '--slot', 'prefs', '--cap', '2', '--json']).stdout).pruned,
    ).toEqual(['fact:prefs:k0', 'fact:prefs:k1', 'fact:prefs:k2']);
    // A policy over a whole namespace is refused by name, exit 2, and deletes nothing.
    const bad = cairn(['prune', '-n', 'proj', '--cap', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/INVALID_INPUT.*slot/);
    expect(JSON.parse(cairn(['stats', '--json']).stdout).namespaces.proj.stored).toBe(4);
  });

  it('run beside a running cairn serve, which then serves the merged result', async () => {
    const child = startCli(['serve', '--port', '0', '--no-auth', '--data-dir', join(dir, 'data')], {});
    children.push(child);
    const url = await servedUrl(child);
    const w = await postJson(`${url}/v1/memories`, { namespace: 'proj', memories: storm(10) });
    expect(w.status).toBe(201);
    const run = cairn(['consolidate', '-n', 'proj', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).merged).toBe(9);
    const res = await postJson(`${url}/v1/search`, { namespace: 'proj', query: 'disk almost full', k: 5 });
    expect(res.body.hits.map((h: { id: string }) => h.id)).toEqual(['s9']);
    expect(res.body.hits[0].dupCount).toBe(9);
    // Through the API too: nothing left to merge.
    const api = cairn(['consolidate', '-n', 'proj', '--api', url, '--json']);
    expect(JSON.parse(api.stdout).merged).toBe(0);
  });
});
