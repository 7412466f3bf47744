import type { KeyedMemory, SearchHit } from '@cairn/core';
import type { Headed } from './index-entry.js';
import { countTokens } from './token-counter.js';

export interface ContextPackInput {
  namespace: string;
  query: string | null;
  /** Newest first. */
  summaries: readonly KeyedMemory[];
  /** Best first. */
  relevant: readonly SearchHit[];
  format: 'markdown' | 'text';
  maxTokens: number;
}

interface Section {
  heading: string;
  items: Array<{ m: Headed; line: string }>;
}

/** Exact attempts to fit items the estimate turned away. */
const TOP_UP_TRIES = 8;

const day = (ts: number) => new Date(ts).toISOString().slice(0, 10);

/**
 * A session-start pack: the latest session summaries, then the memories most relevant to the query,
 * grouped by session, in priority order until the budget is spent. An item that does not fit is left
 * out whole (a smaller one after it may still fit); the rendered text is counted exactly at the end.
 */
export function buildContextPack(input: ContextPackInput): {
  text: string;
  included: string[];
  tokens: number;
  omitted: number;
} {
  const md = input.format === 'markdown';
  const candidates: Array<{ group: 'summary' | 'relevant'; m: Headed }> = [
    ...input.summaries.map((m) => ({ group: 'summary' as const, m })),
    ...input.relevant.map((m) => ({ group: 'relevant' as const, m })),
  ];
  const render = (items: typeof candidates) => renderPack(input, items, md);
  // Each item is tokenised once, rendered alone (with the headings it would bring) minus the pack's title
  // line: choosing is linear in the candidates, and the estimate errs high (a heading shared by several
  // items is counted for each), so the pack rarely needs trimming.
  const title = countTokens(`${md ? '# ' : ''}Memory context: ${input.namespace}\n`);
  const order = new Map(candidates.map((c, i) => [c, i]));
  let chosen: typeof candidates = [];
  const left: typeof candidates = [];
  let estimate = title;
  for (const c of candidates) {
    const cost = countTokens(render([c])) - title;
    if (estimate + cost <= input.maxTokens) {
      chosen.push(c);
      estimate += cost;
    } else left.push(c);
  }
  // The exact count decides: drop the last choices while the rendered pack is over budget…
  let text = render(chosen);
  let tokens = countTokens(text);
  while (tokens > input.maxTokens && chosen.length > 0) {
    left.unshift(chosen.pop()!);
    text = render(chosen);
    tokens = countTokens(text);
  }
  // …and spend what the high estimate left over on a few of the items it turned away, counted exactly.
  for (const c of left.slice(0, TOP_UP_TRIES)) {
    const next = [...chosen, c].sort((a, b) => order.get(a)! - order.get(b)!);
    const t = render(next);
    const n = countTokens(t);
    if (n <= input.maxTokens) {
      chosen = next;
      text = t;
      tokens = n;
    }
  }
  const omitted = candidates.length - chosen.length;
  return { text, included: chosen.map((c) => c.m.id), tokens, omitted };
}

function renderPack(
  input: ContextPackInput,
  items: Array<{ group: 'summary' | 'relevant'; m: Headed }>,
  md: boolean,
): string {
  if (items.length === 0) return '';
  const h = (level: number, s: string) => (md ? `${'#'.repeat(level)} ${s}` : s.toUpperCase());
  const out: string[] = [h(1, `Memory context: ${input.namespace}`)];
  const summaries = items.filter((i) => i.group === 'summary');
  if (summaries.length) {
    out.push('', h(2, 'Recent session summaries'));
    for (const { m } of summaries) {
      out.push(
        '',
        md
          ? `### ${m.session ? `Session ${m.session}` : m.id} (${day(m.ts)})`
          : `[${m.session ?? m.id}, ${day(m.ts)}]`,
      );
      if (m.title) out.push(md ? `**${m.title}**` : m.title);
      out.push(m.text);
    }
  }
  const relevant = items.filter((i) => i.group === 'relevant');
  if (relevant.length) {
    out.push('', h(2, input.query ? `Relevant to "${input.query}"` : 'Relevant memories'));
    const sections: Section[] = [];
    const bySession = new Map<string, Section>();
    for (const { m } of relevant) {
      const key = m.session ?? '';
      let s = bySession.get(key);
      if (!s) {
        s = { heading: m.session ? `Session ${m.session}` : 'No session', items: [] };
        bySession.set(key, s);
        sections.push(s);
      }
      const body = m.title ? `${m.title}: ${m.text}` : m.text;
      s.items.push({
        m,
        line: `${md ? '- ' : '* '}[${m.id}] ${day(m.ts)} ${m.kind}: ${body.replace(/\s*\n\s*/g, ' ')}`,
      });
    }
    for (const s of sections) {
      out.push('', md ? `### ${s.heading}` : `[${s.heading}]`);
      for (const it of s.items) out.push(it.line);
    }
  }
  return `${out.join('\n')}\n`;
}
