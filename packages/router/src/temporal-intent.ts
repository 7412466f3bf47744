import { createRequire } from 'node:module';
import { isQueryStopWord, MS_PER_DAY, NO_TEMPORAL_INTENT, type TemporalIntent, tokenize } from '@cairn/core';
import type { ParsedResult } from 'chrono-node';

type ChronoEn = typeof import('chrono-node/en');
let chrono: ChronoEn | null = null;

/**
 * chrono's English parsers, loaded by the first query that may name a time. English only: the package's
 * main entry loads every locale (about 0.3 s of a one-shot command's start), and its `parse` is the English
 * casual parser anyway. Loaded on first use because even the English entry costs 0.1–0.2 s of module
 * loading, which a one-shot `cairn search` whose question names no time (most do not) never needs; a
 * long-lived engine loads it while it opens (warmTemporalParser). A synchronous require (of the package's
 * CommonJS build) keeps the detection synchronous for its callers.
 */
function chronoEn(): ChronoEn {
  chrono ??= createRequire(import.meta.url)('chrono-node/en') as ChronoEn;
  return chrono;
}

/**
 * Words that ask for the latest or current state. Kept short on purpose: each is a cue in everyday agent
 * questions ("the current deploy target", "do we still use fly.io?") and rarely part of a topic. "last"
 * counts only where it ends the question ("what did we decide last?") or as "the last time", since "last
 * name" or "the last step" are topics, and "recently" is left out: questions use it as narration ("what
 * did Maria paint recently?") at least as often as to ask for the newest.
 */
const RECENT_CUES: readonly RegExp[] = [
  /\b(latest|newest|most recent|currently|current|nowadays|these days|lately|at the moment|right now|anymore|any more|so far)\b/i,
  /\bstill\b/i,
  /\bnow\b/i,
  /\bthe last time\b/i,
  /\blast\s*[?.!]*\s*$/i,
];

/**
 * Words that ask for the first or an earlier state. "before" alone is left out: "before the release" names
 * an event, not the past in general.
 */
const EARLIEST_CUES: readonly RegExp[] = [
  /\b(originally|original|initially|initial|at first|at the start|in the beginning|earliest|first|used to|previously|back then|formerly)\b/i,
];

/**
 * What every phrase chrono's English parsers read as a time contains: a digit, a day, month or unit word,
 * or a casual word ("yesterday", "tonight", "ago"). Most questions have none, and chrono's parse cost
 * 0.25–0.7 ms a query, every query; over LoCoMo's 1,079 dev questions and this file's tests, chrono found a
 * time in 139, all of which pass this test, and 903 are skipped. Broad on purpose ("may", "sun", "mon" pass
 * too): a query it lets through costs a parse, one it wrongly skipped would lose its window.
 */
const MAY_NAME_A_TIME =
  /\d|\b(?:now|today|tonight|tomorrow|tmrw?|yesterday|morning|afternoon|evening|night|noon|midnight|ago|later|hence|weekends?|weekdays?|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|wks?|fortnights?|months?|mos?|quarters?|years?|yrs?|decades?|mon(?:day)?|tues?(?:day)?|wed(?:nesday)?|thu(?:rs?)?(?:day)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?|jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|christmas|xmas|eve|new year|an? (?:few|couple))\b/i;

/** "in 2024", "during 2023": a bare year, which chrono leaves alone. */
const YEAR_PHRASE = /\b(?:in|during|since|of|from|throughout)\s+((?:19|20)\d{2})\b(?!\s*[-/:.]\d)/i;

const startOfUtcDay = (ms: number) => Math.floor(ms / MS_PER_DAY) * MS_PER_DAY;
const addUtcMonths = (ms: number, n: number) => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1);
};

/**
 * What a query says about time, relative to `nowMs`. A named time wins over a recency cue ("what did we
 * ship last week?" is about that week, not about the newest memory). Windows are whole UTC days, weeks,
 * months or years; a date that would lie wholly in the future is a guess at the year and is ignored. A cue
 * for the earliest state wins over one for the latest ("what did we originally use, and what now?" names
 * the old one). Any other phrasing is `none`, and the default tie-break applies.
 */
export function detectTemporalIntent(query: string, nowMs: number): TemporalIntent {
  const window = namedWindow(query, nowMs);
  if (window) return window;
  for (const cue of EARLIEST_CUES) {
    const m = cue.exec(query);
    if (m) return { kind: 'earliest', cue: m[0].trim() };
  }
  for (const cue of RECENT_CUES) {
    const m = cue.exec(query);
    if (m) return { kind: 'recent', cue: m[0].trim().replace(/[?.!\s]+$/, '') };
  }
  return NO_TEMPORAL_INTENT;
}

