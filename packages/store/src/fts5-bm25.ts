import type { StatementCache } from './statement-cache.js';

/** FTS5's bm25 constants (fts5_aux.c). */
const K1 = 1.2;
const B = 0.75;

/**
 * Past this many new matches a term is scored by FTS5's own bm25(): its idf walk costs about 24 ns a
 * document of the word, highlighting a row's columns a few microseconds, so thousands of new rows (a new
 * process on a saved copy far behind) cost about as much either way.
 */
const MAX_LOCAL_ROWS = 2_000;

/** A single word, quoted: what the lexical leg's MATCH is for one word, neither confined nor filtered. */
const ONE_WORD = /^"[\p{L}\p{N}_]+"$/u;
/** A phrase of words, quoted: the lexical leg's MATCH for a path's or an identifier's parts ("map job cache"). */
const PHRASE = /^"[\p{L}\p{N}_]+(?: [\p{L}\p{N}_]+)+"$/u;

/** The five column weights of `bm25(memories_fts, w0, …, w4)`, or null for any other call. */
export function bm25Weights(bm25: string): number[] | null {
  const m = bm25.match(/^bm25\(memories_fts((?:, *-?[0-9.eE+-]+){5})\)$/);
  if (!m) return null;
  const weights = m[1]!
    .split(',')
    .slice(1)
    .map((w) => Number(w.trim()));
  return weights.every(Number.isFinite) ? weights : null;
}

/**
 * A term whose new matches can be scored here, given its count of rows: one word, or a phrase whose matches
 * highlight() marks as bm25() counts them (see `markedOncePerMatch`), with five plain weights.
 */
export function isPlainTerm(term: { match: string; bm25: string }): boolean {
  return bm25Weights(term.bm25) !== null && markedOncePerMatch(term.match);
}

/**
 * Whether highlight() opens one mark per match of `match` in a column, as bm25() counts its matches. A
 * word's matches never overlap. A phrase's overlap only where a later word has the stem of its first ("test
 * tests" in "test test test": bm25() counts two, highlight() merges them into one mark), and Porter's stems
 * keep a word's first two letters (a word of one letter aside: "ies" stems to "i"), so a phrase of words
 * of two letters or more whose first two letters all differ is marked once per match. Case and diacritics
 * are folded as the tokenizer folds them. Repeated words ("src api src") are left to bm25().
 */
function markedOncePerMatch(match: string): boolean {
  if (ONE_WORD.test(match)) return true;
  if (!PHRASE.test(match)) return false;
  const words = match.slice(1, -1).split(' ');
  const heads = new Set<string>();
  for (const w of words) {
    const folded = w.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
    if (folded.length < 2 || heads.has(folded.slice(0, 2))) return false;
    heads.add(folded.slice(0, 2));
  }
  return true;
}

/** `scope : "…" AND (term)`: a term confined to a namespace's token (see renderFtsQuery). */
const CONFINED = /^scope : "[^"]*" AND \((.*)\)$/su;
/** `{title text parts} : term`: a term held to a memory's own columns (the leg without context). */
const COLUMN_FILTER = /^\{[a-z ]+\} : (.*)$/su;

/**
 * The idf FTS5 gives a term's scores: read back from the score of its match `key` (see `idfBehindScore`),
 * else, for a term confined to a namespace's token, from the count of rows holding it in the whole file (a
 * phrase whose matches highlight() does not mark one by one, such as "won t": one walk of its words'
 * positions, as scoring it cost). Null when neither tells.
 */
export function carriedIdf(
  statements: StatementCache,
  term: { match: string; bm25: string },
  key: number,
  score: number,
): number | null {
  return idfBehindScore(statements, term, key, score) ?? countedIdf(statements, term);
}

/**
 * A confined term's idf among the whole file's rows, counted; null for another term, or when the scope
 * column weighs (its phrase then has a share of every score).
 */
function countedIdf(statements: StatementCache, term: { match: string; bm25: string }): number | null {
  const confined = CONFINED.exec(term.match);
  if (!confined || bm25Weights(term.bm25)?.[3] !== 0) return null;
  return readingShadowTables(() => {
    const hits = statements
      .get('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?')
      .pluck()
      .get(confined[1]!) as number;
    return hits > 0 ? bm25Idf(corpusShape(statements).nRow, hits) : null;
  });
}

