import type Database from 'better-sqlite3';

/** Which memories are indexed with the words of the memory before them in their session. */
export interface SessionContextOptions {
  /**
   * Kinds whose memories carry their predecessor's text in the lexical index's `context` column. A
   * conversation turn is often only findable through what it answers ("Yes, last Friday!"); an
   * observation or a fact stands on its own. An empty list turns contextual indexing off for new
   * writes (existing rows keep theirs until rewritten). @defaultValue `['turn']`
   */
  kinds: readonly string[];
  /**
   * At most this many characters of the predecessor are indexed, so one long summary before a turn does
   * not swamp the turn's own length normalisation. @defaultValue 1_000
   */
  maxChars: number;
}

export const DEFAULT_SESSION_CONTEXT_OPTIONS: Readonly<SessionContextOptions> = Object.freeze({
  kinds: Object.freeze(['turn']),
  maxChars: 1_000,
});

/**
 * Keeps `memories.context` equal to the text of the live memory just before each contextual memory in
 * its session (same namespace and session, ordered by ts then key), so a write or a delete anywhere in a
 * session re-derives its neighbours. The context never crosses a namespace or a session, and never holds
 * a deleted memory's words.
 *
 * A row whose context changes gets a new change_seq, as any rewrite does: the lexical leg's postings
 * cache re-scores it, and the embed stage finds its vector by content hash without calling the embedder.
 * Writers call this inside their own transaction.
 */
export class SessionContext {
  private readonly predecessor: Database.Statement;
  private readonly successor: Database.Statement;
  private readonly current: Database.Statement;
  private readonly set: Database.Statement;
  private readonly kinds: ReadonlySet<string>;

  constructor(
    db: Database.Database,
    private readonly opts: SessionContextOptions = DEFAULT_SESSION_CONTEXT_OPTIONS,
  ) {
    this.kinds = new Set(opts.kinds);
    // Both neighbours are one step along the (namespace, session, ts, key) index.
    this.predecessor = db
      .prepare(
        `SELECT substr(text, 1, ?) FROM memories
         WHERE namespace = ? AND session = ? AND deleted_at IS NULL AND (ts < ? OR (ts = ? AND key < ?))
         ORDER BY ts DESC, key DESC LIMIT 1`,
      )
      .pluck();
    this.successor = db.prepare(
      `SELECT key, kind, ts FROM memories
       WHERE namespace = ? AND session = ? AND deleted_at IS NULL AND (ts > ? OR (ts = ? AND key > ?))
       ORDER BY ts, key LIMIT 1`,
    );
    this.current = db.prepare('SELECT context FROM memories WHERE key = ?').pluck();
    this.set = db.prepare('UPDATE memories SET context = ?, change_seq = ?, meta_seq = ? WHERE key = ?');
  }

  /** The context a memory at this place in its session gets ('' when it has none or is not contextual). */
  contextFor(m: {
    namespace: string;
    session: string | null;
    kind: string;
    ts: number;
    key: number;
  }): string {
    if (m.session === null || !this.kinds.has(m.kind)) return '';
    const text = this.predecessor.get(this.opts.maxChars, m.namespace, m.session, m.ts, m.ts, m.key) as
      | string
      | undefined;
    return text ?? '';
  }

  /**
   * Re-derives the context of the memory that follows a place in a session (a memory was just written
   * there, moved away from it, or deleted from it). `takeSeq` / `takeMetaSeq` are called only when the
   * successor's context actually changes.
   */
  refreshSuccessor(
    place: { namespace: string; session: string | null; ts: number; key: number },
    takeSeq: () => number,
    takeMetaSeq: () => number,
  ): void {
    if (place.session === null) return;
    const next = this.successor.get(place.namespace, place.session, place.ts, place.ts, place.key) as
      | { key: number; kind: string; ts: number }
      | undefined;
    if (!next) return;
    const context = this.contextFor({ ...next, namespace: place.namespace, session: place.session });
    if ((this.current.get(next.key) as string) === context) return;
    this.set.run(context, takeSeq(), takeMetaSeq(), next.key);
  }
}