let parserWarm = false;

/**
 * Pays chrono's one-time costs on this thread now: ~25–80 ms on its first parse and ~125–300 ms on its
 * second, when V8 compiles its large regular expressions to native code (regexp tier-up), then 0.2 ms a
 * parse. A long-lived engine calls it while it opens, so a server's first dated questions do not pay it.
 * Later calls return at once.
 */
export function warmTemporalParser(): void {
  if (parserWarm) return;
  for (let i = 0; i < 2; i++) namedWindow('on 3 May 2023 at 5pm, last week or next Friday', Date.now());
  parserWarm = true;
}

/** Whether this thread has paid chrono's one-time costs (see warmTemporalParser). */
export function temporalParserWarm(): boolean {
  return parserWarm;
}

function namedWindow(query: string, nowMs: number): TemporalIntent | null {
  let parsed: ParsedResult[] = [];
  try {
    if (MAY_NAME_A_TIME.test(query)) parsed = chronoEn().parse(query, new Date(nowMs));
  } catch {
    // chrono has no documented failure, but a query is arbitrary text: no window rather than a failed search.
    parsed = [];
  }
  // A date that names its year outranks a relative phrase beside it: in "last weekend before April 10,
  // 2023" the date is the anchor.
  const namesYear = (r: ParsedResult) => /\b(19|20)\d{2}\b/.test(r.text);
  parsed.sort((x, y) => Number(namesYear(y)) - Number(namesYear(x)) || x.index - y.index);
  for (const r of parsed) {
    const text = r.text.toLowerCase();
    if (/^(right )?now$/.test(text)) continue; // a recency cue, not a window
    const s = r.start;
    // A clock time alone ("at 5 pm") names no day worth a window.
    if (!s.isCertain('day') && !s.isCertain('month') && !s.isCertain('weekday')) continue;
    const startMs = s.date().getTime();
    let since: number;
    let until: number;
    if (r.end) {
      since = startOfUtcDay(startMs);
      until = startOfUtcDay(r.end.date().getTime()) + MS_PER_DAY;
    } else if (/\bweek(end)?s?\b/.test(text)) {
      since = startOfUtcDay(startMs);
      until = since + 7 * MS_PER_DAY;
    } else if (/\bmonths?\b/.test(text) || (s.isCertain('month') && !s.isCertain('day'))) {
      since = addUtcMonths(startMs, 0);
      until = addUtcMonths(startMs, 1);
    } else if (/\byears?\b/.test(text)) {
      const y = new Date(startMs).getUTCFullYear();
      since = Date.UTC(y, 0, 1);
      until = Date.UTC(y + 1, 0, 1);
    } else {
      since = startOfUtcDay(startMs);
      until = since + MS_PER_DAY;
    }
    // "before <date>" / "after <date>": the week on that side of it.
    const before = query.slice(0, r.index).toLowerCase();
    if (/\b(before|until|prior to)\s*$/.test(before)) {
      until = since;
      since = until - 7 * MS_PER_DAY;
    } else if (/\b(after|since)\s*$/.test(before)) {
      since = until;
      until = since + 7 * MS_PER_DAY;
    }
    if (!s.isCertain('year') && since > nowMs) continue;
    return { kind: 'window', cue: r.text, since, until };
  }
  const y = YEAR_PHRASE.exec(query);
  if (y) {
    const year = Number(y[1]);
    return { kind: 'window', cue: y[0], since: Date.UTC(year, 0, 1), until: Date.UTC(year + 1, 0, 1) };
  }
  return null;
}

/**
 * The query without its temporal cue: what it asks about, not when. The relevance signal, the close calls
 * and a reranker judge these words; the legs search them for a recency cue ("current", "now",
 * "originally"), which left in would match memories that merely use the word, but the whole query for a
 * named time (recency-plan.ts, queriesOf, says why). A query that would be left with nothing to search for
 * ("what's the latest?") keeps its cue.
 */
export function withoutTemporalCue(query: string, intent: TemporalIntent): string {
  if (intent.kind === 'none') return query;
  const at = query.toLowerCase().indexOf(intent.cue.toLowerCase());
  if (at < 0) return query;
  const rest = `${query.slice(0, at)} ${query.slice(at + intent.cue.length)}`.replace(/\s+/g, ' ').trim();
  return tokenize(rest).some((w) => !isQueryStopWord(w)) ? rest : query;
}