/**
 * How many rows a term's MATCH holds up to `maxKey`, counted: for a term confined to a namespace's token,
 * the namespace's own count behind its idf (a walk of the term's and the token's doclists).
 */
export function matchesUpTo(statements: StatementCache, term: { match: string }, maxKey: number): number {
  const all = statements
    .get('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?')
    .pluck()
    .get(term.match) as number;
  return all - rowsAbove(statements, term, maxKey);
}

/** Whether a term's MATCH is confined to a namespace's token. */
export function isConfined(match: string): boolean {
  return CONFINED.test(match);
}

/**
 * The idf FTS5's bm25() gave a term's match `key` its `score` with, read back from that score: the row's
 * weighted frequency (highlight()) and length (docsize) give its saturation, and the score is minus the idf
 * times it. Works for a word or a marked phrase, confined to a namespace's token or held to some columns:
 * FTS5 scores a phrase by the rows holding it in the whole file whatever else the MATCH asks, and the
 * scope token's column weighs 0. Null when it cannot be told: another shape of term, a scope column that
 * weighs, or a row that no longer holds the term. An idf clamped by FTS5 (a word in most rows) reads as
 * 1e-6, as FTS5 used it.
 */
function idfBehindScore(
  statements: StatementCache,
  term: { match: string; bm25: string },
  key: number,
  score: number,
): number | null {
  return readingShadowTables(() => readIdfBehindScore(statements, term, key, score));
}

function readIdfBehindScore(
  statements: StatementCache,
  term: { match: string; bm25: string },
  key: number,
  score: number,
): number | null {
  const weights = bm25Weights(term.bm25);
  const confined = CONFINED.exec(term.match);
  const match = confined ? confined[1]! : term.match;
  if (!weights || (confined && weights[3] !== 0) || !(score < 0)) return null;
  if (!markedOncePerMatch(COLUMN_FILTER.exec(match)?.[1] ?? match)) return null;
  const { columns, select } = highlightedColumns(weights);
  const row = statements
    .get(
      `SELECT rowid, ${select} FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))`,
    )
    .raw()
    .get(match, `[${key}]`) as [number, ...Array<string | null>] | undefined;
  if (row?.[0] !== key) return null;
  const idf = idfOfScore(
    statements,
    key,
    weightedFrequency(columns, weights, row.slice(1) as Array<string | null>),
    score,
  )?.idf;
  return idf !== undefined && Number.isFinite(idf) && idf > 0 ? idf : null;
}

/** SQLite's varints, one after another: big-endian, seven bits a byte, the ninth byte whole. */
function varints(bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; ) {
    let v = 0;
    for (let j = 0; j < 9; j++) {
      const byte = bytes[i++]!;
      if (j === 8) {
        v = v * 256 + byte;
        break;
      }
      v = v * 128 + (byte & 0x7f);
      if (!(byte & 0x80)) break;
    }
    out.push(v);
  }
  return out;
}

/** How many times `marker` occurs in `s` (null: none). */
function occurrences(s: string | null, marker: string): number {
  if (!s) return 0;
  let n = 0;
  for (let i = s.indexOf(marker); i >= 0; i = s.indexOf(marker, i + 1)) n++;
  return n;
}

/** The corpus's row count and average row length (in tokens), from FTS5's averages record. */
function corpusShape(statements: StatementCache): { nRow: number; avgdl: number } {
  const averages = varints(
    statements.get('SELECT block FROM memories_fts_data WHERE id = 1').pluck().get() as Uint8Array,
  );
  const nRow = averages[0]!;
  return { nRow, avgdl: averages.slice(1).reduce((a, b) => a + b, 0) / nRow };
}

/** bm25()'s idf of a term held by `nHit` of `nRow` rows (fts5_aux.c: a non-positive one is clamped to 1e-6). */
export function bm25Idf(nRow: number, nHit: number): number {
  const idf = Math.log((nRow - nHit + 0.5) / (nHit + 0.5));
  return idf <= 0 ? 1e-6 : idf;
}

/** The rows FTS5 counts in every idf (its averages record), or null where its shadow tables read otherwise. */
export function corpusRowCount(statements: StatementCache): number | null {
  return readingShadowTables(() => corpusShape(statements).nRow);
}

/** A row's length in tokens, all columns (FTS5's xColumnSize(-1)); null when it has none recorded. */
function rowLength(statements: StatementCache, key: number): number | null {
  const sz = statements.get('SELECT sz FROM memories_fts_docsize WHERE id = ?').pluck().get(key) as
    | Uint8Array
    | undefined;
  return sz ? varints(sz).reduce((a, b) => a + b, 0) : null;
}

