// Worker-thread task: embeds texts with a CPU-bound local embedder (the built-in hashing one), so the
// thread that runs the queues and SQLite is not the one hashing n-grams.
import type { Embedder } from '@cairn/core';
import { createEmbedder } from '../embedder-spec.js';

export interface EmbedTaskRequest {
  spec: string;
  dimensions: number;
  texts: string[];
}

const embedders = new Map<string, Embedder>();

export default async function embedTask(req: EmbedTaskRequest): Promise<Float32Array[]> {
  const key = `${req.spec}\u0000${req.dimensions}`;
  let e = embedders.get(key);
  if (!e) {
    e = createEmbedder(req.spec, { dimensions: req.dimensions });
    embedders.set(key, e);
  }
  return e.embed(req.texts);
}
