// The saved HNSW graph files of a data folder, for benchmarks that force a rebuild.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Deletes a namespace's saved HNSW graphs, `<dataDir>/vectors/<space>/<safe-name>-<hash>.g<N>.usearch`,
 * in every space (the sidecar stays: it then names a missing file, and the next load rebuilds). Returns the
 * paths removed, relative to the folder.
 */
export function deleteIndexFiles(dataDir: string, namespace: string): string[] {
  const prefix = `${namespace.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-`;
  const removed: string[] = [];
  const root = join(dataDir, 'vectors');
  for (const space of readdirSync(root, { withFileTypes: true })) {
    if (!space.isDirectory()) continue;
    for (const f of readdirSync(join(root, space.name))) {
      if (f.startsWith(prefix) && /\.usearch(\.json)?$/.test(f)) {
        rmSync(join(root, space.name, f));
        removed.push(`vectors/${space.name}/${f}`);
      }
    }
  }
  return removed;
}
