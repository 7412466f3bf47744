// Worker-thread entry: many vectors' nearest neighbours in a saved graph file, for a background job (the
// consolidation's near-duplicate pass), so its thousands of native searches run beside the serving thread
// rather than on it.
import { statSync } from 'node:fs';
import type { BatchMatches, Index, Matches } from 'usearch';
import type { GraphNeighborQuery, GraphNeighbors } from './hnsw-params.js';
import { createHnswIndex, nativeThreads, releaseIndex, viewIndexFile } from './usearch-index.js';

/**
 * The file this thread mapped last, kept for the next batch: a pass over a 100k catch-up asks for one file
 * 200 times, and mapping it each time cost 30–45 ms (a quarter of a batch's searches), while each
 * discarded index kept native memory until V8 collected its wrapper (a worker's RSS reached 1.5 GB). It is
 * known by its path and the file's identity (inode, size, change time): a path can name another file later
 * (a space dropped and built again starts at generation 1; a save renames a new file over the name). A
 * new file lets the old mapping go, so at most one deleted file per thread stays mapped.
 */
let mapped: { path: string; identity: string; graph: Index } | null = null;

function graphAt(req: GraphNeighborQuery): Index {
  const st = statSync(req.path);
  const identity = `${st.ino}:${st.size}:${st.ctimeMs}`;
  if (mapped?.path === req.path && mapped.identity === identity) return mapped.graph;
  if (mapped) releaseIndex(mapped.graph);
  mapped = null;
  const graph = createHnswIndex(req.dimensions, req.params);
  try {
    viewIndexFile(graph, req.path);
  } catch (err) {
    releaseIndex(graph);
    throw err;
  }
  mapped = { path: req.path, identity, graph };
  return graph;
}

export default function nearestInFile(req: GraphNeighborQuery): GraphNeighbors {
  const n = req.vectors.length / req.dimensions;
  const keys = new Float64Array(n * req.k);
  const cosines = new Float32Array(n * req.k);
  const counts = new Uint32Array(n);
  if (n === 0) return { keys, cosines, counts };
  const graph = graphAt(req);
  const k = Math.min(req.k, graph.size());
  if (k === 0) return { keys, cosines, counts };
  // One batch search: usearch splits the rows over its threads (searches, unlike inserts, are safe to run
  // at once). Native code must see an offset-0 buffer; a structured clone's is.
  const queries = req.vectors.byteOffset === 0 ? req.vectors : req.vectors.slice();
  // usearch's types read a flat matrix as one vector; a batch of more than one row answers a BatchMatches.
  const found = graph.search(queries, k, nativeThreads(req.threads)) as Matches | BatchMatches;
  for (let i = 0; i < n; i++) {
    const count = 'counts' in found ? Number(found.counts[i]) : found.keys.length;
    counts[i] = count;
    for (let j = 0; j < count; j++) {
      keys[i * req.k + j] = Number(found.keys[i * k + j]);
      cosines[i * req.k + j] = 1 - found.distances[i * k + j]!;
    }
  }
  return { keys, cosines, counts };
}
