import type Database from 'better-sqlite3';
import type { WriteStatus } from './write-result.js';

/**
 * How long a receipt is kept: far longer than a capture job's own retries (12 attempts, 30 s apart at most)
 * or a worker restart. A dead-lettered job retried later than this (`cairn dead-letters --retry`) is
 * written again as a new write: it could put back older values.
 */
export const WRITE_RECEIPT_TTL_MS = 7 * 24 * 3_600_000;

const CODE: Readonly<Record<WriteStatus, string>> = { stored: 's', updated: 'u', unchanged: 'n' };
const STATUS: Readonly<Record<string, WriteStatus>> = { s: 'stored', u: 'updated', n: 'unchanged' };

/**
 * What a queued batch's write did, recorded in the write's own transaction under the job's name. A job
 * retried after its worker died between the commit and the acknowledgement (kill -9, a lost Redis
 * connection) finds its receipt and writes nothing: it reports what the first attempt stored, instead of
 * counting its own memories as `unchanged`, and it cannot put back an older text over a write made since.
 */
export class WriteReceipts {
  private readonly select: Database.Statement<[string], string>;
  private readonly insert: Database.Statement<[string, string, number]>;
  private readonly prune: Database.Statement<[number]>;
  private recorded = 0;

  constructor(db: Database.Database) {
    this.select = db.prepare<[string], string>('SELECT statuses FROM write_receipts WHERE id = ?').pluck();
    this.insert = db.prepare<[string, string, number]>(
      'INSERT OR REPLACE INTO write_receipts (id, statuses, at) VALUES (?, ?, ?)',
    );
    this.prune = db.prepare<[number]>('DELETE FROM write_receipts WHERE at < ?');
  }

  /** The statuses recorded under `id`, one per memory of its batch; null when there is none. */
  find(id: string): WriteStatus[] | null {
    const codes = this.select.get(id);
    return codes === undefined ? null : Array.from(codes, (c) => STATUS[c]!);
  }

  /** Records a batch's statuses; call inside the write's transaction. Expired receipts go now and then. */
  record(id: string, statuses: readonly WriteStatus[], now: number): void {
    // An index range (see migration 23), every 256th batch.
    if (this.recorded++ % 256 === 0) this.prune.run(now - WRITE_RECEIPT_TTL_MS);
    this.insert.run(id, statuses.map((s) => CODE[s]).join(''), now);
  }
}
