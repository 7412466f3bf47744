// Shared vitest settings for every package: resolve workspace packages to their TypeScript sources
// (the "@cairn/source" export condition) so tests never run against a stale dist/.
import { defineConfig } from 'vitest/config';

/** @param {import('vitest/config').UserConfig['test']} [test] */
export function sharedVitestConfig(test = {}) {
  return defineConfig({
    resolve: { conditions: ['@cairn/source'] },
    ssr: { resolve: { conditions: ['@cairn/source'] } },
    test: {
      include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
      testTimeout: 60_000,
      hookTimeout: 60_000,
      ...test,
    },
  });
}