/** bm25()'s saturation of a row's weighted frequency (fts5_aux.c: the factor beside the idf). */
function saturation(freq: number, length: number, avgdl: number): number {
  return (freq * (K1 + 1.0)) / (freq + K1 * (1 - B + (B * length) / avgdl));
}

/**
 * What a row's weighted frequency is read from: each weighted column's highlight() (instances in column
 * order, as FTS5's poslist holds them) beside the column's own value, so that a text holding the marker
 * already changes nothing.
 */
function highlightedColumns(weights: readonly number[]): { columns: number[]; select: string } {
  const columns = weights.flatMap((w, c) => (w === 0 ? [] : [c]));
  const select = columns
    .map((c) => `highlight(memories_fts, ${c}, char(1), ''), memories_fts.${COLUMN_NAMES[c]}`)
    .join(', ');
  return { columns, select };
}

/** A row's weighted frequency as bm25() adds it up, from `highlightedColumns`' values. */
function weightedFrequency(
  columns: readonly number[],
  weights: readonly number[],
  texts: ReadonlyArray<string | null>,
): number {
  let freq = 0;
  columns.forEach((c, i) => {
    const n = occurrences(texts[2 * i]!, '\u0001') - occurrences(texts[2 * i + 1]!, '\u0001');
    for (let k = 0; k < n; k++) freq += weights[c]!;
  });
  return freq;
}

/**
 * A plain word's or phrase's matches above `after` (see `isPlainTerm`), newest first, with each one's
 * weighted frequency as bm25() adds it up, those above `upTo` only counted. Null for any other term, or
 * one with more than `cap` matches there.
 */
function newMatchFrequencies(
  statements: StatementCache,
  term: { match: string; bm25: string },
  after: number,
  upTo: number,
  cap: number,
): { found: Array<{ key: number; freq: number }>; above: number } | null {
  const weights = bm25Weights(term.bm25);
  if (!weights || !markedOncePerMatch(term.match)) return null;
  const { columns, select } = highlightedColumns(weights);
  const rows = statements
    .get(`SELECT rowid, ${select} FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC`)
    .raw()
    .iterate(term.match) as IterableIterator<[number, ...Array<string | null>]>;
  const found: Array<{ key: number; freq: number }> = [];
  let above = 0;
  for (const [key, ...texts] of rows) {
    if (key <= after) break;
    if (key > upTo) {
      // Written since the caller's view (another process): FTS5 counts it in the idf all the same.
      above++;
      continue;
    }
    // Leaving the loop closes the statement.
    if (found.length === cap) return null;
    found.push({ key, freq: weightedFrequency(columns, weights, texts) });
  }
  return { found, above };
}

/**
 * A plain term's matches (see `isPlainTerm`) above `after` and up to `upTo`, scored as FTS5's bm25() scores
 * them, ascending by key, without bm25()'s first step: it walks the term's whole doclist to count the
 * documents holding it, for the idf (12–20 ms for the commonest kept words at a million memories, on every
 * search after a write that says the word; for a phrase of common words, such as a path's parts, it walks
 * their positions too). Here that count is `knownHits` (the matches up to `after`, which the caller holds
 * exactly) plus the new ones; each row's weighted frequency comes from highlight(), its length from the
 * docsize table, the corpus's row count and average length from FTS5's averages record, and the
 * arithmetic is bm25()'s (fts5_aux.c), in its order. Scores agree with FTS5's to within an ulp (its C `log`
 * and V8's `Math.log` may round the idf apart).
 *
 * Null when the term is not plain, or has too many new matches: the caller then has FTS5 score them.
 */
export function scoreNewMatchesLocally(
  statements: StatementCache,
  term: { match: string; bm25: string },
  after: number,
  upTo: number,
  knownHits: number,
): Array<[number, number]> | null {
  return readingShadowTables(() => scoreLocally(statements, term, after, upTo, knownHits));
}

