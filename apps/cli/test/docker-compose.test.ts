import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Docker cannot run here, so the compose file is checked as Compose reads it: YAML merge keys resolved,
// `${VAR:-default}` / `${VAR:?error}` interpolated from a user's environment, each service's settings read.

const COMPOSE = fileURLToPath(new URL('../../../docker-compose.yml', import.meta.url));
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  extra_hosts?: string[];
  profiles?: string[];
}

function interpolate(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op?: string, arg?: string) => {
      const set = env[name];
      if (set !== undefined && set !== '') return set;
      if (op === '?') throw new Error(`compose refuses to start: ${name}: ${arg}`);
      return op === '-' ? (arg ?? '') : '';
    });
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

function services(env: Record<string, string>): Record<string, Service> {
  const doc = parse(readFileSync(COMPOSE, 'utf8'), { merge: true }) as { services: Record<string, Service> };
  return interpolate(doc.services, env) as Record<string, Service>;
}

const CAIRN = ['worker', 'api', 'embed', 'cli'];

describe('docker-compose.yml as Compose merges it', () => {
  const env = {
    CAIRN_API_KEYS: 'k=demo/*',
    CAIRN_EMBEDDER: 'ollama:nomic-embed-text',
    CAIRN_OLLAMA_URL: 'http://host.docker.internal:11434',
  };

  it('gives every Cairn service the same embedder and deployment settings', () => {
    const s = services(env);
    const shared = [
      'REDIS_URL',
      'CAIRN_DATA_DIR',
      'CAIRN_EMBEDDER',
      'CAIRN_OLLAMA_URL',
      'CAIRN_SHARDS',
      'CAIRN_QUEUE_PREFIX',
    ];
    const first = s.worker!.environment!;
    expect(first).toMatchObject({
      CAIRN_EMBEDDER: 'ollama:nomic-embed-text',
      REDIS_URL: 'redis://redis:6379',
    });
    for (const name of CAIRN) {
      const e = s[name]!.environment!;
      for (const key of shared) expect(e[key], `${name}.${key}`).toBe(first[key]);
    }
    expect(s.api!.environment!.CAIRN_API_KEYS).toBe('k=demo/*');
    expect(s.cli!.environment!.CAIRN_API_URL).toBe('http://api:7411');
  });

  it('publishes the API on localhost:7411 and resolves host.docker.internal on Linux', () => {
    const s = services(env);
    expect(s.api!.ports).toEqual(['7411:7411']);
    expect(services({ ...env, CAIRN_API_PORT: '8080' }).api!.ports).toEqual(['8080:7411']);
    for (const name of CAIRN)
      expect(s[name]!.extra_hosts, name).toContain('host.docker.internal:host-gateway');
  });

  it('refuses to start the API without keys, and every service runs a command the CLI knows', () => {
    expect(() => services({})).toThrow(/CAIRN_API_KEYS/);
    for (const name of CAIRN) {
      const command = services(env)[name]!.command!;
      const r = spawnSync(process.execPath, [MAIN, command[0]!, '--help'], { encoding: 'utf8' });
      expect(r.status, `${name}: ${r.stderr}`).toBe(0);
      for (const flag of command.slice(1).filter((a) => a.startsWith('--'))) expect(r.stdout).toContain(flag);
    }
  });
});
