#!/usr/bin/env node
// Checks the workspace package graph: no cycles, and dependencies point down the layers
// (core ← adapters and the API contract ← router/pipeline/client ← engine ← service ← HTTP/MCP ← apps). Run by `pnpm check:graph` and CI.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const LAYER = {
  '@cairn/core': 0,
  '@cairn/store': 1,
  '@cairn/vector': 1,
  '@cairn/embed': 1,
  '@cairn/compute': 1,
  '@cairn/api-contract': 1,
  '@cairn/router': 2,
  '@cairn/pipeline': 2,
  '@cairn/client': 2,
  '@cairn/engine': 3,
  '@cairn/service': 4,
  '@cairn/http-server': 5,
  '@cairn/mcp': 5,
  '@cairn/cli': 6,
  '@cairn/explorer': 6,
  '@cairn/bench': 6,
};

/** The workspace packages a package's own sources load at run time (imports that are not `import type`). */
function runtimeImports(srcDir) {
  const found = new Set();
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name) && !/\.(test|spec)\.tsx?$/.test(entry.name)) {
        const text = readFileSync(path, 'utf8');
        for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+'(@cairn\/[a-z-]+)/gms))
          found.add(m[1]);
        for (const m of text.matchAll(/import\(\s*'(@cairn\/[a-z-]+)/g)) found.add(m[1]);
      }
    }
  };
  if (existsSync(srcDir)) walk(srcDir);
  return found;
}

const problems = [];
const pkgs = new Map();
for (const dir of ['packages', 'apps', '.']) {
  const base = join(root, dir);
  const entries = dir === '.' ? ['bench'] : readdirSync(base);
  for (const name of entries) {
    const file = join(base, name, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    // devDependencies are for tests only (a package may test against real adapters) and are not layered.
    const deps = Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@cairn/'));
    pkgs.set(pkg.name, deps);
    // What its sources load must be a dependency: a devDependency is missing once the package is installed
    // on its own (@cairn/engine loaded @cairn/embed, listed for tests only).
    for (const used of runtimeImports(join(base, name, 'src')))
      if (used !== pkg.name && !deps.includes(used))
        problems.push(`${pkg.name} loads ${used} at run time but does not list it in dependencies`);
  }
}

for (const [name, deps] of pkgs) {
  if (!(name in LAYER)) problems.push(`${name} has no layer in scripts/check-package-graph.mjs`);
  for (const d of deps) {
    if (!pkgs.has(d)) problems.push(`${name} depends on unknown workspace package ${d}`);
    else if (LAYER[d] >= LAYER[name])
      problems.push(`${name} (layer ${LAYER[name]}) must not depend on ${d} (layer ${LAYER[d]})`);
  }
}

const state = new Map();
const visit = (name, path) => {
  if (state.get(name) === 'done') return;
  if (state.get(name) === 'active') {
    problems.push(`dependency cycle: ${[...path, name].join(' → ')}`);
    return;
  }
  state.set(name, 'active');
  for (const d of pkgs.get(name) ?? []) visit(d, [...path, name]);
  state.set(name, 'done');
};
for (const name of pkgs.keys()) visit(name, []);

if (problems.length > 0) {
  console.error(`package graph check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`package graph ok: ${pkgs.size} packages, no cycles, dependencies point down the layers`);
