import type Database from 'better-sqlite3';
import type { PendingLexicalIndex } from './pending-lexical-index.js';

/** Which memories are indexed with the words of the memories around them in their session. */
export interface SessionContextOptions {
  /**
   * Kinds whose memories carry their neighbours' text in the lexical index's `context` column. A
   * conversation turn is often only findable through what it answers ("Yes, last Friday!") or through
   * the reply it got; an observation or a fact stands on its own. An empty list turns contextual
   * indexing off for new writes (existing rows keep theirs until rewritten). @defaultValue `['turn']`
   */
  kinds: readonly string[];
  /**
   * Also index a turn by the memory after it (the reply), not only the one before it (what it answers).
   * Off by default: on the LoCoMo dev conversations it adds recall@10 +0.011, but FTS5's bm25 normalises
   * by the length of the whole row, context included, so a turn carrying two neighbours ranks below an
   * observation that says the same words alone; on the recency set, where kinds mix, that cost a
   * current-state answer (bench/RESULTS.md). @defaultValue false
   */
  after: boolean;
  /**
   * At most this many characters of each neighbour are indexed, so one long summary beside a turn does
   * not swamp the turn's own length normalisation. @defaultValue 1_000
   */
  maxChars: number;
}

export const DEFAULT_SESSION_CONTEXT_OPTIONS: Readonly<SessionContextOptions> = Object.freeze({
  kinds: Object.freeze(['turn']),
  after: false,
  maxChars: 1_000,
});

interface Place {
  namespace: string;
  session: string | null;
  ts: number;
  key: number;
}

/**
 * Keeps `memories.context` equal to the text of the live memories just before and just after each
 * contextual memory in its session (same namespace and session, ordered by ts then key; the two joined by
 * a line break), so a write or a delete anywhere in a session re-derives its neighbours. The context never
 * crosses a namespace or a session, and never holds a deleted memory's words.
 *
 * A row whose context changes gets a new change_seq, as any rewrite does: the lexical leg's postings
 * cache re-scores it, and the embed stage finds its vector by content hash without calling the embedder.
 * Writers call this inside their own transaction.
 */
export class SessionContext {
  private readonly beforeText: Database.Statement;
  private readonly afterText: Database.Statement;
  private readonly predecessor: Database.Statement;
  private readonly successor: Database.Statement;
  private readonly current: Database.Statement;
  private readonly set: Database.Statement;
  private readonly kinds: ReadonlySet<string>;

  constructor(
    db: Database.Database,
    /** The writer's pending index entries, settled before a neighbour's row is rewritten. */
    private readonly lexical: PendingLexicalIndex,
    private readonly opts: SessionContextOptions = DEFAULT_SESSION_CONTEXT_OPTIONS,
  ) {
    this.kinds = new Set(opts.kinds);
    // Every neighbour is one step along the (namespace, session, ts, key) index.
    const before = `namespace = ? AND session = ? AND deleted_at IS NULL AND (ts < ? OR (ts = ? AND key < ?))
       ORDER BY ts DESC, key DESC LIMIT 1`;
    const after = `namespace = ? AND session = ? AND deleted_at IS NULL AND (ts > ? OR (ts = ? AND key > ?))
       ORDER BY ts, key LIMIT 1`;
    this.beforeText = db.prepare(`SELECT substr(text, 1, ?) FROM memories WHERE ${before}`).pluck();
    this.afterText = db.prepare(`SELECT substr(text, 1, ?) FROM memories WHERE ${after}`).pluck();
    this.predecessor = db.prepare(`SELECT key, kind, ts FROM memories WHERE ${before}`);
    this.successor = db.prepare(`SELECT key, kind, ts FROM memories WHERE ${after}`);
    this.current = db.prepare('SELECT context FROM memories WHERE key = ?').pluck();
    this.set = db.prepare('UPDATE memories SET context = ?, change_seq = ?, meta_seq = ? WHERE key = ?');
  }

  /** The context a memory at this place in its session gets ('' when it has none or is not contextual). */
  contextFor(m: Place & { kind: string }): string {
    if (m.session === null || !this.kinds.has(m.kind)) return '';
    const at = [m.namespace, m.session, m.ts, m.ts, m.key] as const;
    const before = this.beforeText.get(this.opts.maxChars, ...at) as string | undefined;
    if (!this.opts.after) return before ?? '';
    const after = this.afterText.get(this.opts.maxChars, ...at) as string | undefined;
    return before === undefined ? (after ?? '') : after === undefined ? before : `${before}\n${after}`;
  }

  /**
   * Re-derives the context of the memories on either side of a place in a session (a memory was just
   * written there, moved away from it, or deleted from it). `takeSeq` / `takeMetaSeq` are called only
   * when a neighbour's context actually changes.
   */
  refreshNeighbours(place: Place, takeSeq: () => number, takeMetaSeq: () => number): void {
    if (place.session === null) return;
    const at = [place.namespace, place.session, place.ts, place.ts, place.key] as const;
    this.refresh(this.successor.get(...at), place, takeSeq, takeMetaSeq);
    if (this.opts.after) this.refresh(this.predecessor.get(...at), place, takeSeq, takeMetaSeq);
  }

  private refresh(row: unknown, place: Place, takeSeq: () => number, takeMetaSeq: () => number): void {
    const next = row as { key: number; kind: string; ts: number } | undefined;
    if (!next) return;
    const context = this.contextFor({ ...next, namespace: place.namespace, session: place.session });
    if ((this.current.get(next.key) as string) === context) return;
    this.lexical.settleMemory(next.key);
    this.set.run(context, takeSeq(), takeMetaSeq(), next.key);
  }
}
