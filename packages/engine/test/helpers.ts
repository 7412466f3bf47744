import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { CairnEngine, type EngineOptions } from '../src/index.js';

/** Opens engines on fresh temp data dirs and closes/removes them after each test. */
export function useEngines() {
  const open: Array<{ engine: CairnEngine; dir: string }> = [];
  afterEach(async () => {
    for (const { engine, dir } of open.splice(0)) {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  return {
    async open(opts: Partial<EngineOptions> = {}, dir = mkdtempSync(join(tmpdir(), 'cairn-engine-'))) {
      const engine = await CairnEngine.open({
        dataDir: dir,
        waitForIndex: true,
        persistIntervalMs: 0,
        ...opts,
      });
      open.push({ engine, dir });
      return engine;
    },
    tempDir: () => mkdtempSync(join(tmpdir(), 'cairn-engine-')),
  };
}

export const DAY = 86_400_000;
