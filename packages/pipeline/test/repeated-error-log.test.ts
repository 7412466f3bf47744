import { describe, expect, it } from 'vitest';
import { RepeatedErrorLog } from '../src/distributed/repeated-error-log.js';

describe('RepeatedErrorLog', () => {
  it('logs an error once, then once per period with how many it held back; another error at once', () => {
    const lines: Array<[string, string, Record<string, unknown> | undefined]> = [];
    let now = 1_000;
    const log = new RepeatedErrorLog(
      (level, msg, data) => lines.push([level, msg, data]),
      10_000,
      () => now,
    );
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:6390');
    for (let i = 0; i <= 200; i++) {
      log.error('capture worker error', refused);
      now += 50; // 20 a second, as BullMQ raised them with Redis down
    }
    log.error('index-0 worker error', refused);
    log.error('capture worker error', new Error('Connection is closed.'));
    expect(lines).toEqual([
      ['error', 'capture worker error', { error: refused.message }],
      ['error', 'capture worker error', { error: refused.message, repeated: 199, sinceMs: 10_000 }],
      ['error', 'index-0 worker error', { error: refused.message }],
      ['error', 'capture worker error', { error: 'Connection is closed.' }],
    ]);
  });

  it('remembers a bounded number of distinct errors', () => {
    let n = 0;
    const log = new RepeatedErrorLog(
      () => n++,
      10_000,
      () => 0,
    );
    for (let i = 0; i < 1_000; i++) log.error('worker error', new Error(`error ${i}`));
    expect(n).toBe(1_000);
    // The most recent are still held back; the first, long forgotten, is logged again.
    log.error('worker error', new Error('error 999'));
    expect(n).toBe(1_000);
    log.error('worker error', new Error('error 0'));
    expect(n).toBe(1_001);
  });
});
