// This file is the public API of @cairn/cli (for tests and embedding the CLI); named exports only.
export { requestFromFlags } from './commands/search.js';
export { MAX_LINE_BYTES, readJsonl } from './jsonl.js';
export { renderHits } from './render.js';
