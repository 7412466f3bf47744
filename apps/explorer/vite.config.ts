import { defineConfig } from 'vite';

// The explorer is served by `cairn serve` under /ui/, so every asset URL is relative ('./'), and the
// bundle carries everything it needs: no CDN, no web fonts, no request to any other origin at run time.
export default defineConfig({
  root: 'src',
  base: './',
  // Preact's automatic JSX runtime through Vite's own transform; no Babel-based preset is needed.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist',
    emptyOutDir: true,
    target: 'es2022',
    // One small bundle; a source map helps a user reporting a bug without shipping it to every page load.
    sourcemap: true,
    assetsInlineLimit: 0,
  },
});
