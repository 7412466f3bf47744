import { fileURLToPath } from 'node:url';
import type {
  GraphKeyLookup,
  GraphNeighborQuery,
  GraphNeighbors,
  IndexBuilder,
  IndexBuildRequest,
  IndexBuildResult,
} from './hnsw-params.js';

/** Anything that runs a task module on a worker thread, such as @cairn/compute's ComputePool. */
export interface TaskRunner {
  run<T>(taskFile: string, payload: unknown): Promise<T>;
}

/**
 * The compiled task file. Resolved relative to this module through `../dist/`, which names the same file
 * whether this module runs from `src/` (tests) or from `dist/`: worker threads need compiled JavaScript.
 */
export const BUILD_TASK_FILE = fileURLToPath(new URL('../dist/build-task.js', import.meta.url));

/** The compiled task file that looks keys up in a graph file (see `IndexBuilder.keysMissingFromFile`). */
export const GRAPH_LOOKUP_TASK_FILE = fileURLToPath(new URL('../dist/graph-lookup-task.js', import.meta.url));

/** The compiled task file that searches a graph file for many vectors (see `IndexBuilder.nearestInFile`). */
export const GRAPH_NEIGHBORS_TASK_FILE = fileURLToPath(
  new URL('../dist/graph-neighbors-task.js', import.meta.url),
);

/** An IndexBuilder that builds on a worker thread; the shared buffers in the request are not copied. */
export function workerIndexBuilder(runner: TaskRunner): IndexBuilder {
  return {
    build: (req: IndexBuildRequest) => runner.run<IndexBuildResult>(BUILD_TASK_FILE, req),
    keysMissingFromFile: (req: GraphKeyLookup) => runner.run<number[]>(GRAPH_LOOKUP_TASK_FILE, req),
    nearestInFile: (req: GraphNeighborQuery) => runner.run<GraphNeighbors>(GRAPH_NEIGHBORS_TASK_FILE, req),
  };
}
