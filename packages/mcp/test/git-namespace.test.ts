import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NAMESPACE_PATTERN } from '@cairn/core';
import { afterAll, describe, expect, it } from 'vitest';
import { gitNamespace, normalizeRemoteUrl, toNamespace } from '../src/index.js';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function tmp(name = 'cairn-git-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), name)));
  roots.push(dir);
  return dir;
}

/** Runs git with an identity given on the command line, so commits work on a machine without one. */
function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.name=Cairn Test', '-c', 'user.email=test@cairn.dev', ...args], {
    cwd,
    stdio: 'ignore',
  });
}

/** A repository at `<tmp>/<name>` with one commit, a subfolder and a linked worktree next to it. */
function repoWithWorktree(name: string) {
  const parent = tmp();
  const root = join(parent, name);
  mkdirSync(root);
  git(root, 'init', '-q');
  git(root, 'commit', '-q', '--allow-empty', '-m', 'init');
  const sub = join(root, 'src', 'deep');
  mkdirSync(sub, { recursive: true });
  const worktree = join(parent, `${name}-feature`);
  git(root, 'worktree', 'add', '-q', '-b', 'feature', worktree);
  const worktreeSub = join(worktree, 'lib');
  mkdirSync(worktreeSub);
  return { root, sub, worktree, worktreeSub };
}

const valid = (ns: string) => NAMESPACE_PATTERN.test(ns) && ns.length <= 128;

describe('gitNamespace', () => {
  it('is the same from the root, a subfolder and a linked worktree of a repository without a remote', () => {
    const r = repoWithWorktree('my api');
    const ns = gitNamespace(r.root);
    expect(ns).not.toBeNull();
    expect(ns).toMatch(/^repo\/my-api-[0-9a-f]{8}$/);
    expect(valid(ns!)).toBe(true);
    expect(gitNamespace(r.sub)).toBe(ns);
    expect(gitNamespace(r.worktree)).toBe(ns);
    expect(gitNamespace(r.worktreeSub)).toBe(ns);
  });

  it('tells apart two repositories with the same folder name', () => {
    const a = repoWithWorktree('api');
    const b = repoWithWorktree('api');
    expect(gitNamespace(a.root)).not.toBe(gitNamespace(b.root));
  });

  it('uses the origin URL without scheme, credentials and .git, from every worktree', () => {
    const r = repoWithWorktree('checkout');
    git(r.root, 'remote', 'add', 'origin', 'https://alice:s3cret@GitHub.com/Acme/api.git');
    const ns = gitNamespace(r.root);
    expect(ns).toBe('repo/github.com/Acme/api');
    expect(gitNamespace(r.sub)).toBe(ns);
    expect(gitNamespace(r.worktreeSub)).toBe(ns);
  });

  it('gives the same namespace for an https and an ssh clone of one repository', () => {
    const https = repoWithWorktree('one');
    const ssh = repoWithWorktree('two');
    git(https.root, 'remote', 'add', 'origin', 'https://github.com/acme/api');
    git(ssh.root, 'remote', 'add', 'origin', 'git@github.com:acme/api.git');
    expect(gitNamespace(https.root)).toBe('repo/github.com/acme/api');
    expect(gitNamespace(ssh.worktree)).toBe('repo/github.com/acme/api');
  });

  it('is null outside a git repository and for a missing folder', () => {
    const dir = tmp();
    expect(gitNamespace(dir)).toBeNull();
    expect(gitNamespace(join(dir, 'does-not-exist'))).toBeNull();
  });

  it('ignores GIT_DIR pointing at another repository', () => {
    const r = repoWithWorktree('hooked');
    const other = repoWithWorktree('other');
    const before = gitNamespace(r.root);
    const saved = process.env.GIT_DIR;
    process.env.GIT_DIR = join(other.root, '.git');
    try {
      expect(gitNamespace(r.sub)).toBe(before);
    } finally {
      if (saved === undefined) delete process.env.GIT_DIR;
      else process.env.GIT_DIR = saved;
    }
  });

  it('names a bare repository after its folder', () => {
    const parent = tmp();
    const bare = join(parent, 'store.git');
    execFileSync('git', ['init', '-q', '--bare', bare]);
    expect(gitNamespace(bare)).toMatch(/^repo\/store-[0-9a-f]{8}$/);
  });
});

describe('normalizeRemoteUrl', () => {
  it.each([
    ['https://github.com/acme/api.git', 'github.com/acme/api'],
    ['https://user:token@github.com/acme/api.git/', 'github.com/acme/api'],
    ['http://gitlab.example.com:8080/group/sub/proj', 'gitlab.example.com/group/sub/proj'],
    ['ssh://git@github.com:22/acme/api.git', 'github.com/acme/api'],
    ['git@github.com:acme/api.git', 'github.com/acme/api'],
    ['github.com:acme/api', 'github.com/acme/api'],
    ['git://host.xz/path/to/repo.git', 'host.xz/path/to/repo'],
    ['https://dev.azure.com/org/proj/_git/repo?version=1#x', 'dev.azure.com/org/proj/_git/repo'],
    ['file:///srv/git/api.git', 'srv/git/api'],
    ['/srv/git/api.git', 'srv/git/api'],
  ])('%s → %s', (url, want) => {
    expect(normalizeRemoteUrl(url)).toBe(want);
  });

  it('gives null for an empty or relative remote', () => {
    expect(normalizeRemoteUrl('')).toBeNull();
    expect(normalizeRemoteUrl('../api')).toBeNull();
  });
});

describe('toNamespace', () => {
  it('replaces characters outside the namespace alphabet and drops empty segments', () => {
    expect(toNamespace('repo/', 'host/~user//my repo (v2)')).toBe('repo/host/user/my-repo-v2');
  });

  it('cuts a long name to the limit, keeping it unique with a hash', () => {
    const long = `host/${'a'.repeat(200)}`;
    const ns = toNamespace('repo/', long)!;
    expect(valid(ns)).toBe(true);
    expect(ns).toMatch(/-[0-9a-f]{8}$/);
    expect(toNamespace('repo/', `${long}b`)).not.toBe(ns);
  });

  it('gives null when nothing usable remains', () => {
    expect(toNamespace('repo/', '///---')).toBeNull();
  });
});