function scoreLocally(
  statements: StatementCache,
  term: { match: string; bm25: string },
  after: number,
  upTo: number,
  knownHits: number,
): Array<[number, number]> | null {
  const scan = newMatchFrequencies(statements, term, after, upTo, MAX_LOCAL_ROWS);
  if (!scan) return null;
  const { found, above } = scan;
  if (found.length === 0) return [];
  const { nRow, avgdl } = corpusShape(statements);
  const idf = bm25Idf(nRow, knownHits + found.length + above);
  const out: Array<[number, number]> = [];
  for (let i = found.length - 1; i >= 0; i--) {
    const { key, freq } = found[i]!;
    const length = rowLength(statements, key);
    if (length === null) return null;
    out.push([key, -1.0 * (0 + idf * saturation(freq, length, avgdl))]);
  }
  return out;
}

/**
 * How many rows held a plain term when FTS5 gave `score` to its match `key` (the newest above `after`):
 * the document count behind the idf, read back from one score, so that a caller that had FTS5 score a
 * term's new matches once need not have its whole doclist walked again on the next. Null when it cannot
 * be told exactly (not a plain term, an idf clamped by FTS5 for a word in most rows, or a result that is
 * not within a hundredth of a whole number).
 */
export function documentsBehindScore(
  statements: StatementCache,
  term: { match: string; bm25: string },
  key: number,
  score: number,
): number | null {
  return readingShadowTables(() => countBehindScore(statements, term, key, score));
}

function countBehindScore(
  statements: StatementCache,
  term: { match: string; bm25: string },
  key: number,
  score: number,
): number | null {
  const scan = newMatchFrequencies(statements, term, key - 1, key, 1);
  const row = scan?.found.find((f) => f.key === key);
  return row ? countFromScore(statements, key, row.freq, score) : null;
}

/** The rows behind the idf of `score`, FTS5's bm25 of a term for row `key`, whose weighted frequency is `freq`. */
function countFromScore(statements: StatementCache, key: number, freq: number, score: number): number | null {
  const read = idfOfScore(statements, key, freq, score);
  if (!read) return null;
  const { idf, nRow } = read;
  // FTS5 clamps a non-positive idf to 1e-6: the count is then lost.
  if (!(idf > 1e-5)) return null;
  const e = Math.exp(idf);
  const n = (nRow + 0.5 - 0.5 * e) / (1 + e);
  const whole = Math.round(n);
  return Math.abs(n - whole) < 0.01 && whole >= 1 ? whole : null;
}

/**
 * The idf behind `score`, FTS5's bm25 of a term for row `key` whose weighted frequency is `freq`: minus the
 * score over the row's saturation (its length from docsize, the file's average length now), with the file's
 * row count. Null when the row has no recorded length, or the score or frequency says no match.
 */
function idfOfScore(
  statements: StatementCache,
  key: number,
  freq: number,
  score: number,
): { idf: number; nRow: number } | null {
  if (freq === 0 || score >= 0) return null;
  const length = rowLength(statements, key);
  if (length === null) return null;
  const { nRow, avgdl } = corpusShape(statements);
  return { idf: -score / saturation(freq, length, avgdl), nRow };
}

/**
 * How many rows hold a plain term up to `maxKey` (every namespace, as FTS5 counts them for the idf), for a
 * term whose newest match at or below `maxKey` FTS5 just gave `score` in the same read transaction (call
 * inside `StatementCache.snapshot`): read back from that score, or, when FTS5 clamped the idf (a word in
 * most rows), counted (a walk of the doclist: 24–43 ms for such a word at a million memories, paid once,
 * where the term is scored, beside a scoring that cost as much). Known, it lets every later new match of
 * the term be scored without bm25()'s walk (`scoreNewMatchesLocally`), in this process and, saved with the
 * term's postings, in every later one. -1 when not a plain term.
 */
export function wordRowsUpTo(
  statements: StatementCache,
  term: { match: string; bm25: string },
  newest: readonly [number, number],
  maxKey: number,
): number {
  if (!isPlainTerm(term)) return -1;
  const count = readingShadowTables(
    () => rowsHolding(statements, term, newest) - rowsAbove(statements, term, maxKey),
  );
  return count ?? -1;
}

/**
 * How many rows hold a plain term (every row, as FTS5's idf counts them), FTS5 having given `scored` one
 * (whose weighted frequency, when the caller read it, is `freq`).
 */
function rowsHolding(
  statements: StatementCache,
  term: { match: string; bm25: string },
  scored: readonly [number, number],
  freq?: number,
): number {
  const [key, score] = scored;
  return (
    (freq === undefined
      ? countBehindScore(statements, term, key, score)
      : countFromScore(statements, key, freq, score)) ??
    (statements
      .get('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?')
      .pluck()
      .get(term.match) as number)
  );
}

