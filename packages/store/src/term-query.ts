import type { NamespaceTermCounts } from './namespace-idf.js';

/** What a lookup needs to score one term: the FTS5 MATCH of the term (confined to a scope when given). */
export interface TermQuery {
  /** Cache identity: the rendered MATCH expression. */
  match: string;
  /** The bm25() call with the leg's column weights. */
  bm25: string;
  /**
   * The namespace a search is for, when it holds only part of the file (its MATCH is then confined to the
   * namespace's token): its own counts take the place of the file's in the term's idf (see
   * `NamespaceIdf`). Absent: scores as FTS5 gives them.
   */
  within?: NamespaceTermCounts;
}
