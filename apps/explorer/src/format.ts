// Number and date formatting shared by the views; the user's locale, no library.

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });

export const fmtInt = (n: number): string => integer.format(n);

/** Scores and RRF terms are small (≈ 0.01–0.1): four significant digits keep them comparable. */
export function fmtScore(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n === 0) return '0';
  return Math.abs(n) >= 1000 ? fmtInt(n) : n.toPrecision(4);
}

/** A multiplier as "×0.973". */
export const fmtFactor = (n: number): string => `×${n.toFixed(3)}`;

export function fmtDate(isoOrMs: string | number): string {
  const d = new Date(isoOrMs);
  if (Number.isNaN(d.getTime())) return String(isoOrMs);
  // ISO-like and sortable, in UTC like the API's dates, so what is shown matches what a filter takes.
  return `${d.toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

export function fmtMs(seconds: number): string {
  const ms = seconds * 1000;
  return ms < 10 ? `${ms.toFixed(2)} ms` : ms < 100 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}
