import { STOP_WORDS } from '@cairn/core';

/**
 * The reference baseline of shared/eval/README.md: plain Okapi BM25 over whole turns, stop words removed,
 * k1 = 1.2, b = 0.75, lower-cased alphanumeric tokens, no stemming. Deliberately independent of Cairn's
 * own lexical leg, so the comparison is against the textbook method.
 */
export class ReferenceBm25 {
  private readonly docs: Array<{ id: string; tf: Map<string, number>; len: number }> = [];
  private readonly df = new Map<string, number>();
  private avgLen = 0;

  constructor(
    docs: ReadonlyArray<{ id: string; text: string }>,
    private readonly k1 = 1.2,
    private readonly b = 0.75,
  ) {
    for (const d of docs) {
      const toks = ReferenceBm25.tokens(d.text);
      const tf = new Map<string, number>();
      for (const t of toks) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const t of tf.keys()) this.df.set(t, (this.df.get(t) ?? 0) + 1);
      this.docs.push({ id: d.id, tf, len: toks.length });
    }
    this.avgLen = this.docs.reduce((s, d) => s + d.len, 0) / Math.max(1, this.docs.length);
  }

  static tokens(text: string): string[] {
    return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((t) => !STOP_WORDS.has(t));
  }

  search(query: string, k: number): string[] {
    const n = this.docs.length;
    const q = [...new Set(ReferenceBm25.tokens(query))];
    const scored: Array<{ id: string; s: number }> = [];
    for (const d of this.docs) {
      let s = 0;
      for (const t of q) {
        const f = d.tf.get(t);
        if (!f) continue;
        const df = this.df.get(t)!;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        s += (idf * f * (this.k1 + 1)) / (f + this.k1 * (1 - this.b + (this.b * d.len) / this.avgLen));
      }
      if (s > 0) scored.push({ id: d.id, s });
    }
    return scored
      .sort((a, b) => b.s - a.s)
      .slice(0, k)
      .map((x) => x.id);
  }
}
