import { readFileSync } from 'node:fs';

/**
 * One LoCoMo turn, as ingested exactly as the shared scorer (../shared/eval/locomo-cli.mjs) does: id = dia_id,
 * session = session_N, agent = the speaker, ts = the session's date (every turn of a session shares it),
 * text = "<speaker>: <text>" plus " [shares <caption>]" for a shared image.
 */
export interface LocomoTurn {
  id: string;
  namespace: string;
  kind: 'turn';
  session: string;
  /** The speaker, as the shared scorer (../shared/eval/locomo-cli.mjs) ingests it. */
  agent: string;
  ts: number;
  text: string;
  /** Named fields (multi-route recall), with `loadLocomo`'s `fields` option. */
  fields?: Record<string, string>;
}

/**
 * Named fields a turn can be given, for the multi-route ablation (the shared scorer ingests none):
 * - `facts`: LoCoMo's session observations whose evidence is this turn (LLM-written facts, as mem0 extracts);
 * - `next`: the next turn of the session (what answered or followed it);
 * - `previous`: the turn before it.
 */
export type LocomoField = 'facts' | 'next' | 'previous';

export interface LocomoQuestion {
  namespace: string;
  question: string;
  evidence: string[];
  category: number;
}

export interface LocomoSet {
  turns: LocomoTurn[];
  questions: LocomoQuestion[];
  /** Per namespace: the last session's time, when every question is asked. */
  lastSessionTs: Map<string, number>;
}

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

/** "1:56 pm on 8 May, 2023" → epoch ms (UTC). */
export function parseLocomoDate(s: string): number {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(s);
  if (!m) throw new Error(`unparseable LoCoMo date: ${s}`);
  let hour = Number(m[1]) % 12;
  if (m[3]!.toLowerCase() === 'pm') hour += 12;
  const month = MONTHS.indexOf(m[5]!.toLowerCase());
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]));
}

interface RawSample {
  sample_id: string;
  conversation: Record<string, unknown>;
  observation?: Record<string, Record<string, Array<[string, string | string[]]>>>;
  qa: Array<{ question: string; evidence?: string[]; category: number }>;
}

/** Loads the LoCoMo file, surviving its known quirks (missing sessions, joined or dangling evidence ids). */
export function loadLocomo(path: string, fields: readonly LocomoField[] = []): LocomoSet {
  const samples = JSON.parse(readFileSync(path, 'utf8')) as RawSample[];
  const turns: LocomoTurn[] = [];
  const questions: LocomoQuestion[] = [];
  const lastSessionTs = new Map<string, number>();
  for (const s of samples) {
    const namespace = `locomo/${s.sample_id}`;
    const known = new Set<string>();
    const facts = new Map<string, string[]>();
    for (const session of Object.values(s.observation ?? {})) {
      for (const list of Object.values(session)) {
        for (const [fact, ev] of list) {
          for (const id of (Array.isArray(ev) ? ev : [ev]).flatMap((e) => String(e).split(/[;,\s]+/))) {
            if (!facts.has(id)) facts.set(id, []);
            facts.get(id)!.push(fact);
          }
        }
      }
    }
    for (const [key, value] of Object.entries(s.conversation)) {
      const sm = /^session_(\d+)$/.exec(key);
      if (!sm || !Array.isArray(value)) continue;
      const dateStr = s.conversation[`${key}_date_time`];
      if (typeof dateStr !== 'string') continue;
      const base = parseLocomoDate(dateStr);
      lastSessionTs.set(namespace, Math.max(lastSessionTs.get(namespace) ?? 0, base));
      type RawTurn = { speaker: string; dia_id: string; text: string; blip_caption?: string };
      const said = (t: RawTurn) =>
        `${t.speaker}: ${t.text}${t.blip_caption ? ` [shares ${t.blip_caption}]` : ''}`;
      value.forEach((t: RawTurn, i: number, all: RawTurn[]) => {
        known.add(t.dia_id);
        const f: Record<string, string> = {};
        if (fields.includes('facts') && facts.has(t.dia_id)) f.facts = facts.get(t.dia_id)!.join(' ');
        if (fields.includes('next') && all[i + 1]) f.next = said(all[i + 1]!);
        if (fields.includes('previous') && all[i - 1]) f.previous = said(all[i - 1]!);
        // Every turn of a session has the session's date, as the shared scorer ingests them; their order is
        // the order they are stored in.
        turns.push({
          id: t.dia_id,
          namespace,
          kind: 'turn',
          session: key,
          agent: t.speaker,
          ts: base,
          text: said(t),
          ...(Object.keys(f).length > 0 ? { fields: f } : {}),
        });
      });
    }
    for (const q of s.qa) {
      const evidence = (q.evidence ?? []).flatMap((e) => e.split(/[;\s]+/)).filter((e) => known.has(e));
      if (q.category >= 1 && q.category <= 4 && evidence.length > 0) {
        questions.push({ namespace, question: q.question, evidence, category: q.category });
      }
    }
  }
  return { turns, questions, lastSessionTs };
}
