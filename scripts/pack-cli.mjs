#!/usr/bin/env node
// Packs the `cairn` command into one npm tarball that installs offline (`npm i -g ./cairn-<version>.tgz` on a
// machine with only Node): the CLI, every @cairn package it uses and every third-party dependency (with
// better-sqlite3's compiled addon and usearch's prebuilt ones) travel inside it as bundled dependencies, and
// the sample corpus for `cairn serve --demo` beside dist/.
// Usage: pnpm build && node scripts/pack-cli.mjs [out-dir]   (prints the tarball's path)
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const out = resolve(process.argv[2] ?? join(root, 'dist-pack'));
const staging = mkdtempSync(join(tmpdir(), 'cairn-pack-'));
const pnpm = (args) =>
  execFileSync('npx', ['-y', 'pnpm@10.34.9', ...args], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });

try {
  // A standalone copy of the CLI with a flat (hoisted) node_modules of production dependencies only,
  // workspace packages included as real folders.
  const app = join(staging, 'cairn');
  pnpm(['--filter', '@cairn/cli', 'deploy', '--prod', '--legacy', '--config.node-linker=hoisted', app]);
  rmSync(join(app, 'node_modules', '.pnpm'), { recursive: true, force: true });
  rmSync(join(app, 'node_modules', '.modules.yaml'), { force: true });

  // better-sqlite3's install script downloads a prebuilt addon or compiles one, both of which need a network
  // (or a compiler). The deployed copy already holds the addon built for this platform and Node ABI: use it
  // when it loads, and fall back to the original script only on another platform.
  const sqlitePkgPath = join(app, 'node_modules', 'better-sqlite3', 'package.json');
  const sqlitePkg = JSON.parse(readFileSync(sqlitePkgPath, 'utf8'));
  sqlitePkg.scripts.install = `node -e "require('./build/Release/better_sqlite3.node')" || ${sqlitePkg.scripts.install}`;
  writeFileSync(sqlitePkgPath, `${JSON.stringify(sqlitePkg, null, 2)}\n`);

  const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  const version = (name) =>
    JSON.parse(readFileSync(join(app, 'node_modules', ...name.split('/'), 'package.json'), 'utf8')).version;
  const dependencies = Object.fromEntries(Object.keys(pkg.dependencies).map((name) => [name, version(name)]));
  const packed = {
    name: 'cairn',
    version: pkg.version,
    description:
      'Cairn: hybrid (BM25 + vector) memory for AI agents, with explained rankings. CLI, HTTP API and MCP server.',
    license: pkg.license,
    type: 'module',
    bin: { cairn: './dist/main.js' },
    engines: { node: '>=20' },
    files: ['dist', 'examples', 'explorer', 'LICENSE', 'README.md'],
    dependencies,
    // Every dependency travels inside the tarball: installing it needs no registry and no compiler.
    bundleDependencies: Object.keys(dependencies),
  };
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(packed, null, 2)}\n`);
  mkdirSync(join(app, 'examples'), { recursive: true });
  copyFileSync(join(root, 'examples', 'agent-memories.jsonl'), join(app, 'examples', 'agent-memories.jsonl'));
  copyFileSync(join(root, 'LICENSE'), join(app, 'LICENSE'));
  // The web explorer's static files, where `cairn serve` looks for them beside dist/ (served at /ui).
  cpSync(join(root, 'apps', 'explorer', 'dist'), join(app, 'explorer'), { recursive: true });
  copyFileSync(join(root, 'README.md'), join(app, 'README.md'));

  // The tarball npm pack would write (a gzipped tar with everything under package/), made with tar itself:
  // npm 11's pack walks a bundled tree of this size through its arborist and dies ("Exit handler never
  // called"), while npm install reads the result as any packed package with bundled dependencies. Hard links
  // (pnpm's store is made of them) are stored as the files they point to: npm's extraction skips link entries.
  mkdirSync(out, { recursive: true });
  const tarball = join(out, `cairn-${pkg.version}.tgz`);
  const entries = ['package.json', ...packed.files, 'node_modules'];
  execFileSync(
    'tar',
    [
      '-czf',
      tarball,
      '--hard-dereference',
      '--transform',
      's,^,package/,',
      '--owner=0',
      '--group=0',
      ...entries,
    ],
    {
      cwd: app,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  process.stdout.write(`${tarball}\n`);
} finally {
  rmSync(staging, { recursive: true, force: true });
}
