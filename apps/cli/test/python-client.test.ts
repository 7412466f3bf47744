import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAIN } from './cli-process.js';

// The Python client (clients/python) and its pytest suite, run as part of `pnpm test:all`: pytest starts
// a real `cairn serve` from the built CLI (apps/cli/dist/main.js) and checks every route against it, the
// route table against the server's OpenAPI document, retries against a local stub, and a pip install.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MODULES = ['httpx', 'pytest', 'setuptools', 'pip'];
const CANDIDATES = ['python3', '/usr/bin/python3'];
const TIMEOUT_MS = 240_000;

/** The first candidate Python that imports every module the suite needs; a clear error when none does. */
function findPython(): string {
  const tried: string[] = [];
  for (const python of CANDIDATES) {
    const probe = spawnSync(
      python,
      [
        '-c',
        `import importlib.util as u, sys; print(",".join(m for m in sys.argv[1:] if u.find_spec(m) is None))`,
        ...MODULES,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (probe.error) {
      tried.push(`${python}: ${probe.error.message}`);
      continue;
    }
    const missing = probe.stdout.trim();
    if (probe.status === 0 && missing === '') return python;
    tried.push(`${python}: ${probe.status === 0 ? `cannot import ${missing}` : probe.stderr.trim()}`);
  }
  throw new Error(
    `no Python that can run the Python client's tests (it needs ${MODULES.join(', ')}):\n  ${tried.join('\n  ')}\n` +
      'install them: apt-get install python3 python3-httpx python3-pytest python3-setuptools python3-pip ' +
      '(.ci/run does this when they are missing)',
  );
}

function run(cmd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: ROOT,
      env: {
        ...process.env,
        CAIRN_NODE: process.execPath,
        CAIRN_CLI: MAIN,
        PYTHONDONTWRITEBYTECODE: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    const timer = setTimeout(() => {
      output += `\n[killed after ${TIMEOUT_MS - 10_000} ms]`;
      child.kill('SIGKILL');
    }, TIMEOUT_MS - 10_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the Python client (clients/python)', () => {
  it(
    'passes its pytest suite against a real cairn serve',
    async () => {
      const python = findPython();
      const { code, output } = await run(python, [
        '-m',
        'pytest',
        'clients/python',
        '-q',
        '-p',
        'no:cacheprovider',
      ]);
      expect(code, `${python} -m pytest clients/python failed:\n${output}`).toBe(0);
      expect(output).toMatch(/\d+ passed/);
    },
    TIMEOUT_MS,
  );
});
