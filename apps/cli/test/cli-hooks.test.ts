import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HookOutbox, type OutboxEntry } from '../src/hooks/outbox.js';
import { marker, redact, redactDeep, SECRET_PATTERNS } from '../src/hooks/redact.js';
import { MAIN, servedUrl, startCli } from './cli-process.js';

// Claude Code's hooks as Claude Code runs them: a real `node dist/main.js hooks run …` process, the event's
// JSON payload on stdin, a real data folder or a real `cairn serve`; what was captured is read back with
// `cairn search --json` / `list` / `export`.

const NS = 'repo/github.com/acme/api';
const KEY = 'test-key-0123456789';
// Secrets a tool call might carry; none may reach a stored memory.
const GH = 'ghp_R8x2Kq9ZLmW4vT7nY1bC5dF0hJ3sA6pE9gU2';
const AWS = 'AKIAIOSFODNN7EXAMPLE';
const ANT = 'sk-ant-api03-Xq7Lm2Pz9Rt4Wv8Ny1Kb6Hc3Jd5Fg0Ae';
const PASSWORD = 'hunter2-correct-horse';

let dir: string;
let repo: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-hooks-'));
  // The project: a git repository with an origin, so its namespace is the one `cairn mcp` derives.
  repo = join(dir, 'api');
  mkdirSync(join(repo, 'src'), { recursive: true });
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, 'remote', 'add', 'origin', 'https://github.com/acme/api.git']);
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      const exited = once(c, 'exit');
      c.kill('SIGKILL');
      await exited;
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A port that was free a moment ago: nothing listens there (until a test starts a server on it). */
async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  probe.close();
  await once(probe, 'close');
  return port;
}

/** The test's own environment without anything that would point the CLI elsewhere. */
function baseEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of [
    'CAIRN_DATA_DIR',
    'CAIRN_API_URL',
    'CAIRN_API_KEY',
    'CAIRN_NAMESPACE_PREFIX',
    'CLAUDE_PROJECT_DIR',
    'REDIS_URL',
  ])
    delete env[k];
  // The hooks' outbox and API-mode log go to the user's state folder: this test's own.
  return { ...env, XDG_STATE_HOME: join(dir, 'state'), ...extra };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `cairn hooks run <args>` with `payload` on stdin, as Claude Code starts it; never blocks the test's loop. */
async function hook(args: string[], payload: unknown, env: Record<string, string> = {}): Promise<Run> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [MAIN, 'hooks', 'run', ...args], {
    cwd: repo,
    env: baseEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    stdout += d;
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.stdin!.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr, ms: Date.now() - t0 };
}

