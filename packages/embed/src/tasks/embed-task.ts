// Worker-thread task: embeds texts with a CPU-bound local embedder (the built-in hashing one), so the
// thread that runs the queues and SQLite is not the one hashing n-grams.
import { threadEmbedder } from '../thread-embedder.js';

export interface EmbedTaskRequest {
  spec: string;
  dimensions: number;
  texts: string[];
}

export default async function embedTask(req: EmbedTaskRequest): Promise<Float32Array[]> {
  return threadEmbedder(req.spec, req.dimensions).embed(req.texts);
}
