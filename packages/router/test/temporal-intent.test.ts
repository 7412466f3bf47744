import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MS_PER_DAY } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { detectTemporalIntent, queriesOf, withoutTemporalCue } from '../src/index.js';

const now = Date.UTC(2026, 10, 24, 12); // Tuesday 24 November 2026, 12:00 UTC
const day = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d);

describe('detectTemporalIntent', () => {
  it.each([
    ["What's our current deploy target?", 'current'],
    ['What is the deploy target now?', 'now'],
    ['Which ORM are we using these days?', 'these days'],
    ['what is the latest on the billing migration', 'latest'],
    ['Do we still deploy to fly.io?', 'still'],
    ['what did we decide last?', 'last'],
    ['What happened the last time the queue backed up?', 'the last time'],
    ['Is Priya on call right now?', 'right now'],
  ])('%s → recent (%s)', (query, cue) => {
    expect(detectTemporalIntent(query, now)).toEqual({ kind: 'recent', cue });
  });

  it.each([
    ['Why did we originally pick fly.io?', 'originally'],
    ['What was the first decision on the CI provider?', 'first'],
    ['Which database did we use at first?', 'at first'],
    ['What did we previously use for email?', 'previously'],
  ])('%s → earliest (%s)', (query, cue) => {
    expect(detectTemporalIntent(query, now)).toEqual({ kind: 'earliest', cue });
  });

  it.each([
    ['what did we ship yesterday?', day(2026, 11, 23), day(2026, 11, 24)],
    ['what did we decide last week', day(2026, 11, 17), day(2026, 11, 24)],
    ['the outage on 3 June, 2023', day(2023, 6, 3), day(2023, 6, 4)],
    ['What did Joanna watch on February 7, 2022?', day(2022, 2, 7), day(2022, 2, 8)],
    ['what changed in May 2024', day(2024, 5, 1), day(2024, 6, 1)],
    ['incidents during 2025', day(2025, 1, 1), day(2026, 1, 1)],
    ['the 2024-03-01 outage', day(2024, 3, 1), day(2024, 3, 2)],
    ['what did we do last weekend before April 10, 2023?', day(2023, 4, 3), day(2023, 4, 10)],
    // Chrono is asked only when a query may name a time (MAY_NAME_A_TIME): these phrasings must pass that test.
    ['what broke the day before yesterday', day(2026, 11, 22), day(2026, 11, 23)],
    ['what did we merge three days ago', day(2026, 11, 21), day(2026, 11, 22)],
    ['the review on sept 3', day(2026, 9, 3), day(2026, 9, 4)],
    ['standup notes from last month', day(2026, 10, 1), day(2026, 11, 1)],
    ['what did we ship two hours ago', day(2026, 11, 24), day(2026, 11, 25)],
  ])('%s → a window', (query, since, until) => {
    const intent = detectTemporalIntent(query, now);
    expect(intent).toMatchObject({ kind: 'window', since, until });
  });

  it('prefers a named time over a recency cue', () => {
    expect(detectTemporalIntent('what is the latest from last week?', now).kind).toBe('window');
  });

  it.each([
    'why did the auth middleware crash?',
    'What did Melanie paint recently?', // narration, not a request for the newest
    'what may cause the crash',
    'error 2024 in the parser',
    'the last name field is truncated',
    'at 5 pm the build broke',
    'Which deploy target do we use?',
    '',
    '!!!',
  ])('falls back to none for %j', (query) => {
    expect(detectTemporalIntent(query, now)).toEqual({ kind: 'none' });
  });

  it('ignores a date that would lie wholly in the future when the year was only guessed', () => {
    expect(detectTemporalIntent('the March release notes', Date.UTC(2026, 10, 24)).kind).toBe('none');
  });

  it('windows are whole UTC days', () => {
    const intent = detectTemporalIntent('what did we do today', now);
    expect(intent).toMatchObject({
      kind: 'window',
      since: day(2026, 11, 24),
      until: day(2026, 11, 24) + MS_PER_DAY,
    });
  });
});

describe('the date parser', () => {
  it('is loaded by the first query that may name a time, not before', () => {
    // A process of its own: this file's tests have loaded it already, and the built router is what a
    // one-shot command imports.
    const router = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      import { createRequire } from 'node:module';
      import { detectTemporalIntent } from ${JSON.stringify(router)};
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('chrono-node'));
      const before = loaded();
      const plain = detectTemporalIntent('which database does the billing service use?', Date.now());
      const afterPlain = loaded();
      const dated = detectTemporalIntent('what did we deploy yesterday?', Date.now());
      console.log(JSON.stringify({ before, afterPlain, plain: plain.kind, dated: dated.kind, after: loaded() }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      before: false,
      afterPlain: false,
      plain: 'none',
      dated: 'window',
      after: true,
    });
  });
});

describe('withoutTemporalCue', () => {
  it('takes the cue out of the query the legs see', () => {
    const q = "What's our current deploy target?";
    expect(withoutTemporalCue(q, detectTemporalIntent(q, now))).toBe("What's our deploy target?");
    const w = 'what did we decide last week about Redis';
    expect(withoutTemporalCue(w, detectTemporalIntent(w, now))).toBe('what did we decide about Redis');
  });

  it('keeps a query that would be left with no word, and leaves queries without intent alone', () => {
    expect(withoutTemporalCue('now', { kind: 'recent', cue: 'now' })).toBe('now');
    expect(withoutTemporalCue("what's the latest?", { kind: 'recent', cue: 'latest' })).toBe(
      "what's the latest?",
    );
    expect(withoutTemporalCue('why did it crash', { kind: 'none' })).toBe('why did it crash');
  });
});

describe('queriesOf', () => {
  it("searches a named time's words but judges relevance by the topic; a recency cue leaves both", () => {
    const w = 'What event did John volunteer at last weekend?';
    expect(queriesOf(w, detectTemporalIntent(w, now))).toEqual({
      topicQuery: 'What event did John volunteer at ?',
      legQuery: w,
    });
    const q = "What's our current deploy target?";
    expect(queriesOf(q, detectTemporalIntent(q, now))).toEqual({
      topicQuery: "What's our deploy target?",
      legQuery: "What's our deploy target?",
    });
  });
});
