import type Database from 'better-sqlite3';

/**
 * Counts that triggers keep as memories and vectors change (migrations 17 and 18), so `stats`, `spaces`
 * and `/metrics` read a row per namespace instead of grouping every memory or joining every vector with
 * its memory on the serving thread. This file holds their definition as queries over the tables: the
 * migration fills the counts from it, and `keptCountsDrift` compares the two.
 */

/** One namespace's memories by state; `rows` is all of them. */
export interface NamespaceRowCounts {
  namespace: string;
  rows: number;
  live: number;
  superseded: number;
  deleted: number;
}

/** Vectors of one space for one namespace that are current for a memory not deleted. */
export interface SpaceVectorCounts {
  namespace: string;
  space: string;
  current: number;
}

const COUNT_ROWS = `
  SELECT namespace, count(*) AS rows,
    sum(deleted_at IS NULL AND superseded_by IS NULL) AS live,
    sum(deleted_at IS NULL AND superseded_by IS NOT NULL) AS superseded,
    sum(deleted_at IS NOT NULL) AS deleted
  FROM memories GROUP BY namespace`;

const COUNT_VECTORS = `
  SELECT m.namespace, e.space, count(*) AS current
  FROM embeddings e JOIN memories m ON m.key = e.key
  WHERE m.deleted_at IS NULL AND e.seq = m.change_seq
  GROUP BY m.namespace, e.space`;

/** Sets the kept counts to what the tables hold: a full scan of memories and of embeddings. */
export function recountKeptCounts(db: Database.Database): void {
  // One transaction (a savepoint inside a migration's): no other writer's trigger lands in between.
  db.transaction(() =>
    db.exec(`
      DELETE FROM namespace_rows;
      INSERT INTO namespace_rows (namespace, rows, live, superseded, deleted) ${COUNT_ROWS};
      DELETE FROM space_vectors;
      INSERT INTO space_vectors (namespace, space, current) ${COUNT_VECTORS};
    `),
  ).immediate();
}

/**
 * Where the kept counts and the tables disagree (nothing when they agree). A full scan, for `cairn check`
 * and tests; rows counted 0 on both sides are not a disagreement.
 */
export function keptCountsDrift(db: Database.Database): string[] {
  const drift: string[] = [];
  const compare = <T extends object>(what: string, key: (r: T) => string, kept: T[], counted: T[]) => {
    const byKey = new Map(counted.map((r) => [key(r), r]));
    const seen = new Set<string>();
    for (const k of kept) {
      const c = byKey.get(key(k));
      seen.add(key(k));
      const zero = Object.values(k).every((v) => typeof v !== 'number' || v === 0);
      if (c === undefined ? !zero : JSON.stringify(c) !== JSON.stringify(k))
        drift.push(`${what} ${key(k)}: kept ${JSON.stringify(k)}, counted ${JSON.stringify(c ?? null)}`);
    }
    for (const [k, c] of byKey)
      if (!seen.has(k)) drift.push(`${what} ${k}: kept nothing, counted ${JSON.stringify(c)}`);
  };
  compare<NamespaceRowCounts>(
    'namespace',
    (r) => r.namespace,
    db
      .prepare('SELECT namespace, rows, live, superseded, deleted FROM namespace_rows')
      .all() as NamespaceRowCounts[],
    db.prepare(COUNT_ROWS).all() as NamespaceRowCounts[],
  );
  compare<SpaceVectorCounts>(
    'vectors of',
    (r) => `${r.namespace} in ${r.space}`,
    db.prepare('SELECT namespace, space, current FROM space_vectors').all() as SpaceVectorCounts[],
    db.prepare(COUNT_VECTORS).all() as SpaceVectorCounts[],
  );
  return drift;
}
