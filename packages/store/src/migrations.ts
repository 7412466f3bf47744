import { randomUUID } from 'node:crypto';
import { CairnError, factId } from '@cairn/core';
import type Database from 'better-sqlite3';
import { scopeText } from './facet-tokens.js';
import { recountKeptCounts } from './kept-counts.js';

/**
 * Versioned schema migrations, applied in order inside one transaction each and recorded in
 * `PRAGMA user_version`. Never edit a shipped migration: add a new one.
 */
export interface Migration {
  version: number;
  description: string;
  up(db: Database.Database): void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'memories, FTS5 lexical index with sync triggers, embeddings and embedding spaces',
    up(db) {
      db.exec(`
        CREATE TABLE memories (
          key            INTEGER PRIMARY KEY,
          namespace      TEXT    NOT NULL,
          id             TEXT    NOT NULL,
          kind           TEXT    NOT NULL,
          title          TEXT,
          text           TEXT    NOT NULL,
          parts          TEXT    NOT NULL DEFAULT '',
          scope          TEXT    NOT NULL,
          session        TEXT,
          agent          TEXT,
          ts             INTEGER NOT NULL,
          tags           TEXT    NOT NULL DEFAULT '[]',
          meta           TEXT    NOT NULL DEFAULT '{}',
          importance     REAL    NOT NULL DEFAULT 0.5,
          content_hash   TEXT    NOT NULL,
          fingerprint    TEXT    NOT NULL,
          created_at     INTEGER NOT NULL,
          updated_at     INTEGER NOT NULL,
          superseded_by  TEXT,
          deleted_at     INTEGER,
          access_count   INTEGER NOT NULL DEFAULT 0,
          last_accessed  INTEGER,
          change_seq     INTEGER NOT NULL,
          UNIQUE (namespace, id)
        );
        CREATE INDEX memories_ns_session_ts ON memories (namespace, session, ts, key);
        CREATE INDEX memories_ns_ts ON memories (namespace, ts, key);
        CREATE INDEX memories_change_seq ON memories (change_seq);
        CREATE INDEX memories_ns_key ON memories (namespace, key);

        -- External-content FTS5 over title, text and code parts. "scope" holds one token per namespace
        -- so a MATCH can be confined to a namespace inside FTS5 itself; its bm25 weight is 0.
        CREATE VIRTUAL TABLE memories_fts USING fts5 (
          title, text, parts, scope,
          content = 'memories', content_rowid = 'key',
          tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
        );
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
          INSERT INTO memories_fts (rowid, title, text, parts, scope)
          VALUES (new.key, new.title, new.text, new.parts, new.scope);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, title, text, parts, scope)
          VALUES ('delete', old.key, old.title, old.text, old.parts, old.scope);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF title, text, parts, scope ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, title, text, parts, scope)
          VALUES ('delete', old.key, old.title, old.text, old.parts, old.scope);
          INSERT INTO memories_fts (rowid, title, text, parts, scope)
          VALUES (new.key, new.title, new.text, new.parts, new.scope);
        END;

        CREATE TABLE embedding_spaces (
          id          TEXT    PRIMARY KEY,
          model_id    TEXT    NOT NULL,
          dimensions  INTEGER NOT NULL,
          created_at  INTEGER NOT NULL,
          active      INTEGER NOT NULL DEFAULT 0,
          -- memories.change_seq up to which every memory has been embedded in this space
          cursor      INTEGER NOT NULL DEFAULT 0
        );

        -- seq is the memory's change_seq when embedded: a vector index that has applied every
        -- embedding up to seq S catches up by reading seq > S.
        CREATE TABLE embeddings (
          space         TEXT    NOT NULL REFERENCES embedding_spaces (id) ON DELETE CASCADE,
          key           INTEGER NOT NULL REFERENCES memories (key) ON DELETE CASCADE,
          namespace     TEXT    NOT NULL,
          content_hash  TEXT    NOT NULL,
          seq           INTEGER NOT NULL,
          vector        BLOB    NOT NULL,
          PRIMARY KEY (space, key)
        ) WITHOUT ROWID;
        CREATE INDEX embeddings_space_ns_seq ON embeddings (space, namespace, seq);
        CREATE INDEX embeddings_space_hash ON embeddings (space, content_hash);

        CREATE TABLE embed_failures (
          space   TEXT    NOT NULL,
          key     INTEGER NOT NULL REFERENCES memories (key) ON DELETE CASCADE,
          error   TEXT    NOT NULL,
          at      INTEGER NOT NULL,
          PRIMARY KEY (space, key)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 2,
    description: 'filter facets (kind, agent, session, tags, week) as tokens in the FTS scope column',
    up(db) {
      const rows = db
        .prepare('SELECT key, namespace, kind, agent, session, tags, ts FROM memories')
        .iterate() as Iterable<{
        key: number;
        namespace: string;
        kind: string;
        agent: string | null;
        session: string | null;
        tags: string;
        ts: number;
      }>;
      const updates: Array<[string, number]> = [];
      for (const r of rows) updates.push([scopeText({ ...r, tags: JSON.parse(r.tags) as string[] }), r.key]);
      // The AFTER UPDATE OF scope trigger re-indexes each row in FTS.
      const set = db.prepare('UPDATE memories SET scope = ? WHERE key = ?');
      for (const u of updates) set.run(...u);
    },
  },
  {
    version: 3,
    description: 'embedding spaces record the embedder spec that built them and whether they are complete',
    up(db) {
      db.exec(`
        ALTER TABLE embedding_spaces ADD COLUMN embedder TEXT;
        -- 'building' while a reindex fills a new space side by side; 'ready' once it may serve.
        ALTER TABLE embedding_spaces ADD COLUMN state TEXT NOT NULL DEFAULT 'ready';
        UPDATE embedding_spaces SET embedder = CASE
          WHEN dimensions = 768 THEN 'hash' ELSE 'hash:' || dimensions END
        WHERE model_id = 'cairn-hash-v1';
      `);
    },
  },
  {
    version: 4,
    description: 'memories.meta_seq stamps every change to a row, so in-memory catalogs can follow writes',
    up(db) {
      db.exec(`
        -- Set by every writer statement (insert, rewrite, metadata update, supersession, deletion) to a
        -- number above every other row's; existing rows keep 0 and are read whole on a catalog's first load.
        ALTER TABLE memories ADD COLUMN meta_seq INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX memories_meta_seq ON memories (meta_seq);
      `);
    },
  },
  {
    version: 5,
    description: 'embeddings.write_seq orders vectors as they were written, which vector indexes follow',
    up(db) {
      db.exec(`
        -- seq (the memory's change_seq) says which text a vector embeds, not when it was stored:
        -- distributed embed workers store batches in any order (a SIGKILLed worker's batch is retried
        -- 30 s later), so an index that caught up to seq S never read an older batch stored after.
        -- write_seq comes from one clock, taken inside each write transaction: SQLite serialises
        -- writers, so write_seq order is commit order across every process on the data folder.
        ALTER TABLE embeddings ADD COLUMN write_seq INTEGER NOT NULL DEFAULT 0;
        UPDATE embeddings SET write_seq = seq;
        DROP INDEX embeddings_space_ns_seq;
        CREATE INDEX embeddings_space_ns_write ON embeddings (space, namespace, write_seq);
        CREATE TABLE embedding_clock (
          id     INTEGER PRIMARY KEY CHECK (id = 0),
          value  INTEGER NOT NULL
        );
        INSERT INTO embedding_clock (id, value) VALUES (0, (SELECT coalesce(max(seq), 0) FROM embeddings));
      `);
    },
  },
  {
    version: 6,
    description:
      'contextual indexing: a turn is also indexed by the text of the memory before it in its session',
    up(db) {
      db.exec(`
        ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT '';
        -- The same rule as SessionContext, with its defaults (turns; 1,000 characters of the predecessor).
        UPDATE memories SET context = coalesce((
            SELECT substr(p.text, 1, 1000) FROM memories p
            WHERE p.namespace = memories.namespace AND p.session = memories.session AND p.deleted_at IS NULL
              AND (p.ts < memories.ts OR (p.ts = memories.ts AND p.key < memories.key))
            ORDER BY p.ts DESC, p.key DESC LIMIT 1), '')
        WHERE kind = 'turn' AND session IS NOT NULL AND deleted_at IS NULL;
        -- FTS5 tables cannot gain a column: drop and rebuild it from memories. The context column is last,
        -- so bm25() weights keep their positions.
        DROP TRIGGER memories_fts_ai;
        DROP TRIGGER memories_fts_ad;
        DROP TRIGGER memories_fts_au;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5 (
          title, text, parts, scope, context,
          content = 'memories', content_rowid = 'key',
          tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
        );
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
          INSERT INTO memories_fts (rowid, title, text, parts, scope, context)
          VALUES (new.key, new.title, new.text, new.parts, new.scope, new.context);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, title, text, parts, scope, context)
          VALUES ('delete', old.key, old.title, old.text, old.parts, old.scope, old.context);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF title, text, parts, scope, context ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, title, text, parts, scope, context)
          VALUES ('delete', old.key, old.title, old.text, old.parts, old.scope, old.context);
          INSERT INTO memories_fts (rowid, title, text, parts, scope, context)
          VALUES (new.key, new.title, new.text, new.parts, new.scope, new.context);
        END;
        INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
      `);
    },
  },
  {
    version: 7,
    description: 'a building embedding space records whether it is to be activated once its index is ready',
    up(db) {
      // The wish outlives the process that asked (a CLI beside a server, a server killed mid-reindex):
      // whichever process holds the writer role next finishes the build and activates.
      db.exec('ALTER TABLE embedding_spaces ADD COLUMN activate_when_ready INTEGER NOT NULL DEFAULT 0');
    },
  },
  {
    version: 8,
    description: 'the space a reindex replaced stays current (receives vectors) until a deadline',
    up(db) {
      // Epoch ms; NULL: not kept current. Set at activation for the previously active space, so going
      // back within the grace period is an instant switch rather than another reindex.
      db.exec('ALTER TABLE embedding_spaces ADD COLUMN current_until INTEGER');
    },
  },
  {
    version: 9,
    description: 'embeddings is a rowid table, so a vector costs about its bytes instead of a page',
    up(db) {
      // In a WITHOUT ROWID table a row is stored like an index entry, inline only up to ~1 KB on a 4 KiB
      // page: every 384-d or 768-d vector spilled into an overflow page of its own, so a 384-d space cost
      // as much disk as a 768-d one. A rowid table keeps rows of up to ~4 KB inline.
      db.exec(`
        CREATE TABLE embeddings_rowid (
          space         TEXT    NOT NULL REFERENCES embedding_spaces (id) ON DELETE CASCADE,
          key           INTEGER NOT NULL REFERENCES memories (key) ON DELETE CASCADE,
          namespace     TEXT    NOT NULL,
          content_hash  TEXT    NOT NULL,
          seq           INTEGER NOT NULL,
          write_seq     INTEGER NOT NULL DEFAULT 0,
          vector        BLOB    NOT NULL,
          UNIQUE (space, key)
        );
        INSERT INTO embeddings_rowid (space, key, namespace, content_hash, seq, write_seq, vector)
          SELECT space, key, namespace, content_hash, seq, write_seq, vector FROM embeddings ORDER BY space, key;
        DROP TABLE embeddings;
        ALTER TABLE embeddings_rowid RENAME TO embeddings;
        CREATE INDEX embeddings_space_ns_write ON embeddings (space, namespace, write_seq);
        CREATE INDEX embeddings_space_hash ON embeddings (space, content_hash);
      `);
    },
  },
  {
    version: 10,
    description: 'multi-route recall: named fields, each indexed lexically and by vector as a route',
    up(db) {
      db.exec(`
        -- One row per (memory, field). A field rewritten gets a new row, so ids only grow (AUTOINCREMENT):
        -- the embed stage's route cursor reads id > cursor, and ids are taken under SQLite's write lock, so
        -- their order is commit order across processes.
        CREATE TABLE memory_routes (
          id     INTEGER PRIMARY KEY AUTOINCREMENT,
          key        INTEGER NOT NULL REFERENCES memories (key) ON DELETE CASCADE,
          namespace  TEXT    NOT NULL,
          route      TEXT    NOT NULL,
          text       TEXT    NOT NULL,
          -- the namespace token and the route's token: a route's MATCH is confined inside FTS5
          scope      TEXT    NOT NULL,
          UNIQUE (key, route)
        );
        CREATE INDEX memory_routes_ns_route ON memory_routes (namespace, route);
        CREATE VIRTUAL TABLE routes_fts USING fts5 (
          text, scope,
          content = 'memory_routes', content_rowid = 'id',
          tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
        );
        CREATE TRIGGER routes_fts_ai AFTER INSERT ON memory_routes BEGIN
          INSERT INTO routes_fts (rowid, text, scope) VALUES (new.id, new.text, new.scope);
        END;
        CREATE TRIGGER routes_fts_ad AFTER DELETE ON memory_routes BEGIN
          INSERT INTO routes_fts (routes_fts, rowid, text, scope) VALUES ('delete', old.id, old.text, old.scope);
        END;
        -- A route's vector per embedding space; dropped with its route row or its space.
        CREATE TABLE route_embeddings (
          id         INTEGER PRIMARY KEY AUTOINCREMENT,
          space      TEXT    NOT NULL REFERENCES embedding_spaces (id) ON DELETE CASCADE,
          route_id   INTEGER NOT NULL REFERENCES memory_routes (id) ON DELETE CASCADE,
          key        INTEGER NOT NULL,
          namespace  TEXT    NOT NULL,
          route      TEXT    NOT NULL,
          vector     BLOB    NOT NULL,
          UNIQUE (space, route_id)
        );
        CREATE INDEX route_embeddings_read ON route_embeddings (space, namespace, route, id);
        CREATE INDEX route_embeddings_route ON route_embeddings (route_id);
        -- memory_routes.id up to which every route has been embedded in the space
        ALTER TABLE embedding_spaces ADD COLUMN route_cursor INTEGER NOT NULL DEFAULT 0;
      `);
    },
  },
  {
    version: 11,
    description: 'facts whose slot holds a colon take the one-to-one id of factId',
    up(db) {
      // `fact:<slot>:<key>` made (user:home, city) and (user, home:city) one fact. Writes now derive
      // `fact::<length>:<slot>:<key>` for a slot with a colon; a fact stored before under the old form
      // would otherwise never be replaced again, and live on beside its successor. Only ids that are
      // exactly the old derivation of their own meta are renamed; where the new id is taken already (the
      // fact was written again after the change), the old row is superseded by it instead.
      const rows = db
        .prepare(
          `SELECT key, namespace, id, json_extract(meta, '$.slot') AS slot, json_extract(meta, '$.key') AS k
           FROM memories
           WHERE id LIKE 'fact:%' AND json_valid(meta) AND instr(json_extract(meta, '$.slot'), ':') > 0`,
        )
        .all() as Array<{ key: number; namespace: string; id: string; slot: unknown; k: unknown }>;
      if (rows.length === 0) return;
      const taken = db.prepare('SELECT 1 FROM memories WHERE namespace = ? AND id = ?');
      const supersede = db.prepare(
        'UPDATE memories SET superseded_by = ?, meta_seq = ? WHERE key = ? AND superseded_by IS NULL',
      );
      const nextMeta = db.prepare('SELECT coalesce(max(meta_seq), 0) + 1 FROM memories').pluck();
      const rename = db.prepare('UPDATE memories SET id = ?, meta_seq = ? WHERE key = ?');
      const follow = db.prepare(
        'UPDATE memories SET superseded_by = ?, meta_seq = ? WHERE namespace = ? AND superseded_by = ?',
      );
      for (const r of rows) {
        if (typeof r.slot !== 'string' || typeof r.k !== 'string' || r.id !== `fact:${r.slot}:${r.k}`)
          continue;
        const id = factId(r.slot, r.k);
        if (taken.get(r.namespace, id)) supersede.run(id, nextMeta.get(), r.key);
        else rename.run(id, nextMeta.get(), r.key);
        follow.run(id, nextMeta.get(), r.namespace, r.id);
      }
    },
  },
  {
    version: 12,
    description: 'consolidation: near-duplicates merged into a newer memory, undoable',
    up(db) {
      db.exec(`
        -- One row per memory the consolidation job marked as superseded by a newer near-duplicate. The
        -- memory keeps its row in memories (superseded_by = the newer one's id): nothing is deleted, and an
        -- undo clears superseded_by and stamps undone_at, which also keeps the job from merging it again.
        CREATE TABLE consolidations (
          key        INTEGER PRIMARY KEY,
          namespace  TEXT    NOT NULL,
          by_key     INTEGER NOT NULL,
          cosine     REAL    NOT NULL,
          at         INTEGER NOT NULL,
          undone_at  INTEGER
        );
        CREATE INDEX consolidations_by ON consolidations (by_key);
        CREATE INDEX consolidations_ns ON consolidations (namespace, at);
        -- The embeddings (write_seq) of a space the near-duplicate pass has looked at.
        CREATE TABLE consolidation_cursor (
          space      TEXT    PRIMARY KEY,
          write_seq  INTEGER NOT NULL
        );
      `);
    },
  },
  {
    version: 13,
    description: "a memory's stated confidence, which enters its score",
    up(db) {
      // NULL: the writer stated none, which scores as certain. Metadata, like importance: changing it
      // re-stamps meta_seq, never change_seq (nothing to re-embed).
      db.exec('ALTER TABLE memories ADD COLUMN confidence REAL');
    },
  },
  {
    version: 14,
    description: 'validity windows (valid_from, valid_to), and fact slots as a filter facet',
    up(db) {
      db.exec('ALTER TABLE memories ADD COLUMN valid_from INTEGER');
      db.exec('ALTER TABLE memories ADD COLUMN valid_to INTEGER');
      // Facts written before carry their slot in meta only: give them the slot's scope token, so a search
      // within a slot narrows inside FTS5 as it does for new ones.
      const rows = db
        .prepare(
          `SELECT key, namespace, kind, agent, session, tags, ts, json_extract(meta, '$.slot') AS slot
           FROM memories WHERE json_valid(meta) AND json_type(meta, '$.slot') = 'text'`,
        )
        .all() as Array<{
        key: number;
        namespace: string;
        kind: string;
        agent: string | null;
        session: string | null;
        tags: string;
        ts: number;
        slot: string;
      }>;
      const set = db.prepare('UPDATE memories SET scope = ? WHERE key = ?');
      for (const r of rows) set.run(scopeText({ ...r, tags: JSON.parse(r.tags) as string[] }), r.key);
    },
  },
  {
    version: 15,
    description: "the consolidation job's read of a space's new vectors, in write order",
    up(db) {
      // Without it, each of the job's batches read every row of the space (vectors included) and sorted
      // them: 55 ms a batch at 100k memories even with nothing new, and a catch-up quadratic in the corpus.
      db.exec('CREATE INDEX embeddings_space_write ON embeddings (space, write_seq)');
    },
  },
  {
    version: 16,
    description: 'how a space keeps its vectors: f32, or i8 at a quarter of the bytes',
    up(db) {
      db.exec("ALTER TABLE embedding_spaces ADD COLUMN storage TEXT NOT NULL DEFAULT 'f32'");
    },
  },
  {
    version: 17,
    description:
      "each namespace's row count, kept by triggers: counting a million rows took 0.4 s of a cold search",
    // Memories are never written with INSERT OR REPLACE: its implicit delete fires no delete trigger (without
    // recursive_triggers), and the count would drift.
    up(db) {
      db.exec(`
        CREATE TABLE namespace_rows (namespace TEXT PRIMARY KEY, rows INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO namespace_rows (namespace, rows) SELECT namespace, count(*) FROM memories GROUP BY namespace;
        CREATE TRIGGER namespace_rows_ai AFTER INSERT ON memories BEGIN
          INSERT INTO namespace_rows (namespace, rows) VALUES (NEW.namespace, 1)
            ON CONFLICT (namespace) DO UPDATE SET rows = rows + 1;
        END;
        CREATE TRIGGER namespace_rows_ad AFTER DELETE ON memories BEGIN
          UPDATE namespace_rows SET rows = rows - 1 WHERE namespace = OLD.namespace;
        END;
        CREATE TRIGGER namespace_rows_au AFTER UPDATE OF namespace ON memories
          WHEN NEW.namespace IS NOT OLD.namespace BEGIN
          UPDATE namespace_rows SET rows = rows - 1 WHERE namespace = OLD.namespace;
          INSERT INTO namespace_rows (namespace, rows) VALUES (NEW.namespace, 1)
            ON CONFLICT (namespace) DO UPDATE SET rows = rows + 1;
        END;
      `);
    },
  },
  {
    version: 18,
    description:
      "each namespace's live, superseded and deleted counts, and each space's current vectors, kept by triggers",
    // `GET /v1/stats` grouped every memory and `GET /v1/spaces` joined every vector of a space with its
    // memory, on the serving thread: 75–165 ms and 280–430 ms at 100k memories, on every poll of a
    // dashboard or of `cairn spaces`, and every search behind one waited. The counts are kept as they
    // change instead, like namespace_rows' rows (migration 17), so reading them costs a row per namespace.
    // `kept-counts.ts` recounts them from the tables (tests compare the two after every kind of write).
    up(db) {
      db.exec(`
        ALTER TABLE namespace_rows ADD COLUMN live INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE namespace_rows ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE namespace_rows ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
        DROP TRIGGER namespace_rows_ai;
        DROP TRIGGER namespace_rows_ad;
        DROP TRIGGER namespace_rows_au;
        -- A row is in exactly one class: deleted (tombstoned), else superseded, else live.
        CREATE TRIGGER namespace_rows_ai AFTER INSERT ON memories BEGIN
          ${addRow('NEW')}
        END;
        CREATE TRIGGER namespace_rows_ad AFTER DELETE ON memories BEGIN
          ${subtractRow('OLD')}
        END;
        CREATE TRIGGER namespace_rows_au AFTER UPDATE OF namespace, superseded_by, deleted_at ON memories
          WHEN NEW.namespace IS NOT OLD.namespace OR (NEW.deleted_at IS NULL) <> (OLD.deleted_at IS NULL)
            OR (NEW.superseded_by IS NULL) <> (OLD.superseded_by IS NULL) BEGIN
          ${subtractRow('OLD')}
          ${addRow('NEW')}
        END;

        -- Per namespace and space: vectors that are current (embedded from the memory's present text,
        -- seq = change_seq) for a memory not deleted. What a complete space has one of per live memory.
        CREATE TABLE space_vectors (
          namespace  TEXT    NOT NULL,
          space      TEXT    NOT NULL,
          current    INTEGER NOT NULL,
          PRIMARY KEY (namespace, space)
        ) WITHOUT ROWID;
        -- A space's progress sums its rows; an update of \`current\` leaves this index as it is.
        CREATE INDEX space_vectors_space ON space_vectors (space);
        CREATE TRIGGER space_vectors_ai AFTER INSERT ON embeddings BEGIN
          ${addVector('NEW')}
        END;
        CREATE TRIGGER space_vectors_ad AFTER DELETE ON embeddings BEGIN
          ${subtractVector('OLD')}
        END;
        CREATE TRIGGER space_vectors_au AFTER UPDATE OF space, key, seq ON embeddings
          WHEN NEW.seq IS NOT OLD.seq OR NEW.key IS NOT OLD.key OR NEW.space IS NOT OLD.space BEGIN
          ${subtractVector('OLD')}
          ${addVector('NEW')}
        END;
        -- A memory's vectors stop (or start) being current when its text changes, or it is deleted (or
        -- written again). No trigger on insert: change_seq only grows and memories are never removed, so a
        -- new row's change_seq is newer than any vector's seq.
        CREATE TRIGGER space_vectors_mu AFTER UPDATE OF namespace, change_seq, deleted_at ON memories
          WHEN NEW.namespace IS NOT OLD.namespace OR NEW.change_seq IS NOT OLD.change_seq
            OR (NEW.deleted_at IS NULL) <> (OLD.deleted_at IS NULL) BEGIN
          ${subtractMemory('OLD')}
          ${addMemory('NEW')}
        END;
        -- BEFORE: the foreign key's ON DELETE CASCADE removes the memory's vectors before any AFTER
        -- trigger runs, and then there would be nothing left to count down.
        CREATE TRIGGER space_vectors_md BEFORE DELETE ON memories BEGIN
          ${subtractMemory('OLD')}
        END;
      `);
      recountKeptCounts(db);
    },
  },
  {
    version: 19,
    description: "a namespace's vector keys read from an index, not from the rows that hold the vectors",
    up(db) {
      // The index audit reads every key of a namespace's vectors (keys()): through (space, namespace,
      // write_seq) that was a row lookup per key, i.e. every vector's page, 110 ms at 100k on the serving
      // thread after each activation and start. With the key in the index it is a covered scan, ~10 ms.
      // The key is last, so the index still orders by write_seq for iterate() and the catch-ups.
      db.exec(`
        CREATE INDEX embeddings_space_ns_write_key ON embeddings (space, namespace, write_seq, key);
        DROP INDEX embeddings_space_ns_write;
      `);
    },
  },
  {
    version: 20,
    description:
      "common words' scored postings, kept by the writer so a new process need not score them again",
    up(db) {
      // Scoring a common word costs FTS5 10–41 ms at a million memories, paid by every new process (a
      // one-shot `cairn search`, a restarted server) on its first queries. A writer keeps what it scored
      // (term-postings.ts says when a saved row is still good); nothing else reads or writes this table, and
      // it can be emptied at any time. A rowid table: the blobs would overflow a WITHOUT ROWID row's pages.
      db.exec(`
        CREATE TABLE term_postings (
          cache_key     TEXT    NOT NULL UNIQUE,
          seq           INTEGER NOT NULL,
          watermark     INTEGER NOT NULL,
          max_per_term  INTEGER NOT NULL,
          corpus_rows   INTEGER NOT NULL,
          keys          BLOB    NOT NULL,
          scores        BLOB    NOT NULL
        );
      `);
    },
  },
  {
    version: 21,
    description:
      "a saved common word's count of rows, so that its new matches are scored without FTS5's walk",
    up(db) {
      // A word saved past the cap on matches did not know how many rows hold it, so the first search after
      // any write that said it had bm25() walk its whole doclist (2–7 ms a word at a million memories, for
      // every saved word a new process met). Rows saved before stay -1 (unknown) until saved again.
      db.exec('ALTER TABLE term_postings ADD COLUMN hits INTEGER NOT NULL DEFAULT -1');
    },
  },
  {
    version: 22,
    description: "the data folder's identity, which a distributed deployment binds its queues to",
    up(db) {
      // A worker started on a mistyped --data-dir once created a new folder and stored the deployment's
      // writes there, where no server read them. The queues (a Redis prefix) now record which folder is
      // theirs by this id (a copied folder keeps it, as it holds the same memories).
      db.exec('CREATE TABLE folder_identity (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL)');
      db.prepare('INSERT INTO folder_identity (id, created_at) VALUES (?, ?)').run(randomUUID(), Date.now());
    },
  },
  {
    version: 23,
    description:
      "receipts of queued batches' writes, so that a retried capture job writes nothing twice; tombstones by meta_seq",
    up(db) {
      // A capture job whose worker died after its commit ran again and counted its own memories as
      // unchanged, and could put an older text back over a write made in between (write-receipts.ts).
      // One row per queued batch (a single-memory HTTP write is a batch): `at` is indexed so the prune of
      // expired receipts, inside a write transaction, reads only what it deletes.
      db.exec(`
        CREATE TABLE write_receipts (id TEXT PRIMARY KEY, statuses TEXT NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX write_receipts_at ON write_receipts (at);`);
      // Every process's vector index lets go of memories deleted since its last look (CairnEngine's
      // forgetDeletes): a partial index holds only tombstones, so the look reads the deletes alone, not
      // every row written since (9 ms per 100k written rows without it).
      db.exec(
        'CREATE INDEX memories_deleted_by_meta_seq ON memories (meta_seq) WHERE deleted_at IS NOT NULL',
      );
    },
  },
  {
    version: 24,
    description: "one namespace's tombstones by meta_seq",
    up(db) {
      // A graph file drops the keys its namespace lost since the file was written (the vector package's
      // Tombstones), and `stats` counts them for every unloaded namespace: by namespace, that reads the
      // namespace's own tombstones, not every tenant's since the file's meta_seq.
      db.exec(
        'CREATE INDEX memories_deleted_by_namespace ON memories (namespace, meta_seq) WHERE deleted_at IS NOT NULL',
      );
    },
  },
  {
    version: 25,
    description: 'new rows enter the lexical indexes at the end of their write batch, not row by row',
    up(db) {
      // A Cairn writer indexes the rows a batch inserts itself, at the batch's end (PendingLexicalIndex: FTS5
      // wrote a segment per row under the triggers); cairn_writer_indexes_fts(), which it defines on its
      // connection, is 1 only during its batches. A connection without the function (the sqlite3 shell)
      // fails its insert loudly rather than store a row no search can find. Updates and deletes keep
      // their triggers.
      db.exec(`
        DROP TRIGGER memories_fts_ai;
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories WHEN NOT cairn_writer_indexes_fts() BEGIN
          INSERT INTO memories_fts (rowid, title, text, parts, scope, context)
          VALUES (new.key, new.title, new.text, new.parts, new.scope, new.context);
        END;
        DROP TRIGGER routes_fts_ai;
        CREATE TRIGGER routes_fts_ai AFTER INSERT ON memory_routes WHEN NOT cairn_writer_indexes_fts() BEGIN
          INSERT INTO routes_fts (rowid, text, scope) VALUES (new.id, new.text, new.scope);
        END;`);
    },
  },
  {
    version: 26,
    description: "when each memory's vector in a space was first written",
    up(db) {
      // A saved graph holds the vectors written up to its watermark; the vectors written after it are
      // caught up by a load, new keys added and rewritten ones replaced. `stats` counts an unloaded
      // namespace as the file plus those, so it needs to know which were rewrites of keys the file holds:
      // a vector first written at or before the watermark. Rows from before this migration get it on their
      // next rewrite: their previous write_seq, no earlier than their first, so a file is never credited
      // with a vector it may not hold.
      db.exec('ALTER TABLE embeddings ADD COLUMN first_write_seq INTEGER');
    },
  },
  {
    version: 27,
    description: "SQLite's statistics table created with the schema",
    up(db) {
      // A store's close runs `PRAGMA optimize`, whose first ANALYZE creates sqlite_stat1: a schema change.
      // Another process opening the same new folder at that moment failed to prepare a statement on the
      // FTS5 tables ("vtable constructor failed", SQLITE_SCHEMA). Created here, under the migration lock,
      // later ANALYZEs only write rows, which moves no schema version.
      db.exec('ANALYZE sqlite_schema');
    },
  },
  {
    version: 28,
    description: "the idf a saved term's scores carry, so a search of one namespace can put its own in place",
    up(db) {
      // A term confined to a namespace's token has its scores weighed by the namespace's idf over the idf
      // they carry (term-postings.ts). Read back from a loaded copy, that idf absorbed what changed since it
      // was saved (the file's average length; for a phrase highlight() cannot mark, the file's count now).
      // Rows saved before stay NULL: a confined one is scored again rather than loaded.
      db.exec('ALTER TABLE term_postings ADD COLUMN idf REAL');
    },
  },
  {
    version: 29,
    description: 'the memories each memory hides, found by an index',
    up(db) {
      // A delete gives back (or, pruning, deletes) what its memory superseded or absorbed: without an
      // index each delete walked its namespace's rows. Partial: only hidden rows carry superseded_by.
      db.exec(
        'CREATE INDEX memories_superseded_by ON memories (namespace, superseded_by) WHERE superseded_by IS NOT NULL',
      );
    },
  },
];

// The trigger bodies of migration 18, for a row named `r` (NEW or OLD). Shipped SQL: never edit these,
// write a new migration that replaces the triggers.
const LIVE = (r: string) => `(${r}.deleted_at IS NULL AND ${r}.superseded_by IS NULL)`;
const SUPERSEDED = (r: string) => `(${r}.deleted_at IS NULL AND ${r}.superseded_by IS NOT NULL)`;
const DELETED = (r: string) => `(${r}.deleted_at IS NOT NULL)`;
const addRow = (r: string) => `
  INSERT INTO namespace_rows (namespace, rows, live, superseded, deleted)
    VALUES (${r}.namespace, 1, ${LIVE(r)}, ${SUPERSEDED(r)}, ${DELETED(r)})
    ON CONFLICT (namespace) DO UPDATE SET rows = rows + 1, live = live + excluded.live,
      superseded = superseded + excluded.superseded, deleted = deleted + excluded.deleted;`;
const subtractRow = (r: string) => `
  UPDATE namespace_rows SET rows = rows - 1, live = live - ${LIVE(r)},
    superseded = superseded - ${SUPERSEDED(r)}, deleted = deleted - ${DELETED(r)}
    WHERE namespace = ${r}.namespace;`;
const addVector = (e: string) => `
  INSERT INTO space_vectors (namespace, space, current)
    SELECT m.namespace, ${e}.space, 1 FROM memories m
    WHERE m.key = ${e}.key AND m.change_seq = ${e}.seq AND m.deleted_at IS NULL
    ON CONFLICT (namespace, space) DO UPDATE SET current = current + 1;`;
const subtractVector = (e: string) => `
  UPDATE space_vectors SET current = current - 1 WHERE space = ${e}.space AND namespace =
    (SELECT m.namespace FROM memories m WHERE m.key = ${e}.key AND m.change_seq = ${e}.seq AND m.deleted_at IS NULL);`;
// Per space of the namespace, a probe of embeddings' (space, key) index.
const subtractMemory = (m: string) => `
  UPDATE space_vectors SET current = current - 1
    WHERE ${m}.deleted_at IS NULL AND namespace = ${m}.namespace AND EXISTS (SELECT 1 FROM embeddings e
      WHERE e.space = space_vectors.space AND e.key = ${m}.key AND e.seq = ${m}.change_seq);`;
const addMemory = (m: string) => `
  INSERT INTO space_vectors (namespace, space, current)
    SELECT ${m}.namespace, e.space, 1 FROM embeddings e
    WHERE ${m}.deleted_at IS NULL AND e.space IN (SELECT id FROM embedding_spaces) AND e.key = ${m}.key
      AND e.seq = ${m}.change_seq
    ON CONFLICT (namespace, space) DO UPDATE SET current = current + 1;`;

export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new CairnError(
      'STORAGE_ERROR',
      `the database schema is version ${current}, newer than this build of Cairn understands (${latest}); upgrade Cairn`,
    );
  }
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      // Read again under the write lock: two processes opening a fresh folder at once (two workers) both
      // saw version 0 above, and the second ran migration 1 again ("table memories already exists").
      if ((db.pragma('user_version', { simple: true }) as number) >= m.version) return;
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
  return latest;
}
