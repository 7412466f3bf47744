// Runs every package's tests in one vitest process (`pnpm test:all`, CI). Each project keeps its own
// vitest.config.ts; `pnpm test` runs them package by package through turbo instead.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*'],
  },
});
