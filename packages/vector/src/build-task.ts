// Worker-thread entry: builds and saves an HNSW index file. Runs inside @cairn/compute's piscina pool,
// so the native graph build never blocks the thread that serves queries.
import type { IndexBuildRequest, IndexBuildResult } from './hnsw-params.js';
import { inProcessIndexBuilder } from './usearch-index.js';

export default async function buildIndexTask(req: IndexBuildRequest): Promise<IndexBuildResult> {
  return inProcessIndexBuilder.build(req);
}
