import { readFileSync } from 'node:fs';

/** One LoCoMo turn, as ingested: id = dia_id, session = session_N, agent = the speaker, ts = the session's date. */
export interface LocomoTurn {
  id: string;
  namespace: string;
  kind: 'turn';
  session: string;
  /** The speaker, as the shared scorer (../shared/eval/locomo-cli.mjs) ingests it. */
  agent: string;
  ts: number;
  text: string;
}

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
  qa: Array<{ question: string; evidence?: string[]; category: number }>;
}

/** Loads the LoCoMo file, surviving its known quirks (missing sessions, joined or dangling evidence ids). */
export function loadLocomo(path: string): LocomoSet {
  const samples = JSON.parse(readFileSync(path, 'utf8')) as RawSample[];
  const turns: LocomoTurn[] = [];
  const questions: LocomoQuestion[] = [];
  const lastSessionTs = new Map<string, number>();
  for (const s of samples) {
    const namespace = `locomo/${s.sample_id}`;
    const known = new Set<string>();
    for (const [key, value] of Object.entries(s.conversation)) {
      const sm = /^session_(\d+)$/.exec(key);
      if (!sm || !Array.isArray(value)) continue;
      const dateStr = s.conversation[`${key}_date_time`];
      if (typeof dateStr !== 'string') continue;
      const base = parseLocomoDate(dateStr);
      lastSessionTs.set(namespace, Math.max(lastSessionTs.get(namespace) ?? 0, base));
      value.forEach(
        (t: { speaker: string; dia_id: string; text: string; blip_caption?: string }, i: number) => {
          const caption = t.blip_caption ? ` [shared an image: ${t.blip_caption}]` : '';
          known.add(t.dia_id);
          // Turns of a session keep their order: one second apart from the session's start.
          turns.push({
            id: t.dia_id,
            namespace,
            kind: 'turn',
            session: key,
            agent: t.speaker,
            ts: base + i * 1000,
            text: `${t.speaker}: ${t.text}${caption}`,
          });
        },
      );
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
