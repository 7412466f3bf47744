// Worker-thread entry: looks keys up in a saved graph file, for an index audit, so a million native
// `contains` checks run beside the serving thread rather than on it, and, where the store says how, reads
// the keys here too. The file is mapped read-only for the call and let go after it; graph files are
// immutable, and one deleted meanwhile stays readable while mapped.
import { pathToFileURL } from 'node:url';
import type { GraphKeyLookup, OffThreadRead } from './hnsw-params.js';
import { createHnswIndex, releaseIndex, viewIndexFile } from './usearch-index.js';

/** Keys checked per native call: the keys are converted to BigInt a block at a time. */
const BLOCK = 65_536;

async function keysOf(keys: Float64Array | OffThreadRead): Promise<Float64Array> {
  if (keys instanceof Float64Array) return keys;
  const reader = (await import(pathToFileURL(keys.module).href)) as {
    default: (args: Record<string, unknown>) => Float64Array;
  };
  return reader.default(keys.args);
}

export default async function keysMissingFromFile(req: GraphKeyLookup): Promise<number[]> {
  // Read before the file is mapped: a look-up that cannot read its keys maps nothing.
  const keys = await keysOf(req.keys);
  const graph = createHnswIndex(req.dimensions, req.params);
  try {
    viewIndexFile(graph, req.path);
    const missing: number[] = [];
    for (let at = 0; at < keys.length; at += BLOCK) {
      const block = keys.subarray(at, at + BLOCK);
      const found = graph.contains(BigUint64Array.from(block, (k) => BigInt(k))) as boolean[];
      for (let i = 0; i < block.length; i++) if (!found[i]) missing.push(block[i]!);
    }
    return missing;
  } finally {
    releaseIndex(graph);
  }
}
