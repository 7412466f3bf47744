// Worker-thread entry: looks keys up in a saved graph file, for an index audit, so a million native
// `contains` checks run beside the serving thread rather than on it. The file is mapped read-only for the
// call and let go after it; graph files are immutable, and one deleted meanwhile stays readable while mapped.
import type { GraphKeyLookup } from './hnsw-params.js';
import { createHnswIndex, releaseIndex, viewIndexFile } from './usearch-index.js';

/** Keys checked per native call: the keys are converted to BigInt a block at a time. */
const BLOCK = 65_536;

export default function keysMissingFromFile(req: GraphKeyLookup): number[] {
  const graph = createHnswIndex(req.dimensions, req.params);
  try {
    viewIndexFile(graph, req.path);
    const missing: number[] = [];
    for (let at = 0; at < req.keys.length; at += BLOCK) {
      const block = req.keys.subarray(at, at + BLOCK);
      const found = graph.contains(BigUint64Array.from(block, (k) => BigInt(k))) as boolean[];
      for (let i = 0; i < block.length; i++) if (!found[i]) missing.push(block[i]!);
    }
    return missing;
  } finally {
    releaseIndex(graph);
  }
}