/** How many rows above `maxKey` hold a term: written since the caller's view, by another thread or process. */
function rowsAbove(statements: StatementCache, term: { match: string }, maxKey: number): number {
  let above = 0;
  const keys = statements
    .get('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC')
    .pluck()
    .iterate(term.match) as IterableIterator<number>;
  for (const key of keys) {
    if (key <= maxKey) break;
    above++;
  }
  return above;
}

/** What a term says of memories rewritten since it was scored. */
export interface RewrittenScores {
  /** Each memory's score as FTS5's bm25() gives it now; NaN for one that no longer holds the term. */
  scores: Map<number, number>;
  /** The rows holding the term up to `upTo` (every namespace), or -1 when not told. */
  hits: number;
}

/**
 * A plain term's scores (see `isPlainTerm`) for memories rewritten since it was scored (a write into a
 * session rewrites its neighbours' context), as FTS5's bm25() scores them now, read in one statement: the
 * rows that still hold the term with their weighted frequencies (highlight(), `rowid IN` a list, which FTS5
 * answers by a seek per key), then the count behind the idf from one bm25() (one walk of the doclist, read
 * back from its score), then bm25()'s arithmetic here. Scoring each memory by bm25() walked the whole
 * doclist per memory (1.5–4 ms each for a common word at 100k memories): under a stream of writes into
 * existing sessions, searches spent most of the serving thread there. Null for any other term, or when the
 * shadow tables read otherwise: the caller then has FTS5 score each one.
 */
export function scoreRewrittenLocally(
  statements: StatementCache,
  term: { match: string; bm25: string },
  keys: readonly number[],
  upTo: number,
): RewrittenScores | null {
  return readingShadowTables(() => statements.snapshot(() => rescoreLocally(statements, term, keys, upTo)));
}

function rescoreLocally(
  statements: StatementCache,
  term: { match: string; bm25: string },
  keys: readonly number[],
  upTo: number,
): RewrittenScores | null {
  const weights = bm25Weights(term.bm25);
  if (!weights || !markedOncePerMatch(term.match)) return null;
  const { columns, select } = highlightedColumns(weights);
  const wanted = new Set(keys);
  const list = JSON.stringify([...wanted]);
  const rows = statements
    .get(
      `SELECT rowid, ${select} FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))`,
    )
    .raw()
    .all(term.match, list) as Array<[number, ...Array<string | null>]>;
  const freqs = new Map<number, number>();
  // Only the keys asked for, once each, whatever FTS5 answers for a key that does not match.
  for (const [key, ...texts] of rows)
    if (wanted.has(key) && !freqs.has(key)) freqs.set(key, weightedFrequency(columns, weights, texts));
  const scores = new Map<number, number>();
  for (const key of wanted) if (!freqs.has(key)) scores.set(key, Number.NaN);
  if (freqs.size === 0) return { scores, hits: -1 };
  const probe = freqs.keys().next().value as number;
  const exact = statements
    .get(
      `SELECT rowid, ${term.bm25} FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))`,
    )
    .raw()
    .get(term.match, `[${probe}]`) as [number, number] | undefined;
  if (exact?.[0] !== probe) return null;
  // The probe's frequency is known: read back from its score without finding the row again (a walk from
  // the newest match down to it).
  const total = rowsHolding(statements, term, exact, freqs.get(probe));
  const { nRow, avgdl } = corpusShape(statements);
  const idf = bm25Idf(nRow, total);
  for (const [key, freq] of freqs) {
    const length = rowLength(statements, key);
    if (length === null) return null;
    scores.set(key, -1.0 * (0 + idf * saturation(freq, length, avgdl)));
  }
  return { scores, hits: total - rowsAbove(statements, term, upTo) };
}

/**
 * Runs a read of FTS5's shadow tables (`memories_fts_data`, `memories_fts_docsize`) as this version lays
 * them out; a table that is not there or reads otherwise (null) leaves the scoring to bm25(): slower, never
 * wrong.
 */
function readingShadowTables<T>(read: () => T | null): T | null {
  try {
    return read();
  } catch {
    return null;
  }
}

/** The FTS5 table's columns, in order (migrations: `memories_fts`). */
const COLUMN_NAMES = ['title', 'text', 'parts', 'scope', 'context'] as const;
