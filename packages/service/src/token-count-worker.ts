// The tokenizer thread's side (see tokenizer-thread.ts): loads the o200k tables once, then counts the texts
// of each message, in order, with the very function the calling thread would use.
import { parentPort } from 'node:worker_threads';
import { countTokens } from './token-counter.js';

countTokens('load the tables now');
// Loaded: the owner may terminate this thread from now on (see TokenizerThread.close).
parentPort?.postMessage({ ready: true });

parentPort?.on('message', (m: { id: number; texts: string[] }) => {
  parentPort?.postMessage({ id: m.id, counts: m.texts.map((t) => countTokens(t)) });
});
