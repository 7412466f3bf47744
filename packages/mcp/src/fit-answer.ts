import { CairnError } from '@cairn/core';
import { countTokensUncached } from '@cairn/service';

/** A tool's text, and its size in tokens (o200k), which the text itself states where it reports usage. */
export interface Fitted {
  /** How many of the entries the text holds. */
  n: number;
  text: string;
  used: number;
}

/**
 * Renders with `used` = the rendered text's own size. The size is written into the text, so it is counted
 * again until the two agree: a number's digits are one o200k token per three, so this settles in one or
 * two rounds (a bounded loop, in case it ever does not).
 */
export function settle(render: (used: number) => string, start = 0): { text: string; used: number } {
  let used = start;
  let text = render(used);
  let size = countTokensUncached(text);
  for (let round = 0; size !== used && round < 4; round++) {
    used = size;
    text = render(used);
    size = countTokensUncached(text);
  }
  return { text, used: size };
}

/**
 * The whole text a tool returns, within `budget` tokens: what reaches the model is the text, headers,
 * notes and footers included, so that is what is counted, not only the entries the backend budgeted.
 * `render(n, used)` is the text with the first `n` of `total` entries (in the order they are given up
 * from the end: the least wanted last) stating `used` as its size. The most entries that fit are kept;
 * when even none do (the header alone is over), the call is refused with INVALID_INPUT naming max_tokens
 * and the least that would do, rather than answered over budget. Without a budget every entry is kept.
 *
 * @param shortest what the text with no entries holds, for that error: "its header"
 */
export function fitAnswer(
  total: number,
  render: (n: number, used: number) => string,
  budget: number | undefined,
  shortest: string,
): Fitted {
  if (budget === undefined) return { n: total, ...settle((used) => render(total, used)) };
  // Stating the budget itself is the widest the stated size can be, so a text that fits with it fits
  // with its own size too (checked once settled all the same).
  const fits = (n: number) => countTokensUncached(render(n, budget)) <= budget;
  const tooSmall = () => {
    const least = settle((used) => render(0, used)).used;
    return new CairnError(
      'INVALID_INPUT',
      `max_tokens ${budget} cannot hold even the shortest answer, ${shortest} (${least} tokens); give max_tokens of at least ${least}`,
      { field: 'max_tokens', needed: least },
    );
  };
  let n = total;
  if (!fits(n)) {
    if (!fits(0)) throw tooSmall();
    // The largest n that fits: the text grows with n, so halving finds it in log2(total) counts.
    let lo = 0;
    let hi = total;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (fits(mid)) lo = mid;
      else hi = mid;
    }
    n = lo;
  }
  for (; n >= 0; n--) {
    const s = settle((used) => render(n, used), budget);
    if (s.used <= budget) return { n, ...s };
  }
  throw tooSmall();
}
