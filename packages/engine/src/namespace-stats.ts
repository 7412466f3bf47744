import type { MemoryStore } from '@cairn/store';
import type { ServingSpace } from './serving-space.js';

/** The shape `cairn stats --json` prints; the distributed mode adds `queues`. */
export interface EngineStats {
  dataDir: string;
  space: string | null;
  namespaces: Record<string, NamespaceStats>;
}

export interface NamespaceStats {
  /** Live memories (neither superseded nor deleted). */
  stored: number;
  superseded: number;
  deleted: number;
  /** Memories with a vector in the active embedding space. */
  embedded: number;
  /**
   * Vectors the vector leg serves for the namespace: the loaded index's size, else the saved snapshot's.
   * A namespace with no snapshot is served exactly from its stored vectors, so then every embedded one.
   */
  indexed: number;
  /** Memories stored but not yet embedded. */
  pending: number;
  /** Memories the embedder refused. */
  failed: number;
  index: string;
  /** Named fields of the namespace's memories (multi-route recall), and how many have a vector in the active space. */
  fields: number;
  fieldsEmbedded: number;
}

/**
 * Counts per namespace for `stats`: kept counts and the serving space's index states, no scan.
 * `only` limits the (per-namespace) work to the namespaces a caller may see.
 */
export function countNamespaces(
  store: MemoryStore,
  serving: Pick<ServingSpace, 'space' | 'vectors'>,
  dataDir: string,
  only?: (namespace: string) => boolean,
): EngineStats {
  const namespaces: Record<string, NamespaceStats> = {};
  const { space, vectors } = serving;
  for (const ns of store.namespaces()) {
    if (only && !only(ns.namespace)) continue;
    // Current vectors (of the memories' present texts), a kept count: not a count of the space's rows.
    const embedded = space ? store.embeddings.currentCount(space.id, ns.namespace) : 0;
    const failed = space ? store.embeddings.failures(space.id, ns.namespace) : 0;
    const idx = vectors?.status(ns.namespace);
    const live = ns.live + ns.superseded;
    const fields = store.routeEmbeddings.counts(space?.id ?? null, ns.namespace);
    namespaces[ns.namespace] = {
      stored: ns.live,
      superseded: ns.superseded,
      deleted: ns.deleted,
      embedded,
      indexed: idx?.size ?? (idx?.state === 'building' ? 0 : embedded),
      pending: space ? Math.max(0, live - embedded - failed) : 0,
      failed,
      index: idx?.state ?? 'none',
      fields: fields.fields,
      fieldsEmbedded: fields.embedded,
    };
  }
  return { dataDir, space: space?.id ?? null, namespaces };
}