function cairn(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { cwd: repo, encoding: 'utf8', env: baseEnv(env) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function json(r: { code: number | null; stdout: string; stderr: string }) {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const common = (session: string, event: string) => ({
  session_id: session,
  transcript_path: join(dir, `${session}.jsonl`),
  cwd: repo,
  permission_mode: 'default',
  hook_event_name: event,
});

const editPayload = (session: string) => ({
  ...common(session, 'PostToolUse'),
  tool_name: 'Edit',
  tool_use_id: 'toolu_edit1',
  tool_input: {
    file_path: join(repo, 'src/auth/middleware.ts'),
    old_string: 'const token = req.headers.authorization',
    new_string: `const apiKey = "${GH}"`,
  },
  tool_response: { filePath: join(repo, 'src/auth/middleware.ts'), success: true },
});

const bashPayload = (session: string) => ({
  ...common(session, 'PostToolUse'),
  tool_name: 'Bash',
  tool_use_id: 'toolu_bash1',
  tool_input: {
    command: `GITHUB_TOKEN=${GH} AWS_ACCESS_KEY_ID=${AWS} DB_PASSWORD=${PASSWORD} curl -H "Authorization: Bearer ${ANT}" https://api.example.com/deploy`,
    description: 'Trigger the staging deploy',
  },
  tool_response: { stdout: 'deployed', stderr: '', interrupted: false, isImage: false },
});

const failedPayload = (session: string) => ({
  ...common(session, 'PostToolUseFailure'),
  tool_name: 'Bash',
  tool_use_id: 'toolu_bash2',
  tool_input: { command: 'pnpm vitest run test/auth.spec.ts' },
  error: 'Command failed with exit code 1: auth.spec.ts > rejects an expired session',
  is_interrupt: false,
});

/** A transcript as Claude Code writes it: JSONL, the user's prompt first, the assistant's reply last. */
function writeTranscript(session: string, reply: string): void {
  const lines = [
    {
      type: 'user',
      message: { role: 'user', content: 'Fix the flaky expired-session test in auth.spec.ts' },
    },
    {
      type: 'assistant',
      message: {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_edit1', name: 'Edit', input: {} }],
      },
    },
    {
      type: 'user',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_edit1' }] },
    },
    { type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: reply }] } },
  ];
  writeFileSync(join(dir, `${session}.jsonl`), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
}

/** Runs a whole session's capture hooks, the way Claude Code fires them, against `env`. */
async function captureSession(session: string, env: Record<string, string>, args: string[] = []) {
  writeTranscript(session, `Fixed: the test awaited the wrong promise. (debug key was ${ANT})`);
  for (const [event, payload] of [
    ['post-tool-use', editPayload(session)],
    ['post-tool-use', bashPayload(session)],
    ['post-tool-use-failure', failedPayload(session)],
    ['stop', { ...common(session, 'Stop'), stop_hook_active: false }],
    ['session-end', { ...common(session, 'SessionEnd'), reason: 'prompt_input_exit' }],
  ] as const) {
    const r = await hook([event, ...args], payload, env);
    expect(r.code).toBe(0);
    expect(r.stderr, `${event} should store silently`).toBe('');
  }
}

function expectNoSecrets(text: string): void {
  for (const secret of [GH, AWS, ANT, PASSWORD]) expect(text).not.toContain(secret);
}

describe('cairn hooks run (embedded data folder)', () => {
  it('redacts a secret the observation would cut in half, before it clips the command', async () => {
    const data = join(dir, 'data');
    // Each command's first 300 characters end inside its secret: clipped first, the secret's first half
    // matched no pattern (the URL's password lost its "@") and was stored.
    const cut = [
      { id: 'toolu_cut1', command: `echo ${'x'.repeat(249)} && git push https://${GH}@github.com/acme/api` },
      {
        id: 'toolu_cut2',
        command: `echo ${'x'.repeat(254)} && git clone https://deploy:MyVerySecretPw9@git.example.com/x`,
      },
    ];
    for (const { id, command } of cut) {
      expect(command.slice(0, 300)).toMatch(/ghp_R8x2Kq9ZLm|MyVerySecret/);
      const r = await hook(
        ['post-tool-use'],
        {
          ...common('sess-cut', 'PostToolUse'),
          tool_name: 'Bash',
          tool_use_id: id,
          tool_input: { command },
          tool_response: { stdout: '', stderr: '', interrupted: false, isImage: false },
        },
        { CAIRN_DATA_DIR: data },
      );
      expect(r.code, r.stderr).toBe(0);
    }
    const exported = cairn(['export', '-n', NS], { CAIRN_DATA_DIR: data });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain('toolu_cut1');
    expect(exported.stdout).toContain('toolu_cut2');
    expect(exported.stdout).not.toContain('ghp_R8x2');
    expect(exported.stdout).not.toContain('MyVery');
  });

  it('stores observations and a session summary, redacted, that search and SessionStart give back', async () => {
    const data = join(dir, 'data');
    const env = { CAIRN_DATA_DIR: data };
    await captureSession('sess-1', env);

    const all = json(cairn(['list', '-n', NS, '--json', '--limit', '50'], env)).memories as Array<
      Record<string, unknown>
    >;
    expect(all.map((m) => m.kind).sort()).toEqual(['observation', 'observation', 'observation', 'summary']);
    for (const m of all) {
      expect(m).toMatchObject({ namespace: NS, session: 'sess-1', agent: 'claude-code' });
    }
    const edit = all.find((m) => m.id === 'cc:sess-1:toolu_edit1')!;
    expect(edit.title).toBe('Edit src/auth/middleware.ts');
    expect(edit.meta).toMatchObject({ tool: 'Edit', files: ['src/auth/middleware.ts'], ok: true });
    const failed = all.find((m) => m.id === 'cc:sess-1:toolu_bash2')!;
    expect(failed.meta).toMatchObject({ tool: 'Bash', ok: false });
    expect(failed.text).toContain('rejects an expired session');
    const summary = all.find((m) => m.kind === 'summary')!;
    expect(summary.id).toBe('cc:sess-1:summary');
    expect(summary.text).toContain('Asked: Fix the flaky expired-session test');
    expect(summary.text).toContain('Files changed: src/auth/middleware.ts');
    expect(summary.text).toContain('Bash ×2 (1 failed)');
    expect(summary.text).toContain('Last reply: Fixed: the test awaited the wrong promise');
    expect(summary.text).toContain('(ended: prompt_input_exit)');

    // Search finds what was captured, by what it was about.
    const hits = json(cairn(['search', 'staging deploy', '-n', NS, '--json'], env)).hits as Array<{
      id: string;
    }>;
    expect(hits[0]!.id).toBe('cc:sess-1:toolu_bash1');
    const failures = json(
      cairn(['search', 'expired session test failed', '-n', NS, '--kind', 'observation', '--json'], env),
    );
    expect(failures.hits[0].id).toBe('cc:sess-1:toolu_bash2');

    // No secret from any tool input or the transcript was stored, anywhere in any memory.
    const exported = cairn(['export', '-n', NS], env);
    expect(exported.code, exported.stderr).toBe(0);
    expectNoSecrets(exported.stdout);
    expect(exported.stdout).toContain(marker('github-token'));
    expect(exported.stdout).toContain(marker('aws-access-key'));
    expect(exported.stdout).toContain(marker('anthropic-key'));
    expect(exported.stdout).toContain(marker('assignment'));

    // The next session starts with the last one's summary as context (stdout, exit 0).
    const start = await hook(
      ['session-start'],
      { ...common('sess-2', 'SessionStart'), source: 'startup' },
      env,
    );
    expect(start.code).toBe(0);
    expect(start.stderr).toBe('');
    expect(start.stdout).toContain(`Memory context: ${NS}`);
    expect(start.stdout).toContain('Session summary: Fix the flaky expired-session test');
    expect(start.stdout).toContain('Files changed: src/auth/middleware.ts');
    expectNoSecrets(start.stdout);
    // …within its token budget: a tiny one leaves the summary out rather than overflow.
    const tiny = await hook(['session-start', '--max-tokens', '5'], common('sess-3', 'SessionStart'), env);
    expect(tiny.code).toBe(0);
    expect(tiny.stdout).toBe('');
  });

  it('takes the event from the payload, updates one summary per session, and re-delivery stores nothing new', async () => {
    const env = { CAIRN_DATA_DIR: join(dir, 'data') };
    // No event argument: `cairn hooks run` reads hook_event_name.
    expect((await hook([], editPayload('sess-a'), env)).code).toBe(0);
    expect((await hook([], editPayload('sess-a'), env)).code).toBe(0);
    writeTranscript('sess-a', 'first reply');
    expect((await hook([], common('sess-a', 'Stop'), env)).code).toBe(0);
    writeTranscript('sess-a', 'second reply');
    expect(
      (await hook([], { ...common('sess-a', 'Stop'), last_assistant_message: 'the final word' }, env)).code,
    ).toBe(0);
    const all = json(cairn(['list', '-n', NS, '--json'], env)).memories as Array<{
      kind: string;
      text: string;
    }>;
    expect(all.map((m) => m.kind).sort()).toEqual(['observation', 'summary']);
    expect(all.find((m) => m.kind === 'summary')!.text).toContain('Last reply: the final word');
  });

  it('writes beside a running writer (cairn serve on the same folder) as a follower, without waiting for it', async () => {
    const data = join(dir, 'data');
    const server = startCli(['serve', '--port', '0', '--no-auth'], { CAIRN_DATA_DIR: data });
    children.push(server);
    const url = await servedUrl(server);
    const r = await hook(['post-tool-use', '--data-dir', data], bashPayload('sess-f'), {});
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    // The server (the writer) finds it at once: it was committed to the shared SQLite file.
    const res = await fetch(`${url}/v1/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: NS, query: 'staging deploy' }),
    });
    const body = (await res.json()) as { hits: Array<{ id: string }> };
    expect(body.hits[0]?.id).toBe('cc:sess-f:toolu_bash1');
  });

  it('tool calls that finish together are all stored (one hook is the writer, the others follow it)', async () => {
    const data = join(dir, 'data');
    const runs = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        hook(['post-tool-use', '--data-dir', data], {
          ...common('sess-p', 'PostToolUse'),
          tool_name: 'Read',
          tool_use_id: `toolu_read${i}`,
          tool_input: { file_path: join(repo, `src/file${i}.ts`) },
          tool_response: { type: 'text' },
        }),
      ),
    );
    for (const r of runs) {
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
    }
    const listed = json(cairn(['list', '-n', NS, '--session', 'sess-p', '--json', '--data-dir', data]));
    expect(listed.memories.map((m: { title: string }) => m.title).sort()).toEqual(
      [1, 2, 3, 4].map((i) => `Read src/file${i}.ts`),
    );
  });

  it('never fails the turn: a bad payload, an unknown event or a missing folder is one logged line and exit 0', async () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    const bad = await hook(['post-tool-use', '--data-dir', data], 'this is not json', {});
    expect(bad.code).toBe(0);
    expect(bad.stderr).toMatch(/^cairn hooks: .*not JSON.*\n$/);
    expect(readFileSync(join(data, 'hooks.log'), 'utf8')).toMatch(/not JSON/);
    const unknown = await hook(
      [],
      { ...common('s', 'Notification'), message: 'hi' },
      { CAIRN_DATA_DIR: data },
    );
    expect(unknown.code).toBe(0);
    expect(unknown.stderr).toContain('not an event Cairn handles: Notification');
    const missing = join(dir, 'nowhere');
    const start = await hook(['session-start', '--data-dir', missing], common('s', 'SessionStart'), {});
    expect(start.code).toBe(0);
    expect(start.stdout).toBe('');
    expect(start.stderr).toContain('nothing to recall');
    // A read never creates the folder.
    expect(existsSync(missing)).toBe(false);
  });
});

describe('cairn hooks run (through cairn serve)', () => {
  it('captures through CAIRN_API_URL / CAIRN_API_KEY and prints the context the server builds', async () => {
    const data = join(dir, 'served');
    const server = startCli(['serve', '--port', '0'], {
      CAIRN_DATA_DIR: data,
      CAIRN_API_KEYS: `${KEY}=repo/*`,
    });
    children.push(server);
    const url = await servedUrl(server);
    const env = { CAIRN_API_URL: url, CAIRN_API_KEY: KEY };
    await captureSession('sess-r', env);
    // Read beside the server, from its data folder.
    const read = { CAIRN_DATA_DIR: data };
    const hits = json(cairn(['search', 'staging deploy', '-n', NS, '--json'], read)).hits as Array<{
      id: string;
    }>;
    expect(hits[0]!.id).toBe('cc:sess-r:toolu_bash1');
    const summaries = json(cairn(['list', '-n', NS, '--kind', 'summary', '--json'], read)).memories;
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ session: 'sess-r', agent: 'claude-code', kind: 'summary' });
    const exported = cairn(['export', '-n', NS], read);
    expectNoSecrets(exported.stdout);
    const start = await hook(['session-start'], common('sess-r2', 'SessionStart'), env);
    expect(start.code).toBe(0);
    expect(start.stdout).toContain('Session summary: Fix the flaky expired-session test');
    // A key for other namespaces: refused by the server, logged, exit 0.
    const denied = await hook(['post-tool-use'], bashPayload('sess-x'), {
      ...env,
      CAIRN_NAMESPACE_PREFIX: 'other',
    });
    expect(denied.code).toBe(0);
    expect(denied.stderr).toMatch(/^cairn hooks: PostToolUse: .*FORBIDDEN_NAMESPACE/);
  });

  it('an unreachable CAIRN_API_URL exits 0 at once with the reason on stderr', async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await freePort();
    const r = await hook(['post-tool-use'], bashPayload('sess-u'), {
      CAIRN_API_URL: `http://127.0.0.1:${port}`,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /^cairn hooks: PostToolUse: Cairn API at http:\/\/127\.0\.0\.1:\d+ did not answer/,
    );
    // Refused at once, not waited on until the time limit (the reason says so).
    expect(r.stderr).not.toContain('gave up');
  });

  it('what an API that is down could not take waits in the outbox, redacted, and the next hook that reaches it sends it', async () => {
    const port = await freePort();
    const env = { CAIRN_API_URL: `http://127.0.0.1:${port}`, CAIRN_API_KEY: KEY };
    const state = join(dir, 'state', 'cairn');
    writeTranscript('sess-o', `Fixed: the retry waited on the wrong promise. (debug key was ${ANT})`);

    // Down: a tool call, then the session's end, each kept with what it would have written.
    const tool = await hook(['post-tool-use'], bashPayload('sess-o'), env);
    expect(tool.code).toBe(0);
    expect(tool.stderr).toMatch(/did not answer.*; kept in .*hooks-outbox\.jsonl \(1 waiting\)/);
    const stop = await hook(['stop'], common('sess-o', 'Stop'), env);
    expect(stop.code).toBe(0);
    expect(stop.stderr).toMatch(/\(2 waiting\)/);
    const kept = readFileSync(join(state, 'hooks-outbox.jsonl'), 'utf8');
    expect(kept.trim().split('\n')).toHaveLength(2);
    expectNoSecrets(kept);
    // With no data folder, the hooks' log sits beside the outbox.
    expect(readFileSync(join(state, 'hooks.log'), 'utf8')).toContain('2 waiting');

    // Up again at the same address: the next hook writes its own memory, then sends what waited, oldest
    // first, so the summary is made with the tool call it missed.
    const data = join(dir, 'outbox-served');
    const server = startCli(['serve', '--port', String(port)], {
      CAIRN_DATA_DIR: data,
      CAIRN_API_KEYS: `${KEY}=repo/*`,
    });
    children.push(server);
    await servedUrl(server);
    const next = await hook(['post-tool-use'], editPayload('sess-o'), env);
    expect(next.code).toBe(0);
    expect(next.stderr).toContain('sent 2 outbox entries');
    const left = join(state, 'hooks-outbox.jsonl');
    expect(existsSync(left) ? readFileSync(left, 'utf8') : '').toBe('');
    const exported = cairn(['export', '-n', NS], { CAIRN_DATA_DIR: data });
    expect(exported.code, exported.stderr).toBe(0);
    expectNoSecrets(exported.stdout);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; kind: string; meta?: { observations?: number } });
    expect(lines.map((l) => l.id).sort()).toEqual([
      'cc:sess-o:summary',
      'cc:sess-o:toolu_bash1',
      'cc:sess-o:toolu_edit1',
    ]);
    // Made when it was sent, from the observations the server held by then: both tool calls.
    expect(lines.find((l) => l.kind === 'summary')?.meta?.observations).toBe(2);
  });

  it("a session's end, delivered first once the API is back, is not overwritten by its older stop from the outbox", async () => {
    const port = await freePort();
    const env = { CAIRN_API_URL: `http://127.0.0.1:${port}`, CAIRN_API_KEY: KEY };
    writeTranscript('sess-e', 'Fixed the flaky test.');
    expect((await hook(['post-tool-use'], bashPayload('sess-e'), env)).stderr).toContain('(1 waiting)');
    expect((await hook(['stop'], common('sess-e', 'Stop'), env)).stderr).toContain('(2 waiting)');
    const data = join(dir, 'end-served');
    const server = startCli(['serve', '--port', String(port)], {
      CAIRN_DATA_DIR: data,
      CAIRN_API_KEYS: `${KEY}=repo/*`,
    });
    children.push(server);
    await servedUrl(server);
    const end = await hook(['session-end'], { ...common('sess-e', 'SessionEnd'), reason: 'logout' }, env);
    expect(end.code).toBe(0);
    const summaries = json(cairn(['list', '-n', NS, '--kind', 'summary', '--json'], { CAIRN_DATA_DIR: data }))
      .memories as Array<{ text: string; meta: { hook: string; observations: number } }>;
    expect(summaries).toHaveLength(1);
    // The session's end, made again after the tool call that waited: not the stop that waited with it.
    expect(summaries[0]!.text).toContain('(ended: logout)');
    expect(summaries[0]!.meta).toMatchObject({ hook: 'SessionEnd', observations: 1 });
  });

  it('a malformed environment variable is one logged line and exit 0, not a failed turn', async () => {
    const r = await hook(['post-tool-use'], bashPayload('sess-env'), { CAIRN_API_URL: 'not-a-url' });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^cairn hooks: environment variable CAIRN_API_URL: .*nothing captured/);
  });

  it('a server that never answers is given up on at --timeout, exit 0', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((s) => {
      sockets.push(s);
    });
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const port = (silent.address() as { port: number }).port;
      const r = await hook(['stop', '--timeout', '1'], common('sess-t', 'Stop'), {
        CAIRN_API_URL: `http://127.0.0.1:${port}`,
      });
      expect(r.code).toBe(0);
      // Given up at its own limit (it says so), not left to Claude Code's timeout to kill.
      expect(r.stderr).toMatch(/^cairn hooks: Stop: .*gave up/);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});

describe('cairn hooks install / uninstall', () => {
  const userSettings = {
    model: 'opus',
    permissions: { allow: ['Bash(pnpm test:*)'] },
    env: { FOO: 'bar' },
    hooks: {
      PostToolUse: [
        { matcher: 'Edit|Write', hooks: [{ type: 'command', command: 'npx prettier --write "$FILE"' }] },
      ],
      Notification: [{ hooks: [{ type: 'command', command: 'notify-send Claude' }] }],
    },
  };

  it('merges into ~/.claude/settings.json ($HOME), is idempotent, and uninstall restores the rest exactly', async () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.claude'), { recursive: true });
    const path = join(home, '.claude', 'settings.json');
    writeFileSync(path, JSON.stringify(userSettings, null, 2));
    const env = { HOME: home, CAIRN_DATA_DIR: join(dir, 'data') };

    const first = json(cairn(['hooks', 'install', '--json'], env));
    expect(first).toMatchObject({ settings: path, scope: 'user', changed: true });
    const installed = JSON.parse(readFileSync(path, 'utf8'));
    // Everything that was there is still there, the user's own PostToolUse hook first.
    expect(installed.model).toBe('opus');
    expect(installed.permissions).toEqual(userSettings.permissions);
    expect(installed.env).toEqual(userSettings.env);
    expect(installed.hooks.Notification).toEqual(userSettings.hooks.Notification);
    expect(installed.hooks.PostToolUse[0]).toEqual(userSettings.hooks.PostToolUse[0]);
    expect(Object.keys(installed.hooks).sort()).toEqual(
      ['Notification', 'PostToolUse', 'PostToolUseFailure', 'SessionEnd', 'SessionStart', 'Stop'].sort(),
    );
    const ours = installed.hooks.PostToolUse[1];
    expect(ours.matcher).toBe('*');
    expect(ours.hooks).toHaveLength(1);
    expect(ours.hooks[0]).toMatchObject({ type: 'command', timeout: 10 });
    expect(ours.hooks[0].command).toContain(' hooks run post-tool-use --data-dir ');
    expect(installed.hooks.Stop[0].matcher).toBeUndefined();

    // Again: nothing changes, byte for byte.
    const before = readFileSync(path, 'utf8');
    expect(json(cairn(['hooks', 'install', '--json'], env)).changed).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe(before);

    // The written command works as Claude Code runs it: through a shell, the payload on stdin.
    const run = spawnSync('sh', ['-c', ours.hooks[0].command], {
      cwd: repo,
      input: JSON.stringify(bashPayload('sess-i')),
      encoding: 'utf8',
      env: baseEnv({ HOME: home }),
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    const found = json(cairn(['search', 'staging deploy', '-n', NS, '--json'], env)).hits;
    expect(found[0].id).toBe('cc:sess-i:toolu_bash1');

    // Re-installing with other options replaces Cairn's entries instead of adding more.
    cairn(['hooks', 'install', '--timeout', '3', '--async'], env);
    const again = JSON.parse(readFileSync(path, 'utf8'));
    expect(again.hooks.PostToolUse).toHaveLength(2);
    expect(again.hooks.PostToolUse[1].hooks[0]).toMatchObject({ timeout: 8, async: true });
    expect(again.hooks.Stop[0].hooks[0].async).toBeUndefined();

    const removed = json(cairn(['hooks', 'uninstall', '--json'], env));
    expect(removed).toMatchObject({ changed: true, removed: 5 });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(userSettings);
    expect(json(cairn(['hooks', 'uninstall', '--json'], env))).toMatchObject({ changed: false, removed: 0 });
  });

  it('a settings.json kept as a symbolic link (into dotfiles) stays a link: the file it points to is changed', () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.claude'), { recursive: true });
    const real = join(dir, 'dotfiles-settings.json');
    writeFileSync(real, JSON.stringify({ model: 'opus' }));
    const path = join(home, '.claude', 'settings.json');
    symlinkSync(real, path);
    const env = { HOME: home, CAIRN_DATA_DIR: join(dir, 'data') };
    expect(json(cairn(['hooks', 'install', '--json'], env)).changed).toBe(true);
    expect(lstatSync(path).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(real, 'utf8')).hooks.Stop).toHaveLength(1);
    expect(json(cairn(['hooks', 'uninstall', '--json'], env)).changed).toBe(true);
    expect(lstatSync(path).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(real, 'utf8'))).toEqual({ model: 'opus' });
  });

  it('--scope project writes the repository root .claude/settings.json, from any subfolder', () => {
    const sub = join(repo, 'src');
    const r = spawnSync(process.execPath, [MAIN, 'hooks', 'install', '--scope', 'project', '--json'], {
      cwd: sub,
      encoding: 'utf8',
      env: baseEnv({ HOME: join(dir, 'home') }),
    });
    const out = json({ code: r.status, stdout: r.stdout, stderr: r.stderr });
    expect(out.settings).toBe(join(repo, '.claude', 'settings.json'));
    expect(existsSync(join(dir, 'home', '.claude', 'settings.json'))).toBe(false);
    const settings = JSON.parse(readFileSync(out.settings, 'utf8'));
    expect(Object.keys(settings)).toEqual(['hooks']);
    // No data folder was given: the hooks use the project's own .cairn, as cairn mcp started there does.
    expect(settings.hooks.SessionStart[0].hooks[0].command).not.toContain('--data-dir');
    const u = spawnSync(process.execPath, [MAIN, 'hooks', 'uninstall', '--scope', 'project'], {
      cwd: sub,
      encoding: 'utf8',
      env: baseEnv(),
    });
    expect(u.status, u.stderr).toBe(0);
    // Only Cairn's hooks were there: what is left is an empty object, not a dangling "hooks".
    expect(JSON.parse(readFileSync(out.settings, 'utf8'))).toEqual({});
  });

  it('refuses to touch a settings file that is not JSON', () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.claude'), { recursive: true });
    const path = join(home, '.claude', 'settings.json');
    writeFileSync(path, '{ "model": "opus", }');
    const r = cairn(['hooks', 'install'], { HOME: home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('not valid JSON');
    expect(readFileSync(path, 'utf8')).toBe('{ "model": "opus", }');
  });

  it('refuses a namespace or prefix every hook would refuse, before writing anything', () => {
    const home = join(dir, 'home-bad-ns');
    for (const args of [
      ['--namespace', "team/a'b"],
      ['--namespace-prefix', '-team'],
    ]) {
      const r = cairn(['hooks', 'install', ...args], { HOME: home });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/\[INVALID_INPUT\].*--namespace/);
    }
    expect(existsSync(join(home, '.claude', 'settings.json'))).toBe(false);
  });
});

describe('redact', () => {
  const cases: Array<[string, string, string]> = [
    ['aws-access-key', `aws configure set aws_access_key_id ${AWS}`, AWS],
    [
      'aws-secret-key',
      'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      'wJalrXUtnFEMI/K7MDENG',
    ],
    ['github-token', `git clone https://x-access-token:${GH}@github.com/acme/api`, GH],
    [
      'github-token',
      'GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF',
      'github_pat_11ABC',
    ],
    ['github-token', 'gho_16C7e42F292c6912E7710c838347Ae178B4a is an OAuth token', 'gho_16C7e42F'],
    [
      'gitlab-token',
      'git remote set-url origin https://oauth2:glpat-Xy7bQ2mK9pL4nR8sT1vW@gitlab.com/a/b',
      'glpat-Xy7bQ',
    ],
    ['huggingface-token', 'HF login with hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 now', 'hf_AbCdEfGh'],
    ['anthropic-key', `client = Anthropic(api_key=${ANT})`, ANT],
    ['openai-key', 'OPENAI: sk-proj-4fG7hJ2kL9mN3pQ6rS8tU1vW5xY0zA2bC4dE', 'sk-proj-4fG7'],
    [
      'slack-token',
      'token xoxb-2934857234-2398472398472-abcDEFghiJKLmnoPQR in the bot config',
      'xoxb-2934857234',
    ],
    ['bearer-token', 'curl -H "Authorization: Bearer abc123DEF456ghi789" https://x', 'abc123DEF456ghi789'],
    [
      'jwt',
      'cookie: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'eyJzdWIiOiIxMjM0NTY3ODkwIn0',
    ],
    [
      'private-key',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7v\n-----END RSA PRIVATE KEY-----',
      'MIIEowIBAAKCAQEA7v',
    ],
    [
      'private-key',
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off)',
      'b3BlbnNzaC1rZXktdjEA',
    ],
    ['assignment', `DB_PASSWORD=${PASSWORD} pnpm start`, PASSWORD],
    ['assignment', '{"api_key": "k-12345", "region": "eu"}', 'k-12345'],
    ['assignment', "secret: 'swordfish'", 'swordfish'],
    ['assignment', 'export STRIPE_TOKEN=abc-123-def-456', 'abc-123-def-456'],
    ['cli-flag', 'mysql --password s3cr3tpass -h db', 's3cr3tpass'],
    ['cli-password', 'curl -u bob:pa55word https://api.example.com', 'pa55word'],
    ['cli-password', 'curl --user "bob:pa55word" https://api.example.com', 'pa55word'],
    ['cli-password', 'mysql -h db -u root -pHunter2pass app', 'Hunter2pass'],
    ['cli-password', "mysqldump -u root -p'Hunter 2' app > dump.sql", 'Hunter 2'],
    ['url-credentials', 'DATABASE_URL=postgres://app:Pa55word@db:5432/app', 'Pa55word'],
    // Found by a walkthrough: forms that were stored whole.
    [
      'aws-secret-key',
      'aws configure set aws_secret_access_key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY12',
      'wJalrXUtnFEMIK7MDENG',
    ],
    ['assignment', 'SECRET_KEY_BASE=9a8b7c6d5e4f3a2b rails server', '9a8b7c6d5e4f3a2b'],
    ['assignment', 'export API_KEY_V2=k2-abcdef-ghijkl', 'k2-abcdef-ghijkl'],
    ['assignment', 'DB_PASSWORD_PROD=hunter22 ./deploy.sh', 'hunter22'],
    ['assignment', 'access_token=ya29.a0AfH6SMBx3jKq9Lr2Tz8WvYpNc4DeFgHiJk then', 'a0AfH6SMBx3jKq9Lr2Tz8'],
    ['cli-password', 'sshpass -p hunter22 ssh deploy@10.0.0.5', 'hunter22'],
    ['cli-password', 'docker login -u bob -p hunter22 registry.example.com', 'hunter22'],
    ['cli-password', "az login -u bob@example.com -p 'hunter 22'", 'hunter 22'],
    ['cookie', 'curl -H "Cookie: session=4f9a2c81d7e6b5a3; theme=dark" https://app', '4f9a2c81d7e6b5a3'],
    ['cookie', 'Set-Cookie: sid=s%3AQm9iLmxvZ2dlZCBpbg; Path=/; HttpOnly', 's%3AQm9iLmxvZ2dlZCBpbg'],
    ['cookie', 'curl -b "sid=4f9a2c81d7e6" https://app.example.com/me', '4f9a2c81d7e6'],
    // Found by a review of those: quoted cookie headers, a glued sshpass -p, sshpass's variable, more suffixes.
    ['cookie', 'fetch(url, { headers: { "Cookie": "sessionid=8c1f0e9d2b7a" } })', '8c1f0e9d2b7a'],
    ['cookie', "headers = {'Cookie': 'sid=8c1f0e9d2b7a; csrftoken=a1b2c3'}", '8c1f0e9d2b7a'],
    ['cli-password', 'sshpass -phunter22 ssh deploy@10.0.0.5', 'hunter22'],
    ['assignment', 'SSHPASS=hunter22 sshpass -e ssh deploy@10.0.0.5', 'hunter22'],
    ['assignment', 'API_KEY_PRIMARY=k9-abcdef-ghijkl', 'k9-abcdef-ghijkl'],
    ['stripe-key', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'sk_live_4eC39'],
    ['google-api-key', 'AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q', 'AIzaSyA1b2C3'],
    ['npm-token', '//registry.npmjs.org/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789', 'npm_abcdef'],
    [
      'high-entropy',
      'the signing key is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 for prod',
      '9f86d081884c7d659a2feaa0c55ad015',
    ],
  ];
  for (const [name, text, secret] of cases)
    it(`takes out ${name}: ${text.slice(0, 40)}`, () => {
      const r = redact(text);
      expect(r.text).not.toContain(secret);
      expect(r.found).toContain(name);
      expect(r.text).toContain(marker(name));
    });

  it('keeps what only looks like a secret: declarations, prose, paths, token counts', () => {
    for (const text of [
      'password: string;',
      'token: z.string().min(1),',
      'const token = req.headers.authorization;',
      'const password = getPassword();',
      'const token = await fetchToken();',
      'secret = None',
      'max_tokens=2000 and tokens: 1500',
      'Bearer tokens are checked by the auth middleware',
      'Token counts use o200k.',
      'the key is in /Users/Ann/Projects2024/cairn/apps/cli/src/hooks/redact.ts',
      'TOKEN=$GITHUB_TOKEN gh pr create',
      'if password == expected:',
      'commit 3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c fixed the parser',
      'see task-1234 and desk-lamp-5678',
      'mysql -u root -p app',
      'mysql -P 3306 -h db',
      'curl -u bob https://api.example.com',
      'git checkout -b fix-login-cookie',
      'curl -b cookies.txt https://app.example.com',
      'interface Req { cookie: string }',
      'docker run -p 8080:80 nginx',
      'sshpass is not installed',
      // Found by a review: kept, as code and commands.
      'sshpass -e ssh -p 2222 deploy@host',
      'sshpass -f ~/.pass ssh -p 2222 deploy@host',
      'docker login -u bob -p $DOCKER_PASSWORD registry.example.com',
      'helm registry login -u bob -p "$TOKEN" registry.example.com',
      'curl -b cookie-jar -c cookie-jar https://app.example.com',
      'curl -b ~/.cookies https://app.example.com',
      'client_secret = credentials.azureActiveDirectoryB2C.clientSecret',
      'secret = AWSSecretsManagerClient.getSecretValue',
      'token = this.authenticationServiceProvider.getToken',
      'token_test: test/fixtures/token_test.go',
      'token_base: cl100k',
    ]) {
      const r = redact(text);
      expect(r.text, text).toBe(text);
      expect(r.found, text).toEqual([]);
    }
  });

  it('names every pattern once and redacts keys and values deep inside objects', () => {
    const names = SECRET_PATTERNS.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    const found = new Set<string>();
    const out = redactDeep(
      {
        tool_input: {
          command: `echo ${GH}`,
          env: { OPENAI_API_KEY: 'plain-but-named', SECRET_KEY_BASE: 'also-named', count: 3 },
        },
        list: [`x ${AWS}`, 7, null, true],
      },
      found,
    );
    expect(out).toEqual({
      tool_input: {
        command: `echo ${marker('github-token')}`,
        env: { OPENAI_API_KEY: marker('assignment'), SECRET_KEY_BASE: marker('assignment'), count: 3 },
      },
      list: [`x ${marker('aws-access-key')}`, 7, null, true],
    });
    expect([...found].sort()).toEqual(['assignment', 'aws-access-key', 'github-token']);
  });
});

describe('HookOutbox', () => {
  const entry = (api: string, id: string, at: string): OutboxEntry => ({
    api,
    at,
    event: 'PostToolUse',
    namespace: NS,
    base: '/repo',
    memory: { namespace: NS, id, text: id },
  });

  it("takes one API's entries oldest first, leaves the others, and returns what was not sent", () => {
    const outbox = new HookOutbox(join(dir, 'state'));
    outbox.add(entry('http://b', 'b1', '2026-01-01T00:00:02Z'));
    outbox.add(entry('http://a', 'a2', '2026-01-01T00:00:03Z'));
    outbox.add(entry('http://a', 'a1', '2026-01-01T00:00:01Z'));
    const batch = outbox.take('http://a');
    expect(batch.entries.map((e) => e.memory!.id)).toEqual(['a1', 'a2']);
    // Tool calls, even redacted, are the user's only.
    expect(statSync(join(dir, 'state')).mode & 0o777).toBe(0o700);
    // A hook running meanwhile finds nothing of them: the claim is this one's.
    expect(outbox.take('http://a').entries).toEqual([]);
    batch.done(batch.entries.slice(1));
    expect(outbox.take('http://a').entries.map((e) => e.memory!.id)).toEqual(['a2']);
    expect(outbox.take('http://b').entries.map((e) => e.memory!.id)).toEqual(['b1']);
  });

  it("does not adopt a live hook's claim made a moment ago from an outbox last written minutes ago", () => {
    const outbox = new HookOutbox(join(dir, 'state'));
    outbox.add(entry('http://a', 'a1', '2026-01-01T00:00:01Z'));
    const old = new Date(Date.now() - 300_000);
    utimesSync(join(dir, 'state', 'hooks-outbox.jsonl'), old, old);
    // What a concurrent hook's take() does first: the rename keeps the outbox's old mtime.
    renameSync(
      join(dir, 'state', 'hooks-outbox.jsonl'),
      join(dir, 'state', `hooks-outbox.jsonl.claim-${process.pid}-${Date.now()}-x`),
    );
    expect(outbox.take('http://a').entries).toEqual([]);
  });

  it('adopts the claim of a hook that died mid-send, once it is a minute old', () => {
    const outbox = new HookOutbox(join(dir, 'state'));
    outbox.add(entry('http://a', 'a1', '2026-01-01T00:00:01Z'));
    outbox.take('http://a'); // never done: killed mid-send
    expect(outbox.take('http://a').entries).toEqual([]);
    const claim = readdirSync(join(dir, 'state')).find((f) => f.includes('.claim-'))!;
    // A claim is dated by its name (pid, ms), not its mtime: a dead pid's, two minutes old.
    renameSync(
      join(dir, 'state', claim),
      join(dir, 'state', `hooks-outbox.jsonl.claim-999999-${Date.now() - 120_000}-x-own`),
    );
    const batch = outbox.take('http://a');
    expect(batch.entries.map((e) => e.memory!.id)).toEqual(['a1']);
    batch.done([]);
    expect(readdirSync(join(dir, 'state')).filter((f) => f.includes('.claim-'))).toEqual([]);
  });
});
